"""``arbiter report``, ``arbiter diff`` and ``arbiter gate``: read stored runs."""

from __future__ import annotations

import os
import tempfile
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from arbiter.cli.app import app
from arbiter.cli.common import echo_json, note, open_store, out_console

if TYPE_CHECKING:
    from arbiter.service.runs import StoredRun
    from arbiter.store import Store

__all__ = ["diff", "gate", "report", "write_output"]


class ReportFormat(StrEnum):
    """Output formats of ``arbiter report``."""

    text = "text"
    json = "json"
    markdown = "markdown"
    junit = "junit"


def write_output(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (a temporary file renamed into place).

    Raises:
        InputError: The file cannot be written there; the message names the path.
    """
    from arbiter.errors import InputError

    folder = path.parent if str(path.parent) else Path(".")
    try:
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as file:
            file.write(text)
        os.replace(temporary, path)
    except OSError as exc:
        Path(temporary).unlink(missing_ok=True)
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None


def _load(store: Store, run_id: str) -> StoredRun:
    from arbiter.service.runs import incomplete_note, load_run

    stored = load_run(store, run_id)
    warning = incomplete_note(stored)
    if warning is not None:
        note(f"warning: {warning}", style="yellow")
    return stored


def _jury_report(store: Store, run_id: str, format: ReportFormat) -> str | None:
    """The report of a jury run (its verdicts), or None when no jury run matches."""
    from arbiter.errors import InputError, StoreError
    from arbiter.store.jury_repository import get_jury_run, load_judged_cases, load_judgments

    try:
        info = get_jury_run(store, run_id)
    except StoreError:
        return None
    judgments = load_judgments(store, info.id)
    if format is ReportFormat.json:
        import json

        payload = {
            "run": info.model_dump(mode="json"),
            "judgments": [
                {"case_id": j.case_id, "verdict": j.verdict.model_dump(mode="json")}
                for j in judgments
            ],
        }
        return json.dumps(payload, indent=2, ensure_ascii=False) + "\n"
    if format is not ReportFormat.text:
        raise InputError(
            f"run {info.id} is a jury run: its report is text or json (--format text|json)"
        )
    from arbiter.cli import jury_render

    cases = load_judged_cases(store, info.id)
    with out_console().capture() as captured:
        out_console().print(
            f"jury run {info.id} ({info.kind}, {info.status}): "
            f"{info.n_judged}/{info.n_cases} cases judged"
        )
        if judgments:
            jury_render.judgment_summary(out_console(), cases, [j.verdict for j in judgments])
    return captured.get()


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
    """Show the report of a stored run (or jury run): text, JSON, markdown or JUnit XML."""
    from arbiter.errors import StoreError

    store = open_store()
    try:
        try:
            stored = _load(store, run_id)
        except StoreError as missing:
            text = _jury_report(store, run_id, format)
            if text is None:
                raise missing from None
            _emit(text, output)
            return
    finally:
        store.close()
    if format is ReportFormat.text and output is None:
        from arbiter.cli.render_run import report_renderable

        out_console().print(report_renderable(stored.report))
        return
    if format is ReportFormat.junit:
        from arbiter.harness.formats import report_junit

        text = report_junit(stored.report, stored.examples, stored.results)
    elif format is ReportFormat.markdown:
        from arbiter.harness.formats import report_markdown

        text = report_markdown(stored.report)
    elif format is ReportFormat.json:
        text = stored.report.model_dump_json(indent=2) + "\n"
    else:
        from rich.console import Console

        from arbiter.cli.render_run import report_renderable

        plain = Console(width=120, no_color=True, force_terminal=False, highlight=False)
        with plain.capture() as capture:
            plain.print(report_renderable(stored.report))
        text = capture.get()
    _emit(text, output)


def _emit(text: str, output: Path | None) -> None:
    if output is None:
        typer.echo(text, nl=False)
    else:
        write_output(output, text)
        note(f"wrote {output}")


@app.command()
def diff(
    run_a: Annotated[str, typer.Argument(help="The reference run.")],
    run_b: Annotated[str, typer.Argument(help="The run to compare with it.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Compare two runs: per-example flips and metric deltas with 95% intervals."""
    from arbiter.service.compare import compare_runs

    store = open_store()
    try:
        comparison = compare_runs(store, run_a, run_b)
    finally:
        store.close()
    for warning in comparison.warnings:
        note(f"warning: {warning}", style="yellow")
    if as_json:
        echo_json({**comparison.diff.model_dump(mode="json"), "warnings": comparison.warnings})
    else:
        from arbiter.cli.render_run import render_diff

        render_diff(comparison.diff, out_console())


def _cohort_floors(values: list[str]) -> dict[str, float]:
    from arbiter.errors import InputError

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
    """Pass or fail a run: exit 1 listing every floor missed and every significant regression.

    A run that is not complete (killed, interrupted, failed) never passes.
    """
    from arbiter.errors import GateFailed
    from arbiter.service.runs import GateFloors, gate_run

    floors = GateFloors(
        min_accuracy=min_accuracy,
        min_pass_k=min_pass_k,
        cohorts=_cohort_floors(cohort or []),
        epsilon=epsilon,
    )
    store = open_store()
    try:
        result = gate_run(store, run_id, floors, baseline=baseline)
    finally:
        store.close()
    if as_json:
        echo_json(result.model_dump(mode="json"))
    else:
        from arbiter.cli.render_run import render_gate

        render_gate(
            result,
            out_console(),
            {
                "min_accuracy": min_accuracy,
                "min_pass_k": min_pass_k,
                "cohorts": floors.cohorts,
                "baseline": baseline,
            },
        )
    if not result.passed:
        raise GateFailed(f"gate failed for run {run_id}: {len(result.failures)} reason(s)")
