"""A run for a GitHub Actions job: the step summary (Markdown) and workflow annotations.

The summary leads with the gate's decision, then the headline figures with their 95%
intervals and n, the regressions against the gate's baseline (with links to the compare
page when a server URL is known), and the failing examples folded in ``<details>``.
The annotations are workflow commands (``::error title=...::message``), one per gate
failure and one per warning, that GitHub shows on the run and the pull request.

Everything that came from a dataset, a system or a model is escaped for where it lands:
Markdown cells by :func:`arbiter.escape.markdown` (bare URLs included), workflow commands
by :func:`command_data` (``%``, carriage return and newline encoded as the runner reads
them, control characters shown as escapes), so no text can end a command or start one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import quote, urlencode

from arbiter import escape
from arbiter.contract import Example, Interval, PairResult, Report
from arbiter.harness.diff import RunDiff
from arbiter.harness.failures import find_failures
from arbiter.harness.figures import binary_valued, label_only, pct, scorer_figures
from arbiter.harness.formats import failures_markdown
from arbiter.harness.gate import GateResult

__all__ = ["GithubReport", "command_data", "command_property", "github_report"]

_FAILURES_LISTED = 50
"""Failing examples the folded section lists (worst first)."""
_FLIPS_LISTED = 30
"""Broken examples the regressions section lists."""
_COMMAND_CHARS = 2_000
"""Characters of untrusted text kept in one annotation."""


def command_data(text: object) -> str:
    """Text as the message of a workflow command: one line whatever it holds.

    ``%`` is written ``%25``, a carriage return ``%0D`` and a newline ``%0A`` (the
    runner decodes them back), and every other control character is shown as an escape
    (``\\x1b``), so the text neither ends the command nor starts another.
    """
    value = escape.clip(str(text), _COMMAND_CHARS)
    value = value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return escape.terminal(value)


def command_property(text: object) -> str:
    """Text as a property of a workflow command (``title=``): also ``:`` and ``,``."""
    return command_data(text).replace(":", "%3A").replace(",", "%2C")


@dataclass(frozen=True)
class GithubReport:
    """What a GitHub job shows of a run."""

    summary: str
    """The step summary, GitHub-flavoured Markdown (for ``$GITHUB_STEP_SUMMARY``)."""
    commands: list[str]
    """Workflow commands, one line each (``::error title=...::...``)."""


def _interval(interval: Interval) -> str:
    return f"{pct(interval.low)} – {pct(interval.high)}"


def _figure_rows(report: Report, results: Sequence[PairResult]) -> list[str]:
    md = escape.markdown
    only = label_only(report)
    first = (
        ("accuracy", report.strict.accuracy)
        if only and report.strict is not None
        else ("pass rate", report.accuracy)
    )
    rows = [
        "| figure | estimate | 95% interval | n |",
        "|---|---:|---:|---:|",
        f"| {first[0]} | {pct(first[1].estimate)} | {_interval(first[1])} | {first[1].n} |",
        f"| pass^{report.k} | {pct(report.pass_hat_k.estimate)} | "
        f"{_interval(report.pass_hat_k)} | {report.pass_hat_k.n} |",
        f"| mean pass@1 | {pct(report.pass_at_1.estimate)} | {_interval(report.pass_at_1)} | "
        f"{report.pass_at_1.n} |",
    ]
    if not only:
        binary = binary_valued(results) if results else None
        for figure in scorer_figures(report, binary=binary):
            section = report.sections.get(figure.name)
            rate = section.pass_rate if section is not None else None
            if rate is None:
                continue
            gates = "" if figure.gating else " (reported only)"
            rows.append(
                f"| {md(figure.name, limit=100)}{gates} | {pct(rate.estimate)} | "
                f"{_interval(rate)} | {rate.n} |"
            )
    errors = f"{pct(report.error_rate)}"
    if report.errors_by_type:
        errors += " (" + ", ".join(f"{md(k)} {v}" for k, v in report.errors_by_type.items()) + ")"
    rows.append(f"| failed calls | {errors} | | |")
    return rows


def _page(server_url: str | None, path: str, **query: str) -> str | None:
    if not server_url:
        return None
    where = f"{server_url.rstrip('/')}{path}"
    return f"{where}?{urlencode(query)}" if query else where


def _gate_lines(gate: GateResult | None, run: str) -> list[str]:
    md = escape.markdown
    if gate is None:
        return [
            "**Gate:** none (the run has no gate; gate it with "
            f"`arbiter gate {run} --min-accuracy 0.9` or an eval file's `[gate]`).",
            "",
        ]
    lines = [f"**Gate: {'passed' if gate.passed else 'failed'}**", ""]
    lines += [f"- {md(failure, limit=500)}" for failure in gate.failures]
    lines += [f"- warning: {md(warning, limit=500)}" for warning in gate.warnings]
    return [*lines, ""] if gate.failures or gate.warnings else lines


def _regression_lines(diff: RunDiff, server_url: str | None) -> list[str]:
    md = escape.markdown
    lines = [f"### Against baseline `{diff.run_a}`", ""]
    link = _page(server_url, "/compare", a=diff.run_a, b=diff.run_b)
    if link is not None:
        lines += [f"[Compare the runs in Arbiter]({link})", ""]
    if not diff.deltas:
        return [*lines, "No example was decided in both runs: nothing to compare.", ""]
    lines += [
        "| figure | baseline | this run | change | paired 95% interval | significant |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for d in diff.deltas:
        worse = d.high < 0
        better = d.low > 0
        verdict = "**worse**" if worse else ("better" if better else "no")
        lines.append(
            f"| {md(d.name)} | {pct(d.a)} | {pct(d.b)} | {100 * d.delta:+.1f} pts | "
            f"{100 * d.low:+.1f} to {100 * d.high:+.1f} | {verdict} |"
        )
    lines += [
        "",
        f"{len(diff.broken)} examples broke and {len(diff.fixed)} were fixed of "
        f"{diff.n_paired} paired (exact McNemar p = {diff.mcnemar_p:.3g}).",
        "",
    ]
    if diff.broken:
        run_page = _page(server_url, f"/runs/{quote(diff.run_b, safe='')}", show="failing")
        listed = diff.broken[:_FLIPS_LISTED]
        lines += [
            "<details><summary>Examples that broke</summary>",
            "",
            "| example | baseline answered | this run answered | why |",
            "|---|---|---|---|",
        ]
        for flip in listed:
            lines.append(
                f"| {md(flip.example_id, limit=120)} | {md(flip.answer_a or '', limit=120)} | "
                f"{md(flip.answer_b or '', limit=120)} | {md(flip.reason, limit=300)} |"
            )
        if len(diff.broken) > len(listed):
            more = len(diff.broken) - len(listed)
            where = f" ([all of them]({run_page}#examples))" if run_page else ""
            lines += ["", f"… and {more} more{where}."]
        lines += ["", "</details>", ""]
    return lines


def github_report(
    report: Report,
    examples: Sequence[Example],
    results: Sequence[PairResult],
    *,
    gate: GateResult | None = None,
    diff: RunDiff | None = None,
    server_url: str | None = None,
) -> GithubReport:
    """The step summary and the annotations of a run.

    Args:
        report: The run's report.
        examples: The examples in scope.
        results: The run's pair results.
        gate: The gate's decision on the run, if it has a gate.
        diff: The run compared with its gate's baseline (run A the baseline), if any.
        server_url: Where ``arbiter serve`` is reached (a checked setting); the summary
            then links to the run's page, its failures and the comparison.
    """
    md = escape.markdown
    run = report.run_id or "RUN"  # a run id is ours: digits, letters and dashes
    mark = "" if gate is None else ("✅ " if gate.passed else "❌ ")
    status = "" if report.status == "completed" else f" · **{report.status}**"
    done = report.completeness
    if done is not None and not done.complete:
        status += f" ({done.done}/{done.expected} pairs)"
    lines = [
        f"## {mark}Arbiter — {md(report.dataset, limit=200)}",
        "",
        f"{md(report.system, limit=300)} · {report.n_examples} examples × k={report.k} · "
        f"run `{run}`{status}",
        "",
    ]
    page = _page(server_url, f"/runs/{quote(run, safe='')}")
    if page is not None and report.run_id:
        lines += [f"[Open the run in Arbiter]({page}) · [its failures]({page}?show=failing)", ""]
    lines += _gate_lines(gate, run)
    lines += [*_figure_rows(report, results), ""]
    if diff is not None:
        lines += _regression_lines(diff, server_url)
    found = find_failures(report, examples, results, limit=_FAILURES_LISTED, max_chars=300)
    if found.listed_total:
        lines += [
            f"<details><summary>{found.listed_total} of {found.examples_total} examples not "
            "passed by every scorer</summary>",
            "",
            failures_markdown(found).rstrip("\n"),
            "",
            "</details>",
            "",
        ]
    else:
        lines += ["Every scorer passed every repetition of every example.", ""]
    lines += [
        f"_95% intervals: Wilson for pass rates, a bootstrap over examples (seed "
        f"{report.seed}) for pass^k and pass@1; differences paired over examples._",
        "",
    ]
    return GithubReport(summary="\n".join(lines), commands=_commands(report, gate))


def _commands(report: Report, gate: GateResult | None) -> list[str]:
    if gate is None:
        return []
    title = command_property(f"Arbiter gate: {report.dataset}")
    commands = [f"::error title={title}::{command_data(line)}" for line in gate.failures]
    commands += [f"::warning title={title}::{command_data(line)}" for line in gate.warnings]
    return commands
