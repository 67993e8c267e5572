"""One entry point for every trajectory format: tell a file's format, import its runs.

:func:`load_runs` (and :func:`iter_runs`, one run at a time) reads files of any format of
a :class:`~arbiter.trajectories.formats.TrajectoryFormatRegistry` into
:class:`~arbiter.trajectories.formats.ImportedRun` values: what the agent did, the case it
ran and which repetition, what the source itself says of it (a benchmark's reward, its
gold actions) and what the importer repaired to read it. :func:`detect_format` tells a
file's format:

- a suffix a format claims (``.pb`` / ``.binpb``: ``otlp``) decides alone;
- else the file's first record (its first line's JSON, else the whole file's) is
  offered to every format, and the one it resembles most, wholly, is the format;
- a record that only partly resembles a format (a τ-bench result without its
  ``reward``) is read as that format anyway, so the error names what is wrong with it
  rather than saying the format cannot be told;
- a file whose first record is no JSON at all is reported with its JSON error.

``mapping`` is never guessed: it needs a mapping file, and passing one selects it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from arbiter.datasets.jsonio import JsonInputError, parse_json, read_text
from arbiter.errors import InputError
from arbiter.trajectories.formats import (
    FORMATS,
    MATCH,
    ImportedRun,
    ImportOptions,
    TrajectoryFormat,
    TrajectoryFormatRegistry,
)
from arbiter.trajectories.mapping_schema import RecordMapping, load_mapping

__all__ = [
    "FORMATS",
    "ImportedRun",
    "detect_format",
    "format_of_record",
    "iter_runs",
    "load_runs",
]

_FIRST_LINES = 64  # lines looked at for the first non-blank one


def load_runs(
    paths: Sequence[str | os.PathLike[str]],
    *,
    format: str | None = None,
    mapping: RecordMapping | str | os.PathLike[str] | None = None,
    registry: TrajectoryFormatRegistry | None = None,
) -> list[ImportedRun]:
    """The runs of trajectory files, file by file, in file order (see :func:`iter_runs`)."""
    return list(iter_runs(paths, format=format, mapping=mapping, registry=registry))


def iter_runs(
    paths: Sequence[str | os.PathLike[str]],
    *,
    format: str | None = None,
    mapping: RecordMapping | str | os.PathLike[str] | None = None,
    registry: TrajectoryFormatRegistry | None = None,
) -> Iterator[ImportedRun]:
    """The runs of trajectory files, one at a time, file by file, in file order.

    A format whose reader streams (OTLP JSON lines) is never held whole in memory.

    Args:
        paths: The files.
        format: Their format (a registered name); None: ``mapping`` when a mapping is
            given, else told from each file (:func:`detect_format`).
        mapping: The mapping (or its file, or a shipped mapping's name) of the
            ``mapping`` format.
        registry: The formats; None: the built-in ones and the installed plugins'.

    Raises:
        InputError: An unknown format, ``mapping`` without a mapping, a file that cannot
            be read or whose format cannot be told, or a bad record (``file:line: why``).
    """
    registry = registry or TrajectoryFormatRegistry.default()
    if format is not None and format not in registry:
        raise InputError(
            f"--format {format!r}: unknown format; expected one of {registry.listed()}"
        )
    if mapping is not None and not isinstance(mapping, RecordMapping):
        mapping = load_mapping(mapping)
    if format is None and mapping is not None:
        format = "mapping"
    options = ImportOptions(mapping=mapping, formats=registry)
    for path in paths:
        file = Path(path)
        if format is not None:
            yield from registry.format(format).read_file(file, options)
            continue
        chosen, exact = _detect(file, registry)
        if exact:
            yield from chosen.read_file(file, options)
            continue
        try:
            yield from chosen.read_file(file, options)
        except InputError as exc:
            raise InputError(
                f"{exc} (read as {chosen.name}, the format the file most resembles; "
                "--format names another)"
            ) from None


def detect_format(
    path: str | os.PathLike[str], *, registry: TrajectoryFormatRegistry | None = None
) -> str:
    """The format of a trajectory file, from its suffix or its first record.

    A first record that only partly resembles a format gives that format (its importer
    then says what is wrong with the file).

    Raises:
        InputError: The file cannot be read, its first record is not JSON (the JSON
            error, ``file:line:column``), or it resembles no format (the message lists
            the ``--format`` values).
    """
    chosen, _ = _detect(Path(path), registry or TrajectoryFormatRegistry.default())
    return chosen.name


def _detect(file: Path, registry: TrajectoryFormatRegistry) -> tuple[TrajectoryFormat, bool]:
    """The format a file is of, and whether it is wholly so (else it only resembles it)."""
    by_suffix = registry.format_of_suffix(file)
    if by_suffix is not None:
        return by_suffix, True
    record = _first_record(file)
    found, score = registry.resembled(record)
    if found is None:
        raise InputError(
            f"{file}: cannot tell the format of the file; name it with --format "
            f"(one of {registry.listed()})"
        )
    return found, score >= MATCH


def _first_record(file: Path) -> Any:
    """The first record: the first non-blank line's JSON, else the whole file's (a
    pretty-printed document); None for a file of blank lines. Only the first line is
    read unless the document spans the file.

    Raises:
        InputError: The file cannot be read.
        JsonInputError: Neither parses: the error that got further into the text (a
            broken first line of JSON lines, or a broken document).
    """
    source = str(file)
    number, first = _first_line(file)
    if first is None:
        return None
    try:
        return parse_json(first, source=source, line=number)
    except JsonInputError as line_error:
        text = read_text(file, what="trajectory file")
        try:
            return parse_json(text, source=source)
        except JsonInputError as document_error:
            raise _further(line_error, document_error) from None


def _first_line(file: Path) -> tuple[int, str | None]:
    """The first non-blank line among the first few, and its number."""
    if not file.is_file():
        read_text(file, what="trajectory file")  # names what is wrong with the path
    try:
        with file.open("rb") as stream:
            for number in range(1, _FIRST_LINES + 1):
                raw = stream.readline()
                if not raw:
                    break
                if number == 1:
                    raw = raw.removeprefix(b"\xef\xbb\xbf")
                if raw.strip():
                    try:
                        return number, raw.decode("utf-8").rstrip("\r\n")
                    except UnicodeDecodeError:
                        read_text(file, what="trajectory file")  # names the byte and line
    except OSError as exc:
        raise InputError(
            f"{file}: cannot read the trajectory file: {exc.strerror or exc}"
        ) from None
    return 0, None


def _further(line_error: JsonInputError, document_error: JsonInputError) -> JsonInputError:
    """Of two errors of the same text, the one whose position is later."""

    def position(error: JsonInputError) -> tuple[int, int]:
        where = str(error)[: -len(error.reason) - 2]  # the message is "where: reason"
        parts = where.rsplit(":", 2)
        numbers = [int(p) for p in parts[1:] if p.isdigit()]
        return (numbers[0], numbers[1]) if len(numbers) == 2 else (0, 0)

    return document_error if position(document_error) > position(line_error) else line_error


def format_of_record(
    record: Any, *, registry: TrajectoryFormatRegistry | None = None
) -> str | None:
    """The format of one parsed record (a file's first, or a request body), as
    :func:`detect_format` tells it; None when it is wholly none of them."""
    return (registry or TrajectoryFormatRegistry.default()).format_of_record(record)
