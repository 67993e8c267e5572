"""Pieces every command shares: consoles, the store, label maps, progress, one-line output.

Consoles are made on first use and Rich is imported then, so a command that prints
nothing Rich-rendered never pays for it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from arbiter.config import Settings
    from arbiter.store import Store

__all__ = [
    "echo_json",
    "err_console",
    "note",
    "open_store",
    "out_console",
    "parse_label_map",
    "progress_bar",
    "read_argument_file",
    "settings",
]


ProgressCallback = Callable[[int, int], None]


@cache
def out_console() -> Console:
    """The console of results (stdout)."""
    from rich.console import Console

    return Console(soft_wrap=True)


@cache
def err_console() -> Console:
    """The console of progress, notes and errors (stderr)."""
    from rich.console import Console

    return Console(stderr=True, soft_wrap=True)


def note(text: str, *, style: str | None = None) -> None:
    """One line on stderr, printed as is (never parsed as markup; controls shown)."""
    from rich.text import Text

    from arbiter import escape

    err_console().print(Text(escape.terminal(text), style=style or ""), soft_wrap=True)


def settings() -> Settings:
    """The settings, from ``ARBITER_*`` variables and ``.env``."""
    from arbiter.config import Settings

    return Settings()


def open_store(config: Settings | None = None) -> Store:
    """The store named by ``ARBITER_DB_URL``, or the default SQLite file."""
    from arbiter.store import Store

    return Store((config or settings()).database_url())


def parse_label_map(value: str | None) -> dict[str, str] | None:
    """``binary``, or a JSON file holding ``{"from": "to", ..., "*": "default"}``.

    Raises:
        InputError: The file is missing or is not a JSON object of strings.
    """
    from arbiter.datasets.jsonio import read_json_file
    from arbiter.errors import InputError
    from arbiter.scoring.labels import BINARY_LABEL_MAP

    if value is None:
        return None
    if value == "binary":
        return dict(BINARY_LABEL_MAP)
    path = Path(value)
    if not path.exists():
        raise InputError(f"--label-map {value}: expected 'binary' or a JSON file; no such file")
    mapping = read_json_file(path, what="label map")
    if not isinstance(mapping, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in mapping.items()
    ):
        raise InputError(f'{path}: a label map must be a JSON object of strings, {{"from": "to"}}')
    return mapping


@contextmanager
def progress_bar(description: str, *, enabled: bool = True) -> Iterator[ProgressCallback]:
    """A progress bar on stderr with rate and ETA; yields the ``(done, total)`` callback."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        Task,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.text import Text

    from arbiter import escape

    class RateColumn(ProgressColumn):
        def render(self, task: Task) -> Text:
            speed = task.finished_speed or task.speed
            return Text("-- /s" if speed is None else f"{speed:,.1f}/s", style="cyan")

    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        RateColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=err_console(),
        disable=not enabled,
        transient=False,
    )
    # The description is a file or run name: never markup.
    task = progress.add_task(escape.terminal(description).replace("[", r"\["), total=None)
    started = False

    def update(done: int, total: int) -> None:
        nonlocal started
        if not started:  # drawn at the first figure: a refusal before it prints no bar
            progress.start()
            started = True
        progress.update(task, completed=done, total=total)

    try:
        yield update
    finally:
        if started:
            progress.stop()


def read_argument_file(value: str, option: str) -> str:
    """An option's value, or with ``@path`` the text of that file (UTF-8, BOM allowed).

    Raises:
        InputError: The file is missing, not a regular file, or not UTF-8.
    """
    if not value.startswith("@"):
        return value
    from arbiter.datasets.jsonio import read_text

    return read_text(Path(value[1:]), what=f"{option} file")


def echo_json(payload: Any) -> None:
    """Print a JSON document on stdout: UTF-8, no Rich, inert (:func:`escape.json_text`)."""
    import typer

    from arbiter.escape import json_text

    typer.echo(json_text(payload))
