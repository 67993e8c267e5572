"""``arbiter report``, ``arbiter diff`` and ``arbiter gate``: read stored runs."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from arbiter import escape
from arbiter.cli.app import app
from arbiter.cli.common import echo_json, note, open_store, out_console, settings
from arbiter.cli.files import write_output
from arbiter.cli.gate_options import (
    MaxErrorRateOption,
    MaxUndecidedRateOption,
    MinDecidedOption,
    run_checks,
)

if TYPE_CHECKING:
    from arbiter.service.runs import StoredRun
    from arbiter.store import Store

__all__ = ["diff", "gate", "report"]


class ReportFormat(StrEnum):
    """Output formats of ``arbiter report``."""

    text = "text"
    json = "json"
    markdown = "markdown"
    junit = "junit"
    csv = "csv"
    html = "html"
    github = "github"
    gitlab = "gitlab"


FAILURES_SHOWN = 20
"""Examples ``arbiter report --failures`` lists unless ``--limit`` says otherwise."""

FLIPS_SHOWN = 20
"""Flips per table ``arbiter diff`` lists unless ``--limit`` says otherwise."""


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
    failures: Annotated[
        bool,
        typer.Option(
            "--failures",
            help="List the examples not passed by every scorer, worst first, with each "
            "scorer's explanation and evidence (csv, html: only their pairs).",
        ),
    ] = False,
    limit: Annotated[
        int | None,
        typer.Option(
            min=0,
            help=f"Examples --failures lists \\[default: {FAILURES_SHOWN}; csv and html: all]; "
            "0: all.",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Same as --format json.")] = False,
    baseline: Annotated[
        str | None,
        typer.Option(
            help="github, gitlab: gate against this run and show the change (default: the "
            "baseline of the run's gate)."
        ),
    ] = None,
) -> None:
    """Show the report of a stored run (or jury run): text, JSON, markdown, JUnit XML, CSV,
    a self-contained HTML page, a GitHub job summary or a GitLab code quality report.

    --format github writes the summary to $GITHUB_STEP_SUMMARY when it is set and prints
    the gate's failures as workflow annotations (docs/ci.md)."""
    from arbiter.errors import InputError, StoreError

    if as_json:
        format = ReportFormat.json
    if failures and format in (ReportFormat.junit, ReportFormat.github, ReportFormat.gitlab):
        raise InputError(
            "--failures lists examples: use --format text, json, markdown, csv or html"
        )
    if baseline is not None and format not in (ReportFormat.github, ReportFormat.gitlab):
        raise InputError("--baseline is for --format github or gitlab")
    if limit is not None and not failures:
        raise InputError("--limit counts the examples --failures lists: add --failures")
    store = open_store()
    try:
        try:
            stored = _load(store, run_id)
            if format in (ReportFormat.github, ReportFormat.gitlab):
                from arbiter.cli.ci_report import emit_ci_report

                emit_ci_report(store, stored, format.value, output, baseline)
                return
        except StoreError as missing:
            if failures:
                from arbiter.store.jury_repository import get_jury_run

                try:
                    get_jury_run(store, run_id)
                except StoreError:
                    raise missing from None
                raise InputError(
                    f"run {run_id} is a jury run: --failures is for offline runs"
                ) from None
            text = _jury_report(store, run_id, format)
            if text is None:
                raise missing from None
            _emit(text, output)
            return
    finally:
        store.close()
    if failures:
        _emit_failures(stored, format, limit, output)
        return
    if format is ReportFormat.text and output is None:
        from arbiter.cli.render_run import report_renderable

        out_console().print(report_renderable(stored.report, stored.results))
        return
    _emit(_report_text(stored, format), output)


def _report_text(stored: StoredRun, format: ReportFormat) -> str:
    """The whole report of an offline run in ``format``, as text to print or write."""
    report, examples, results = stored.report, stored.examples, stored.results
    if format is ReportFormat.junit:
        from arbiter.harness.formats import report_junit

        return report_junit(report, examples, results)
    if format is ReportFormat.markdown:
        from arbiter.harness.formats import report_markdown

        return report_markdown(report, examples, results, server_url=settings().server_url)
    if format is ReportFormat.json:
        return _json_text(report.model_dump(mode="json"))
    if format is ReportFormat.csv:
        from arbiter.harness.csv_report import report_csv

        return report_csv(report, examples, results)
    if format is ReportFormat.html:
        from arbiter.harness.html_report import report_html

        return report_html(report, examples, results)
    from arbiter.cli.render_run import report_renderable

    return _plain(report_renderable(report, results))


def _plain(renderable: object) -> str:
    """A renderable as plain text, 120 columns wide, for a file."""
    from rich.console import Console

    plain = Console(width=120, no_color=True, force_terminal=False, highlight=False)
    with plain.capture() as capture:
        plain.print(renderable)
    return capture.get()


