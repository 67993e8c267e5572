#!/usr/bin/env bash
# The script of Arbiter's GitHub composite action (action.yml): install Arbiter, run an
# eval file, post the job summary with annotations, and gate the run.
#
# Read from the environment (the action sets them from its inputs):
#   ARBITER_EVAL_FILE  the eval file to run (required)
#   ARBITER_INSTALL    what pip installs (a path, a git URL, a version); empty: the
#                      Arbiter the action comes with (ARBITER_ACTION_PATH); "none": nothing
#   ARBITER_GATE_ARGS  more floors for `arbiter gate RUN ...` (e.g. "--min-pass-k 0.8")
#   ARBITER_BIN        the arbiter command (default: arbiter on the PATH)
# and, as every Arbiter command does, ARBITER_DB_URL / ARBITER_HOME (where runs are
# stored) and ARBITER_SERVER_URL (links in the summary). GITHUB_STEP_SUMMARY receives
# the summary, GITHUB_OUTPUT the run id (run-id=...).
#
# Exit code: that of the run (1 when its eval file's [gate] failed, 3 on invalid input),
# else that of the extra gate; the summary is posted whenever a run was stored.
set -uo pipefail

if [ -z "${ARBITER_EVAL_FILE:-}" ]; then
  echo "::error title=Arbiter::the action needs the eval-file input" >&2
  exit 3
fi
install=${ARBITER_INSTALL:-${ARBITER_ACTION_PATH:-}}
if [ -n "$install" ] && [ "$install" != none ]; then
  python -m pip install --quiet "$install" || exit 1
fi
if [ -z "${ARBITER_SERVER_URL:-}" ]; then
  unset ARBITER_SERVER_URL  # an empty value is not a URL: no links
fi
arbiter=${ARBITER_BIN:-arbiter}

report_json=$(mktemp)
trap 'rm -f "$report_json"' EXIT
"$arbiter" run -q --json "$ARBITER_EVAL_FILE" >"$report_json"
status=$?

run_id=$(python3 -c 'import json, sys
try:
    print(json.load(open(sys.argv[1])).get("run_id") or "")
except ValueError:
    print("")' "$report_json")
if [ -z "$run_id" ]; then
  exit "$status"  # nothing was stored: the command said why on stderr
fi
if [ -n "${GITHUB_OUTPUT:-}" ]; then
  echo "run-id=$run_id" >>"$GITHUB_OUTPUT"
fi

if ! "$arbiter" report "$run_id" --format github && [ "$status" -eq 0 ]; then
  status=1
fi

if [ "$status" -eq 0 ] && [ -n "${ARBITER_GATE_ARGS:-}" ]; then
  # shellcheck disable=SC2086  # the floors are words on purpose
  "$arbiter" gate "$run_id" $ARBITER_GATE_ARGS
  status=$?
fi
exit "$status"
