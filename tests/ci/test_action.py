"""The composite action (action.yml): its inputs reach its script, and the script, run
here as the runner would run it, posts the job summary and gates the run.

``GITHUB_STEP_SUMMARY`` and ``GITHUB_OUTPUT`` point at files of the test; nothing is
installed (``install: none``): the script runs this checkout's ``arbiter``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.mcp.quiz import write_quiz

REPO = Path(__file__).resolve().parents[2]
ACTION = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
SCRIPT = REPO / "scripts" / "arbiter_action.sh"


def test_the_action_runs_its_script_with_every_input() -> None:
    assert ACTION["runs"]["using"] == "composite"
    [setup, step] = ACTION["runs"]["steps"]
    assert setup["uses"].startswith("actions/setup-python@")
    assert step["run"] == 'bash "$GITHUB_ACTION_PATH/scripts/arbiter_action.sh"'
    given = {
        re.fullmatch(r"\$\{\{ inputs\.([a-z-]+) \}\}", value)[1]  # type: ignore[index]
        for value in step["env"].values()
        if value.startswith("${{ inputs.")
    }
    assert given == set(ACTION["inputs"]) - {"python-version"}
    assert ACTION["inputs"]["eval-file"]["required"] is True
    read = set(re.findall(r"\$\{?(ARBITER_[A-Z_]+)", SCRIPT.read_text(encoding="utf-8")))
    assert set(step["env"]) <= read
    assert ACTION["outputs"]["run-id"]["value"] == "${{ steps.arbiter.outputs.run-id }}"


def run_action(folder: Path, eval_file: Path) -> tuple[subprocess.CompletedProcess[str], str, str]:
    summary, outputs = folder / "summary.md", folder / "outputs"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("ARBITER_", "GITHUB_"))},
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "ARBITER_HOME": str(folder / "home"),
        "ARBITER_EVAL_FILE": str(eval_file),
        "ARBITER_INSTALL": "none",
        "ARBITER_GATE_ARGS": "",
        "ARBITER_SERVER_URL": "",
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_OUTPUT": str(outputs),
    }
    done = subprocess.run(
        ["bash", str(SCRIPT)], env=env, cwd=folder, capture_output=True, text=True, timeout=300
    )
    read = summary.read_text(encoding="utf-8") if summary.exists() else ""
    return done, read, outputs.read_text(encoding="utf-8") if outputs.exists() else ""


@pytest.mark.parametrize(
    ("system", "code", "headline"),
    [("good", 0, "## ✅ Arbiter — quiz"), ("worse", 1, "## ❌ Arbiter — quiz")],
)
def test_the_script_posts_the_summary_and_exits_with_the_gate(
    tmp_path: Path, system: str, code: int, headline: str
) -> None:
    files = write_quiz(tmp_path)
    done, summary, outputs = run_action(tmp_path, files[system])
    assert done.returncode == code, done.stderr
    assert summary.startswith(headline + "\n")
    [run_id] = re.findall(r"^run-id=(\S+)$", outputs, flags=re.M)
    assert f"run `{run_id}`" in summary
    errors = [line for line in done.stdout.splitlines() if line.startswith("::error ")]
    if code:
        assert "**Gate: failed**" in summary
        assert errors == [
            "::error title=Arbiter gate%3A quiz::accuracy 0.500 is below the floor 0.750 "
            "(95%25 CI 0.215–0.785, n=8)"
        ]
    else:
        assert "**Gate: passed**" in summary
        assert errors == []


def test_the_example_workflow_gives_the_action_only_inputs_it_has() -> None:
    workflow = yaml.safe_load(
        (REPO / "docs" / "examples" / "github-workflow.yml").read_text(encoding="utf-8")
    )
    steps = workflow["jobs"]["evaluate"]["steps"]
    [uses] = [step for step in steps if step.get("uses") == "./"]
    assert set(uses["with"]) <= set(ACTION["inputs"])
    assert (REPO / uses["with"]["eval-file"]).is_file()
