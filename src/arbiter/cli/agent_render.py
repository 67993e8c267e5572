"""How ``arbiter agent score | mine | diff`` print in the terminal (Rich).

Case ids, tool names, arguments and errors come from imported traces: they are made
inert with :func:`arbiter.escape.terminal` and never parsed as Rich markup.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from arbiter import escape
from arbiter.service.agent_diff import AgentDiff, CaseDiff
from arbiter.service.agent_mining import MinedCases
from arbiter.service.agents import AgentScoreReport, PassHatK, RunVerdict
from arbiter.trajectories.diff import CallChange, CallView, VerdictFlip
from arbiter.trajectories.formats import TrajectoryFormat

__all__ = ["diff_renderable", "formats_renderable", "mined_renderable", "score_renderable"]

_CELL = 60
"""Characters of an untrusted value shown in one table cell."""


def _t(value: object, *, limit: int = _CELL, style: str = "") -> Text:
    """Untrusted text as a Rich Text: one line, controls shown, clipped, never markup."""
    return Text(escape.terminal(value, single_line=True, limit=limit), style=style)


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def _interval(figure: PassHatK) -> str:
    return f"{_pct(figure.estimate)}  [{_pct(figure.low)}, {_pct(figure.high)}]"


def _verdict(passed: bool | None) -> Text:
    if passed is None:
        return Text("unknown", style="yellow")
    return Text("pass", style="green") if passed else Text("FAIL", style="red")


def score_renderable(report: AgentScoreReport, *, limit: int = 20) -> RenderableType:
    """The report of ``agent score``: headline, pass^k, scorers, the runs that did not pass."""
    gated = {"reward": "the imported reward", "scorers": "the gating scorers"}
    parts: list[RenderableType] = [
        Text(
            f"{report.n_trajectories} trajectories, {report.n_tasks} tasks; a run passes on "
            f"{gated.get(report.gate_on, 'the reward and the gating scorers')}",
            style="bold",
        )
    ]
    if report.pass_rate is not None:
        parts.append(
            Text(f"pass rate  {_interval(report.pass_rate)}  over {report.pass_rate.n} runs")
        )
    repairs = report.repairs
    if repairs.count:
        parts.append(
            Text(
                f"import repairs  {repairs.count} in {repairs.runs} of {report.n_trajectories} "
                f"runs; first: ",
                style="yellow",
            ).append(_t(repairs.first[0], limit=200))
        )
    parts.append(
        Text(
            f"turns failed  {report.turn_failed} of {report.n_trajectories} "
            "(a rule failed them; review never convicts)"
        )
    )
    for title, figures in (
        ("pass^k (reward)" if report.pass_hat_k_scorers else "pass^k", report.pass_hat_k),
        (f"pass^k (--gate-on {report.gate_on})", report.pass_hat_k_scorers),
    ):
        if figures:
            parts += [Text(""), _pass_hat_k_table(title, figures)]
    parts += [Text(""), *_scorer_tables(report)]
    shown = [run for run in report.runs if run.passed is not True]
    if shown:
        parts += [Text(""), _runs_table(shown, limit)]
    return Group(*parts)


def _pass_hat_k_table(title: str, figures: dict[str, PassHatK]) -> Table:
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
    for column in ("k", "estimate", "95% CI", "tasks"):
        table.add_column(column, justify="right")
    for k, figure in figures.items():
        table.add_row(
            k, _pct(figure.estimate), f"[{_pct(figure.low)}, {_pct(figure.high)}]", str(figure.n)
        )
    return table


def _scorer_tables(report: AgentScoreReport) -> list[RenderableType]:
    table = Table(title="scorers", title_justify="left", box=box.SIMPLE_HEAD)
    for column in ("scorer", "dimension", "pass", "fail", "abstain", "bands h/r/d", "gates"):
        table.add_column(column, justify="left" if column in ("scorer", "dimension") else "right")
    silent = []
    for name, tally in report.scorers.items():
        decided = tally.passed + tally.failed + tally.errored
        if not decided:
            silent.append(name)
            continue
        bands = tally.bands
        banded = any(bands.values())
        table.add_row(
            _t(name),
            _t(tally.dimension or "-"),
            str(tally.passed),
            Text(str(tally.failed), style="red" if tally.failed else ""),
            str(tally.abstained),
            f"{bands['healthy']}/{bands['review']}/{bands['danger']}" if banded else "-",
            "yes" if tally.gating else "",
        )
    parts: list[RenderableType] = [table]
    errored = [name for name, tally in report.scorers.items() if tally.errored]
    if errored:
        parts.append(_t(f"errored: {', '.join(errored)}", limit=2_000, style="red"))
    if silent:
        parts.append(_t(f"abstained on every run: {', '.join(silent)}", limit=2_000, style="dim"))
    return parts


def _runs_table(runs: Sequence[RunVerdict], limit: int) -> RenderableType:
    table = Table(title="runs that did not pass", title_justify="left", box=box.SIMPLE_HEAD)
    for column in ("case", "rep", "status", "verdict", "failed by"):
        table.add_column(column)
    for run in runs[:limit]:
        table.add_row(
            _t(run.case_id),
            str(run.repetition),
            _t(run.status),
            _verdict(run.passed),
            _t(", ".join(run.failed) or "-", limit=_CELL * 2),
        )
    if len(runs) <= limit:
        return table
    return Group(table, Text(f"... and {len(runs) - limit} more (--limit, --json)", style="dim"))


def mined_renderable(mined: MinedCases, *, out: str | None) -> RenderableType:
    """What ``agent mine`` found: the mined cases and why."""
    table = Table(box=box.SIMPLE_HEAD)
    for column in ("case", "why", "tools", "calls", "query"):
        table.add_column(column, justify="right" if column in ("tools", "calls") else "left")
    for case in mined.cases:
        assertions = case["assertions"]
        table.add_row(
            _t(case["id"]),
            _t(", ".join(case["metadata"]["mined"]["reasons"])),
            str(len(assertions["require_tools_subset"])),
            str(len(assertions["expected_tool_calls"])),
            _t(case["input"]["query"], limit=72),
        )
    where = f" into {escape.terminal(out, single_line=True)}" if out else ""
    head = Text(f"mined {len(mined.cases)} of {mined.examined} runs{where}", style="bold")
    parts: list[RenderableType] = [head]
    if mined.cases:
        parts.append(table)
    if mined.without_query:
        skipped = ", ".join(mined.without_query)
        parts.append(_t(f"left out, no user message: {skipped}", limit=2_000, style="yellow"))
    return Group(*parts)


def diff_renderable(diff: AgentDiff, *, name_a: str, name_b: str) -> RenderableType:
    """The cases that differ between two sets of runs: calls side by side, flips."""
    changed = diff.changed
    head = Text(
        f"{len(diff.cases)} cases compared, {len(changed)} differ "
        f"(A = {escape.terminal(name_a, single_line=True)}, "
        f"B = {escape.terminal(name_b, single_line=True)})",
        style="bold",
    )
    parts: list[RenderableType] = [head]
    for case in changed:
        parts += [Text(""), *_case_parts(case)]
    return Group(*parts)


def _case_parts(case: CaseDiff) -> list[RenderableType]:
    title = Text.assemble(
        ("case ", "bold"), (escape.terminal(case.case_id, single_line=True), "bold")
    )
    if case.repetition:
        title.append(f" (repetition {case.repetition})")
    if not case.in_b or not case.in_a:
        title.append(f"  only in {'A' if case.in_a else 'B'}", style="yellow")
        return [title]
    if case.status_a != case.status_b:
        title.append(f"  status {case.status_a} -> {case.status_b}", style="yellow")
    parts: list[RenderableType] = [title]
    if case.calls.changes:
        parts.append(_calls_table(case.calls.rows, case.calls.positional_from))
    if case.flips:
        parts.append(_flips_table(case.flips))
    if case.answer_changed:
        parts.append(Text("  the final answer changed", style="dim"))
    return parts


_MARK = {"same": " ", "changed": "~", "replaced": "~", "removed": "-", "added": "+"}
_STYLE = {
    "same": "dim",
    "changed": "yellow",
    "replaced": "yellow",
    "removed": "red",
    "added": "green",
}


def _calls_table(rows: Sequence[CallChange], positional_from: int | None) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for column in ("", "A", "B"):
        table.add_column(column, overflow="fold")
    for number, row in enumerate(rows):
        if positional_from is not None and number == positional_from:
            table.add_row("", Text("(paired by position from here)", style="dim"), "")
        style = _STYLE[row.kind]
        table.add_row(Text(_MARK[row.kind], style=style), _call(row.a, style), _call(row.b, style))
    return table


def _call(view: CallView | None, style: str) -> Text:
    if view is None:
        return Text("")
    text = _t(f"{view.name}({view.arguments})", limit=_CELL * 2, style=style)
    if view.error is not None:
        text.append_text(_t(f"  error: {view.error}", style="red"))
    return text


def _flips_table(flips: Sequence[VerdictFlip]) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for column in ("verdict", "A", "B", ""):
        table.add_column(column)
    for flip in flips:
        table.add_row(
            _t(flip.name),
            _side(flip.a_passed, flip.a_band),
            _side(flip.b_passed, flip.b_band),
            Text(flip.direction, style={"broken": "red", "fixed": "green"}.get(flip.direction, "")),
        )
    return table


def _side(passed: bool | None, band: str | None) -> Text:
    text = _verdict(passed) if passed is not None else Text("abstained", style="yellow")
    if band is not None:
        text.append(f" ({band})")
    return text


def formats_renderable(formats: Sequence[TrajectoryFormat]) -> RenderableType:
    """``agent formats``: each format's name, whether it is told from a file, its summary."""
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    table.add_column("format", no_wrap=True)
    table.add_column("told", no_wrap=True)
    table.add_column("what it reads")
    for each in formats:
        told = each.resemblance is not None or bool(each.suffixes)
        # A plugin's name and summary are its author's text: shown inert.
        table.add_row(_t(each.name), "yes" if told else "named", _t(each.summary, limit=400))
    return table
