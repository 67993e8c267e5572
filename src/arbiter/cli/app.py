"""The Typer application object; command modules attach their commands to it.

This module and the command modules import nothing heavier than Typer at import time:
each command imports the engine it drives inside its body, so ``arbiter --help`` and
``arbiter --version`` start about as fast as a bare Typer app.
"""

from __future__ import annotations

import inspect
import re
from typing import Annotated, Any

import typer
from typer.core import TyperCommand, TyperGroup

__all__ = ["ArbiterCommand", "ArbiterGroup", "app", "tidy_help"]

_RANGE_OR_LIST = re.compile(r"^<(?:list\[(\w+)\]|(\w+) range)>$")


def one_line_paragraphs(text: str | None) -> str | None:
    """A docstring as help: each paragraph on one line (a line break inside a paragraph
    is the source's wrapping, not the reader's), blank lines kept between paragraphs;
    a paragraph starting with ``\\b`` keeps its lines."""
    if not text:
        return text
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(
        part if part.startswith("\b") else " ".join(part.split("\n")) for part in paragraphs
    )


def _plain_placeholder(param: Any, ctx: typer.Context) -> None:
    """A flag takes no value, so it shows no placeholder (was ``<bool>``); a repeatable
    option shows its element's type, a ranged one its type (the range follows)."""
    if getattr(param, "metavar", None) is not None or not hasattr(param, "display_type_rich"):
        return
    if getattr(param, "is_flag", False):
        param.metavar = ""
        return
    try:
        shown = param.display_type_rich(ctx)
    except Exception:  # a Typer without this display: keep its own
        return
    found = _RANGE_OR_LIST.match(shown or "")
    if found is None:
        return
    plain = f"<{found[1] or found[2]}>"
    if getattr(param, "param_type_name", "") == "argument":
        # An argument's type display ignores its metavar: this instance's says it plainly.
        repeated = f"{plain}..." if found[1] else plain
        setattr(param, "display_type_rich", lambda ctx: repeated)  # noqa: B010
    else:
        param.metavar = plain


class _WholeHelp:
    """What makes help read whole, for a command and a group alike: paragraphs
    unwrapped, plain placeholders (mixed in before Typer's class)."""

    help: str | None
    short_help: str | None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.help = one_line_paragraphs(self.help)
        self.short_help = one_line_paragraphs(self.short_help)

    def get_params(self, ctx: Any) -> list[Any]:
        params: list[Any] = super().get_params(ctx)  # type: ignore[misc]
        for param in params:
            _plain_placeholder(param, ctx)
        return params


class ArbiterCommand(_WholeHelp, TyperCommand):
    """A command whose help reads whole: paragraphs unwrapped, plain placeholders."""


class ArbiterGroup(_WholeHelp, TyperGroup):
    """A command group whose help reads as :class:`ArbiterCommand`'s does."""


def tidy_help(typer_app: typer.Typer) -> None:
    """Give every command and group of ``typer_app`` (sub-groups included) the classes
    above, unless it names its own; called once every command is registered."""
    typer_app.info.cls = typer_app.info.cls if _named(typer_app.info.cls) else ArbiterGroup
    for command in typer_app.registered_commands:
        if not _named(command.cls):
            command.cls = ArbiterCommand
    for group in typer_app.registered_groups:
        if not _named(group.cls):
            group.cls = ArbiterGroup
        if group.typer_instance is not None:
            tidy_help(group.typer_instance)


def _named(cls: Any) -> bool:
    """Whether a command's class was chosen by its module (Typer's defaults are its own
    classes, a placeholder or None)."""
    return isinstance(cls, type) and cls not in (TyperCommand, TyperGroup)


app = typer.Typer(
    name="arbiter",
    help="Judge what AI systems produce: run labelled datasets, report, compare and gate.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
    cls=ArbiterGroup,
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
