"""``arbiter import inspect LOG``: another framework's eval log stored as a run.

The work is :mod:`arbiter.service.log_import`'s; this module parses options and prints.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from arbiter.cli.app import app
from arbiter.cli.common import echo_json, note, open_store, out_console

__all__ = ["import_app", "inspect_log"]

import_app = typer.Typer(
    name="import",
    help="Store another framework's eval log as a run, for report, diff, gate, verify "
    "and the web UI.",
    no_args_is_help=True,
)
app.add_typer(import_app, name="import")


@import_app.command("inspect")
def inspect_log(
    log: Annotated[
        Path, typer.Argument(help="An Inspect AI log: an .eval archive or a .json log.")
    ],
    name: Annotated[
        str | None, typer.Option(help="A name for the run (default: the log's task).")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the run id and its report as JSON.")
    ] = False,
) -> None:
    """Store an Inspect AI log as a run: each sample an example, its epochs repetitions
    (pass^k over them), its scores the run's scores (named ``inspect:<scorer>``), its
    messages the trajectory. The run goes to the configured store (``ARBITER_DB_URL``)."""
    from arbiter import escape
    from arbiter.service.log_import import import_log

    store = open_store()
    try:
        imported = import_log(log, format="inspect", store=store, name=name)
    finally:
        store.close()
    for warning in imported.warnings:
        note(f"warning: {warning}", style="yellow")
    if as_json:
        echo_json(
            {
                "run_id": imported.run_id,
                "n_examples": imported.n_examples,
                "k": imported.k,
                "warnings": imported.warnings,
                "report": imported.report.model_dump(mode="json"),
            }
        )
        return
    from arbiter.cli.render_run import report_renderable

    pairs = imported.n_examples * imported.k
    typer.echo(
        escape.terminal(
            f"stored run {imported.run_id}: {imported.n_examples} samples x {imported.k} "
            f"epochs ({pairs} results) from {log}",
            single_line=True,
        )
    )
    out_console().print(report_renderable(imported.report))
    typer.echo(f"next: arbiter report {imported.run_id} | arbiter gate {imported.run_id}")
