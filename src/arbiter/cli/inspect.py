"""``arbiter report``, ``arbiter diff`` and ``arbiter gate``: read stored runs."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from arbiter.cli.app import app
from arbiter.cli.common import err_console, open_store, out_console
from arbiter.errors import GateFailed, InputError
from arbiter.harness.diff import diff_runs
from arbiter.harness.gate import evaluate_gate
from arbiter.harness.render import (
    render_diff,
    render_gate,
    report_junit,
    report_markdown,
    report_renderable,
)
from arbiter.harness.stored import StoredRun, load_run

__all__ = ["diff", "gate", "report"]


class ReportFormat(StrEnum):
    """Output formats of ``arbiter report``."""

    text = "text"
    json = "json"
    markdown = "markdown"
    junit = "junit"


def _load(run_id: str) -> StoredRun:
    store = open_store()
    try:
        stored = load_run(store, run_id)
    finally:
        store.close()
    if not stored.complete:
        err_console.print(
            f"[yellow]warning:[/] run {stored.info.id} is {stored.info.status} with "
            f"{len(stored.results)}/{stored.info.n_pairs} pairs; finish it with "
            f"arbiter run --resume {stored.info.id}"
        )
    return stored


@app.command()
def report(
    run_id: Annotated[str, typer.Argument(help="Run id (a unique prefix is enough).")],
    format: Annotated[
        ReportFormat, typer.Option("--format", "-f", help="Output format.")
    ] = ReportFormat.text,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file instead of stdout.")
    ] = None,
) -> None:
    """Show the report of a stored run: text, JSON, markdown (CI summary) or JUnit XML."""
    stored = _load(run_id)
    if format is ReportFormat.text and output is None:
        out_console.print(report_renderable(stored.report))
        return
    if format is ReportFormat.junit:
        text = report_junit(stored.report, stored.examples, stored.results)
    elif format is ReportFormat.markdown:
        text = report_markdown(stored.report)
    elif format is ReportFormat.json:
        text = stored.report.model_dump_json(indent=2) + "\n"
    else:
        plain = Console(width=120, no_color=True, force_terminal=False, highlight=False)
        with plain.capture() as capture:
            plain.print(report_renderable(stored.report))
        text = capture.get()
    if output is None:
        typer.echo(text, nl=False)
    else:
        output.write_text(text, encoding="utf-8")
        err_console.print(f"wrote {output}")


@app.command()
def diff(
    run_a: Annotated[str, typer.Argument(help="The reference run.")],
    run_b: Annotated[str, typer.Argument(help="The run to compare with it.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Compare two runs: per-example flips and metric deltas with 95% intervals."""
    a, b = _load(run_a), _load(run_b)
    expected = {e.id: e.expected_label for e in [*a.examples, *b.examples]}
    result = diff_runs(a.info.id, a.results, b.info.id, b.results, expected, seed=a.config.seed)
    if as_json:
        out_console.print_json(result.model_dump_json())
    else:
        render_diff(result, out_console)


def _cohort_floors(values: list[str]) -> dict[str, float]:
    floors = {}
    for value in values:
        name, found, floor = value.rpartition("=")
        try:
            number = float(floor)
        except ValueError:
            number = -1.0
        if not found or not name or not 0 <= number <= 1:
            raise InputError(f"--cohort {value!r}: expected NAME=FLOOR with FLOOR in [0, 1]")
        floors[name] = number
    return floors


@app.command()
def gate(
    run_id: Annotated[str, typer.Argument(help="The run to judge.")],
    baseline: Annotated[
        str | None, typer.Option(help="A run to compare against for regressions.")
    ] = None,
    min_accuracy: Annotated[
        float | None,
        typer.Option(min=0, max=1, help="Floor on accuracy (mapped if a label map was used)."),
    ] = None,
    min_pass_k: Annotated[float | None, typer.Option(min=0, max=1, help="Floor on pass^k.")] = None,
    cohort: Annotated[
        list[str] | None, typer.Option(help="Cohort floor NAME=FLOOR (repeatable).")
    ] = None,
    epsilon: Annotated[
        float,
        typer.Option(
            min=0, max=1, help="Drop against the baseline tolerated even when significant."
        ),
    ] = 0.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Pass or fail a run: exit 1 listing every floor missed and every significant regression."""
    floors = _cohort_floors(cohort or [])
    current = _load(run_id)
    base = _load(baseline) if baseline else None
    result = evaluate_gate(
        current.report,
        current.correct,
        baseline=base.report if base else None,
        baseline_correct=base.correct if base else None,
        min_accuracy=min_accuracy,
        min_pass_k=min_pass_k,
        cohort_floors=floors,
        epsilon=epsilon,
        seed=current.config.seed,
    )
    if as_json:
        out_console.print_json(json.dumps(result.model_dump()))
    else:
        render_gate(
            result,
            out_console,
            {
                "min_accuracy": min_accuracy,
                "min_pass_k": min_pass_k,
                "cohorts": floors,
                "baseline": baseline,
            },
        )
    if not result.passed:
        raise GateFailed(f"gate failed for run {current.info.id}: {len(result.failures)} reason(s)")
