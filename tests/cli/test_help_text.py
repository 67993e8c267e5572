"""Help texts reach the terminal whole: the rich markup of Typer eats no bracketed words."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import typer
from rich.text import Text

from arbiter.cli.main import app


def _commands(command: Any, path: str) -> Iterator[tuple[str, Any]]:
    yield path, command
    if hasattr(command, "list_commands"):
        context = typer.Context(command)
        for name in command.list_commands(context):
            yield from _commands(command.get_command(context, name), f"{path} {name}")


def _help_texts() -> list[tuple[str, str]]:
    texts = []
    for path, command in _commands(typer.main.get_command(app), "arbiter"):
        texts.append((f"{path}: description", command.help or ""))
        for parameter in command.params:
            texts.append((f"{path} {parameter.name}", getattr(parameter, "help", None) or ""))
    return [(where, text) for where, text in texts if "[" in text]


def test_the_walk_reaches_the_subcommands() -> None:
    paths = {path for path, _ in _commands(typer.main.get_command(app), "arbiter")}
    assert {"arbiter run", "arbiter jury eval", "arbiter online score"} <= paths


@pytest.mark.parametrize(("where", "text"), _help_texts(), ids=lambda v: str(v)[:40])
def test_bracketed_words_survive_rich_markup(where: str, text: str) -> None:
    # A literal bracket is written "\[" so that rich prints it instead of reading a style.
    assert Text.from_markup(text).plain == text.replace("\\[", "["), where
