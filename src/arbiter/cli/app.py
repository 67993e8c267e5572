"""The Typer application object; command modules attach their commands to it."""

from __future__ import annotations

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
