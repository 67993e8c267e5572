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


def _all_commands() -> list[tuple[str, Any]]:
    return list(_commands(typer.main.get_command(app), "arbiter"))


@pytest.mark.parametrize(("path", "command"), _all_commands(), ids=lambda v: str(v)[:40])
def test_each_paragraph_of_a_help_text_is_one_line(path: str, command: Any) -> None:
    # Typer's command listing in rich mode keeps the docstring's line breaks: a
    # description wrapped in the source showed cut in the middle of a sentence.
    for paragraph in (command.help or "").split("\n\n"):
        assert "\n" not in paragraph, (path, paragraph)


@pytest.mark.parametrize(("path", "command"), _all_commands(), ids=lambda v: str(v)[:40])
def test_a_flag_shows_no_placeholder_and_no_option_a_python_type(path: str, command: Any) -> None:
    context = typer.Context(command)
    for parameter in command.get_params(context):
        shown = (
            parameter.display_type_rich(context) if hasattr(parameter, "display_type_rich") else ""
        )
        if getattr(parameter, "is_flag", False):
            assert not shown, (path, parameter.name, shown)  # was <bool>
        assert "list[" not in (shown or ""), (path, parameter.name, shown)
        assert " range" not in (shown or ""), (path, parameter.name, shown)


def test_the_listing_shows_each_description_whole(cli: Any) -> None:
    result = cli("--help")
    assert result.code == 0
    assert "<bool>" not in result.out
    assert "HTML page, a GitHub job summary or a GitLab code quality report." in result.out
    gate = cli("gate", "--help")
    assert "<bool>" not in gate.out
    assert "│ --json  " in gate.out or "--json   " in gate.out
