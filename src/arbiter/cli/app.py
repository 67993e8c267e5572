"""The Typer application object; command modules attach their commands to it.

This module and the command modules import nothing heavier than Typer at import time:
each command imports the engine it drives inside its body, so ``arbiter --help`` and
``arbiter --version`` start about as fast as a bare Typer app.
"""

from __future__ import annotations

from typing import Annotated

import typer

__all__ = ["app"]

app = typer.Typer(
    name="arbiter",
    help="Judge what AI systems produce: run labelled datasets, report, compare and gate.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)


def _print_version(value: bool) -> None:
    if value:
        from arbiter import __version__

        typer.echo(f"arbiter {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print the version and exit.",
        ),
    ] = False,
) -> None:
    """Judge what AI systems produce: run labelled datasets, report, compare and gate."""
