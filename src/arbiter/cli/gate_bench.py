"""``arbiter gate-bench``: the grounding gate's benchmark on the bundled (or a given) case set.

The work is :func:`arbiter.service.grounding_gate.run_gate_bench`'s; this module parses
and prints. Every figure is defined in :mod:`arbiter.judges.gate_bench`.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from arbiter.cli.app import app
from arbiter.cli.common import echo_json, out_console

if TYPE_CHECKING:
    from arbiter.judges.gate_bench import GateBenchReport
    from arbiter.scoring.rates import Rate

__all__ = ["gate_bench", "render_gate_bench"]


@app.command("gate-bench")
def gate_bench(
    cases: Annotated[
        Path | None,
        typer.Argument(help="JSONL file of labelled cases (default: the bundled set)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Benchmark the grounding gate's trigger against labelled drift (oracle judge)."""
    from arbiter.service.grounding_gate import run_gate_bench

    report = asyncio.run(run_gate_bench(cases))
    if as_json:
        echo_json(report.model_dump(mode="json"))
    else:
        for line in render_gate_bench(report, source=str(cases) if cases else "bundled set"):
            out_console().print(_text(line), soft_wrap=True)


def _text(line: str) -> object:
    from rich.text import Text

    from arbiter import escape

    return Text(escape.terminal(line, single_line=True))


def _rate(rate: Rate) -> str:
    if rate.rate is None:
        return f"n/a ({rate.count}/{rate.n})"
    return f"{rate.rate:.3f}  ({rate.count}/{rate.n}, 95% CI {rate.low:.3f}-{rate.high:.3f})"


def _ids(ids: tuple[str, ...]) -> str:
    return ", ".join(ids) if ids else "none"


def render_gate_bench(report: GateBenchReport, *, source: str) -> list[str]:
    """The report as plain lines (the caller escapes them for the terminal)."""
    net = "n/a" if report.net_drop is None else f"{100 * report.net_drop:.1f} points"
    relative = (
        ""
        if report.relative_drop is None
        else f" (relative drop {100 * report.relative_drop:.1f}%)"
    )
    return [
        f"grounding gate benchmark, {source}: {report.n} cases "
        f"({report.drifted} drifted, {report.faithful} faithful), oracle judge = the label",
        "",
        "trigger vs judge-confirmed drift   drifted  faithful",
        f"  triggered (needs_judge)          {report.tp:7d}  {report.fp:8d}",
        f"  not triggered                    {report.fn:7d}  {report.tn:8d}",
        "",
        f"trigger recall       {_rate(report.trigger_recall)}",
        f"trigger precision    {_rate(report.trigger_precision)}",
        f"judge call rate      {_rate(report.judge_call_rate)}",
        f"baseline drift rate  {_rate(report.baseline_drift_rate)}  (observe)",
        f"enforce drift rate   {_rate(report.enforce_drift_rate)}  (enforce, unadjudicated)",
        f"net drop             {net} of all answers{relative}",
        f"faithful withheld    {report.faithful_withheld}",
        "",
        f"false negatives ({report.fn}): {_ids(report.false_negatives)}",
        f"false positives ({report.fp}): {_ids(report.false_positives)}",
    ]
