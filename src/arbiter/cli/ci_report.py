"""``arbiter report RUN --format github|gitlab``: a stored run for a CI job.

``github`` writes the job summary (Markdown) to ``$GITHUB_STEP_SUMMARY`` when the
variable is set, appended after the summaries of earlier steps as GitHub expects (to
``--output`` when given, else to stdout), and prints the workflow annotations of the
gate's failures on stdout, where the runner reads them. ``gitlab`` writes a code quality
report (JSON), for ``artifacts: reports: codequality``. Neither fails on a failed gate:
``arbiter gate`` does, so a job can post the summary and then gate.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from arbiter.service.runs import StoredRun
    from arbiter.store import Store

__all__ = ["STEP_SUMMARY", "emit_ci_report"]

STEP_SUMMARY = "GITHUB_STEP_SUMMARY"
"""The variable naming the file a GitHub Actions step writes its summary to."""


def _append(path: Path, text: str) -> None:
    from arbiter.errors import InputError

    try:
        with path.open("a", encoding="utf-8", newline="\n") as file:
            file.write(text)
    except OSError as exc:
        raise InputError(f"cannot write the job summary to {path}: {exc.strerror or exc}") from None


def emit_ci_report(
    store: Store, stored: StoredRun, format: str, output: Path | None, baseline: str | None
) -> None:
    """Write the CI report of a stored run in ``format`` (``github`` or ``gitlab``).

    Raises:
        InputError: The summary cannot be written, or the run's baseline is not
            comparable with it.
    """
    from arbiter.cli.common import note, settings
    from arbiter.cli.files import write_output
    from arbiter.service.ci_reports import stored_gate

    gate = stored_gate(store, stored, baseline=baseline)
    if format == "gitlab":
        from arbiter.harness.gitlab_report import gitlab_report

        text = gitlab_report(stored.report, stored.examples, stored.results, gate=gate.result)
        if output is None:
            typer.echo(text, nl=False)
        else:
            write_output(output, text)
            note(f"wrote {output}")
        return
    from arbiter.harness.github_report import github_report

    made = github_report(
        stored.report,
        stored.examples,
        stored.results,
        gate=gate.result,
        diff=gate.diff,
        server_url=settings().server_url,
    )
    summary = os.environ.get(STEP_SUMMARY)
    if output is not None:
        write_output(output, made.summary)
        note(f"wrote {output}")
    elif summary:
        _append(Path(summary), made.summary)
        note(f"wrote the job summary to ${STEP_SUMMARY} ({summary})")
    else:
        typer.echo(made.summary, nl=False)
    for command in made.commands:
        typer.echo(command)
