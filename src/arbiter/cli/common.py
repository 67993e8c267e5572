"""Pieces every command shares: consoles, the store, label maps, progress."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console
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

from arbiter.config import Settings
from arbiter.errors import InputError
from arbiter.harness.runner import ProgressCallback
from arbiter.store.repository import Store

__all__ = [
    "BINARY_LABEL_MAP",
    "err_console",
    "open_store",
    "out_console",
    "parse_label_map",
    "progress_bar",
]

out_console = Console(soft_wrap=True)
err_console = Console(stderr=True, soft_wrap=True)

BINARY_LABEL_MAP = {"low": "low", "*": "high"}
"""``--label-map binary``: a threat unless exactly ``low`` (``*`` maps every other label)."""


def open_store(settings: Settings | None = None) -> Store:
    """The store named by ``ARBITER_DB_URL``, or the default SQLite file."""
    return Store((settings or Settings()).database_url())


def parse_label_map(value: str | None) -> dict[str, str] | None:
    """``binary``, or a JSON file holding ``{"from": "to", ..., "*": "default"}``.

    Raises:
        InputError: The file is missing or is not a JSON object of strings.
    """
    if value is None:
        return None
    if value == "binary":
        return dict(BINARY_LABEL_MAP)
    path = Path(value)
    if not path.is_file():
        raise InputError(f"--label-map {value}: expected 'binary' or a JSON file; no such file")
    try:
        mapping = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: not a JSON label map: {exc}") from None
    if not isinstance(mapping, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in mapping.items()
    ):
        raise InputError(f'{path}: a label map must be a JSON object of strings, {{"from": "to"}}')
    return mapping


class _RateColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("-- /s" if speed is None else f"{speed:,.1f}/s", style="cyan")


@contextmanager
def progress_bar(description: str, *, enabled: bool = True) -> Iterator[ProgressCallback]:
    """A progress bar on stderr with rate and ETA; yields the runner's callback."""
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        _RateColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=err_console,
        disable=not enabled,
        transient=False,
    )
    task = progress.add_task(description, total=None)

    def update(done: int, total: int) -> None:
        progress.update(task, completed=done, total=total)

    with progress:
        yield update