def _emit_failures(
    stored: StoredRun, format: ReportFormat, limit: int | None, output: Path | None
) -> None:
    """Print or write the examples not passed by every scorer, in ``format``."""
    from arbiter.harness.failures import find_failures

    export = format in (ReportFormat.csv, ReportFormat.html)
    shown = limit if limit is not None else (0 if export else FAILURES_SHOWN)
    found = find_failures(stored.report, stored.examples, stored.results, limit=shown or None)
    report, examples, results = stored.report, stored.examples, stored.results
    only = [e.example_id for e in found.examples]
    if format is ReportFormat.csv:
        from arbiter.harness.csv_report import report_csv

        text = report_csv(report, examples, results, only=only)
    elif format is ReportFormat.html:
        from arbiter.harness.html_report import report_html

        text = report_html(report, examples, results, only=only, more=found.left_out)
    elif format is ReportFormat.json:
        text = _json_text(found.model_dump(mode="json"))
    elif format is ReportFormat.markdown:
        from arbiter.harness.formats import failures_markdown

        text = failures_markdown(found)
    else:
        from arbiter.cli.render_failures import failures_renderable

        if output is None:
            out_console().print(failures_renderable(found))
            return
        text = _plain(failures_renderable(found))
    _emit(text, output)


def _json_text(payload: object) -> str:
    """Indented JSON, inert on a terminal and lossless, with a final newline."""
    return escape.json_text(payload) + "\n"


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
    limit: Annotated[
        int,
        typer.Option(min=0, help="Flips listed per table (broken, fixed) and view; 0: all."),
    ] = FLIPS_SHOWN,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (every flip).")] = False,
) -> None:
    """Compare two runs, overall and per scorer: the flips of each example, the change of
    each pass rate with a paired bootstrap 95% interval, and an exact McNemar test."""
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

        render_diff(comparison.diff, out_console(), max_flips=limit or None)


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
    run_id: Annotated[
        str | None, typer.Argument(help="The run to judge.", show_default=False)
    ] = None,
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
    max_error_rate: MaxErrorRateOption = None,
    max_undecided_rate: MaxUndecidedRateOption = None,
    min_decided: MinDecidedOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    preregister: Annotated[
        Path | None,
        typer.Option(
            "--preregister",
            help="Before the run: sign this eval file's \\[gate] floors, dataset hash and "
            "scorers into a registration file (--registration names it).",
        ),
    ] = None,
    registration: Annotated[
        Path | None,
        typer.Option(
            "--registration",
            help="Gate with this signed registration's floors; a run or floors that differ "
            "from it are refused (exit 3).",
        ),
    ] = None,
) -> None:
    """Pass or fail a run: exit 1 listing every floor missed and every significant regression.

    A run that is not complete (killed, interrupted, failed) never passes, nor one whose
    calls failed too often, whose pairs are mostly undecided, or that has too few
    decided pairs, whatever floors are set.
    """
    from arbiter.errors import GateFailed, InputError
    from arbiter.harness.gate import (
        DEFAULT_MAX_ERROR_RATE,
        DEFAULT_MAX_UNDECIDED_RATE,
        DEFAULT_MIN_DECIDED,
    )
    from arbiter.service.runs import GateFloors, gate_run

    if preregister is not None:
        from arbiter.cli.signing import preregister_spec

        preregister_spec(preregister, registration, run_id=run_id)
        return
    if run_id is None:
        raise InputError("give the run to gate: arbiter gate RUN_ID (or --preregister SPEC)")
    checks = run_checks(max_error_rate, max_undecided_rate, min_decided)
    floors = GateFloors(
        min_accuracy=min_accuracy,
        min_pass_k=min_pass_k,
        cohorts=_cohort_floors(cohort or []),
        epsilon=epsilon,
        max_error_rate=DEFAULT_MAX_ERROR_RATE if max_error_rate is None else max_error_rate,
        max_undecided_rate=(
            DEFAULT_MAX_UNDECIDED_RATE if max_undecided_rate is None else max_undecided_rate
        ),
        min_decided=DEFAULT_MIN_DECIDED if min_decided is None else min_decided,
    )
    store = open_store()
    try:
        if registration is not None:
            from arbiter.cli.signing import registered_floors

            if checks:
                raise InputError(
                    "--registration gates with the registered floors and run checks; "
                    "--max-error-rate, --max-undecided-rate and --min-decided cannot be "
                    "given with it"
                )
            given = floors != GateFloors()
            floors, baseline = registered_floors(
                store, run_id, registration, floors if given else None, baseline
            )
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
                "min_accuracy": floors.min_accuracy,
                "min_pass_k": floors.min_pass_k,
                "cohorts": floors.cohorts,
                "baseline": baseline,
                **checks,
            },
        )
    if not result.passed:
        raise GateFailed(f"gate failed for run {run_id}: {len(result.failures)} reason(s)")
