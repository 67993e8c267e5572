"""Pieces every command shares: consoles, the store, label maps, progress, one-line output.

Consoles are made on first use and Rich is imported then, so a command that prints
nothing Rich-rendered never pays for it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from arbiter.config import Settings
    from arbiter.store import Store

__all__ = [
    "TableColumn",
    "echo_json",
    "err_console",
    "fitted_table",
    "note",
    "open_store",
    "out_console",
    "parse_label_map",
    "progress_bar",
    "read_argument_file",
    "settings",
    "usage_error",
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


def usage_error(exc: Exception, args: list[str], *, command: str = "arbiter") -> tuple[str, int]:
    """The one line and exit code of an error of the command-line framework.

    An option value that cannot be used (not a number, NaN, out of range, not a choice)
    is invalid input: exit 3, naming the option and the value given. A command line that
    cannot be parsed (an unknown option, a missing argument) is a usage error: exit 2.
    Either way the line ends with where to find help.

    Args:
        exc: A click ``UsageError`` raised while the command line was parsed.
        args: The command line, to quote the value an option was given.
        command: The command the line names, for the help to point at when the error
            does not say (``arbiter run``).
    """
    ctx = getattr(exc, "ctx", None)
    where = f" (see {ctx.command_path if ctx is not None else command} --help)"
    param = getattr(exc, "param", None)
    missing = type(exc).__name__ == "MissingParameter"
    if param is None or missing or not hasattr(exc, "format_message"):
        text = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        return " ".join(text.split()) + where, 2
    name = _option_name(param)
    given = _given_value(param, args)
    reason = _bad_value_reason(param, given, getattr(exc, "message", str(exc)))
    shown = f"{name} {given!r}" if given is not None else name
    return f"{shown}: {reason}{where}", 3


def _option_name(param: Any) -> str:
    opts: list[str] = [o for o in getattr(param, "opts", []) if o.startswith("-")]
    if opts:
        return max(opts, key=len)
    return str(getattr(param, "name", None) or "argument").upper()


def _given_value(param: Any, args: list[str]) -> str | None:
    """The value the command line gave ``param`` (its last one), when it can be found."""
    names: list[str] = [*getattr(param, "opts", []), *getattr(param, "secondary_opts", [])]
    found: str | None = None
    for index, word in enumerate(args):
        for name in names:
            if not name.startswith("-"):
                continue
            if word == name and index + 1 < len(args):
                found = args[index + 1]
            elif word.startswith(name + "="):
                found = word[len(name) + 1 :]
    return found


def _bad_value_reason(param: Any, given: str | None, message: str) -> str:
    import math

    low = getattr(param, "min", None)
    high = getattr(param, "max", None)
    if low is None and high is None:  # click's own range types keep them on the type
        low = getattr(getattr(param, "type", None), "min", None)
        high = getattr(getattr(param, "type", None), "max", None)
    number: float | None
    try:
        number = float(given) if given is not None else None
    except ValueError:
        number = None
    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    bounded = low is not None or high is not None
    if number is not None and math.isnan(number):
        return "not a number" + (f" (expected {_range(low, high)})" if bounded else "")
    if given is not None and annotation is int and not _is_int(given):
        return "not an integer"
    if number is None and given is not None and annotation is float:
        return "not a number"
    if number is not None and bounded:
        return f"expected {_range(low, high)}"
    text = " ".join(message.split()).removeprefix("Value error, ") or "not a valid value"
    return text[0].lower() + text[1:]


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def _range(low: Any, high: Any) -> str:
    if low is not None and high is not None:
        return f"a number in [{low:g}, {high:g}]"
    if low is not None:
        return f"a number of at least {low:g}"
    return f"a number of at most {high:g}"


@dataclass(frozen=True)
class TableColumn:
    """A column of a listing that must read at any terminal width."""

    name: str
    """Its header."""
    keep: int
    """How much it matters: at a narrow width the columns of the highest ``keep`` are
    left out first (0: never left out)."""
    wrap: bool = False
    """Whether its cells may wrap onto several lines (text); else it keeps its width
    (ids, figures, dates)."""
    narrowest: int = 12
    """Width a wrapping column may shrink to."""
    right: bool = False
    """Right-justified (figures)."""


_BORDERS = 3
"""Characters a column of a boxed Rich table adds to its cells' width (edge and padding)."""


def fitted_table(
    title: str,
    columns: Sequence[TableColumn],
    rows: Sequence[Sequence[str | Text]],
    width: int,
) -> tuple[Table, list[str]]:
    """A table that fits ``width`` columns without cutting a cell: wrapping columns
    shrink down to their narrowest, then the least useful columns are left out, and an
    empty column is left out at once. Cells that do not wrap (ids) are never cut.

    Returns:
        The table, and the names of the columns left out (to say so below it).
    """
    from rich.cells import cell_len
    from rich.table import Table
    from rich.text import Text

    def widest(index: int) -> int:
        cells = [cell_len(str(row[index])) for row in rows]
        return max([cell_len(columns[index].name), *cells])

    def empty(index: int) -> bool:
        return all(str(row[index]).strip() in ("", "-") for row in rows)

    natural = [widest(i) for i in range(len(columns))]
    kept = [i for i in range(len(columns)) if columns[i].keep == 0 or not empty(i)]
    least = [
        n if not columns[i].wrap else min(n, columns[i].narrowest) for i, n in enumerate(natural)
    ]
    by_use = sorted(kept, key=lambda i: columns[i].keep, reverse=True)
    while sum(least[i] + _BORDERS for i in kept) + 1 > width and by_use:
        dropped = by_use.pop(0)
        if columns[dropped].keep == 0:
            break
        kept.remove(dropped)
    table = Table(title=title, title_justify="left")
    for i in kept:
        column = columns[i]
        table.add_column(
            column.name,
            justify="right" if column.right else "left",
            no_wrap=not column.wrap,
            overflow="fold",
            min_width=least[i],
        )
    for row in rows:
        table.add_row(*(row[i] if isinstance(row[i], Text) else Text(str(row[i])) for i in kept))
    hidden = [columns[i].name for i in range(len(columns)) if i not in kept and not empty(i)]
    return table, hidden
