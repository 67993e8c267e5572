"""Reading TOML files (eval files) with a line for every key, for one-line errors.

The standard library's ``tomllib`` parses; it reports the line of a syntax error but
not where a valid key sits, so a validation error ("``scorers[1].args.threshold``
must be a number") could not name its line. :func:`read_toml_file` also indexes the
lines of tables, array-of-tables entries and keys (inline tables included), and
:meth:`TomlDocument.line_of` finds the line of a validation error's location.

Non-finite floats (``inf``, ``nan``) are refused, as in every JSON input.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arbiter.datasets.jsonio import read_text
from arbiter.errors import InputError

__all__ = ["TomlDocument", "read_toml_file"]

Location = tuple[str | int, ...]

_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")
_KEY = re.compile(
    r"""^\s*((?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*'))*)\s*="""
)
_INLINE_KEY = re.compile(r"""[{,]\s*([A-Za-z0-9_-]+|"[^"]*"|'[^']*')\s*=""")
_TOML_ERROR_AT = re.compile(r"^(.*) \(at line (\d+), column (\d+)\)$")


@dataclass
class TomlDocument:
    """A parsed TOML file and the line of each table and key in it."""

    path: Path
    """Where it was read from."""
    data: dict[str, Any]
    """The parsed document."""
    lines: dict[Location, int] = field(default_factory=dict)
    """1-based line of each table, array-of-tables entry and key."""

    def line_of(self, location: Sequence[str | int]) -> int | None:
        """The line of the deepest part of ``location`` found in the file, if any."""
        parts = tuple(location)
        while parts:
            line = self.lines.get(parts)
            if line is not None:
                return line
            parts = parts[:-1]
        return None

    def where(self, location: Sequence[str | int]) -> str:
        """``path:line`` for a location (``path`` alone when no line is known)."""
        line = self.line_of(location)
        return f"{self.path}:{line}" if line is not None else str(self.path)


def read_toml_file(path: str | os.PathLike[str], *, what: str = "TOML file") -> TomlDocument:
    """Read and parse a TOML file, indexing the line of every key.

    Raises:
        InputError: The file is missing, not UTF-8, not valid TOML (``path:line:column:
            why``), or holds ``inf`` / ``nan``.
    """
    file = Path(path)
    text = read_text(file, what=what)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        found = _TOML_ERROR_AT.match(message)
        if found:
            reason, line, column = found.groups()
            raise InputError(f"{file}:{line}:{column}: invalid TOML: {reason}") from None
        raise InputError(f"{file}: invalid TOML: {message}") from None
    document = TomlDocument(file, data, _index_lines(text))
    _refuse_non_finite(document, data, ())
    return document


def _refuse_non_finite(document: TomlDocument, value: Any, location: Location) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        shown = ".".join(str(p) for p in location)
        raise InputError(f"{document.where(location)}: {shown} = {value} is not a finite number")
    if isinstance(value, dict):
        for key, item in value.items():
            _refuse_non_finite(document, item, (*location, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _refuse_non_finite(document, item, (*location, index))


def _key_parts(key: str) -> list[str]:
    parts = []
    for raw in re.findall(r"""[A-Za-z0-9_-]+|"[^"]*"|'[^']*'""", key):
        parts.append(raw[1:-1] if raw[:1] in "\"'" else raw)
    return parts


def _index_lines(text: str) -> dict[Location, int]:
    """The line of each table header and key, by location (a best effort, never wrong
    about a line it reports: continuation lines of multi-line values are skipped)."""
    lines: dict[Location, int] = {}
    table: Location = ()
    entries: dict[tuple[str, ...], int] = {}
    depth = 0  # open brackets of a multi-line array or inline table
    in_string: str | None = None  # the delimiter of an open multi-line string
    for number, line in enumerate(text.splitlines(), start=1):
        if in_string is not None:
            if line.count(in_string) % 2 == 1:
                in_string = None
            continue
        if depth == 0:
            header = _HEADER.match(line)
            if header:
                parts = tuple(_key_parts(header.group(2)))
                if header.group(1) == "[[":
                    index = entries.get(parts, -1) + 1
                    entries[parts] = index
                    table = (*parts, index)
                else:
                    table = parts
                lines.setdefault(table, number)
                continue
            key = _KEY.match(line)
            if key:
                location = (*table, *_key_parts(key.group(1)))
                lines.setdefault(location, number)
                rest = line[key.end() :]
                for inline in _INLINE_KEY.finditer(rest):
                    lines.setdefault((*location, *_key_parts(inline.group(1))), number)
        depth = max(0, depth + _bracket_balance(line))
        for delimiter in ('"""', "'''"):
            if line.count(delimiter) % 2 == 1:
                in_string = delimiter
    return lines


def _bracket_balance(line: str) -> int:
    """Opening minus closing brackets outside strings and comments."""
    balance = 0
    quote: str | None = None
    for char in line:
        if quote is not None:
            if char == quote:
                quote = None
        elif char in "\"'":
            quote = char
        elif char == "#":
            break
        elif char in "[{":
            balance += 1
        elif char in "]}":
            balance -= 1
    return balance
