"""Load labelled datasets from JSON, JSONL and CSV files, all-or-nothing.

Formats, chosen by the file suffix (case-insensitive):

- ``.json``: ``{"examples": [...], "name": ..., "version": ...}`` (name and version
  optional), or a bare top-level list of examples.
- ``.jsonl``: one example object per line; blank lines are skipped.
- ``.csv``: a header row naming any of ``id``, ``expected_label``, ``expected``,
  ``output`` and ``cohort`` (text), and any number of ``input.<key>`` /
  ``metadata.<key>`` columns; dots
  nest (``input.a.b`` fills ``input["a"]["b"]``). Input and metadata cells that read
  as a JSON number, ``true``, ``false`` or ``null`` become that value, anything else
  stays a string; an empty cell is left out.

A row's output (what the ``precomputed`` system answers) is its ``output`` key, or the
key ``output_field`` names (a CSV column of that name); ``output`` is then refused, as
it would shadow the named field.

A JSON or JSONL row shaped as a jury case (``task``, ``context``, ``output``, ...; no
``input``) is read as an example (:mod:`arbiter.datasets.case_rows`), validated by
:class:`~arbiter.contract.Case`; a file holds examples or cases, not both.

An example without an ``id`` (or, in CSV, with an empty one) gets ``"{stem}-{n}"``:
the file's stem and the example's 1-based position among the file's examples
(blank lines and rows do not count). Ids must be unique within the file.

No text of an example may hold a NUL character (U+0000), raw or escaped, in a key or a
value: the store cannot keep one (PostgreSQL text and JSON refuse it), so the file is
refused at the row and field that holds it.

Every failure raises :class:`~arbiter.errors.InputError` with one line naming the
file and, where known, the line, column, example and field.
"""

from __future__ import annotations

import bisect
import csv
import difflib
import functools
import io
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from arbiter.contract import Case, Dataset, Example
from arbiter.datasets.case_rows import example_of_case, is_case_row
from arbiter.datasets.jsonio import iter_json_lines, json_type, parse_json, parse_scalar, read_text
from arbiter.errors import InputError
from arbiter.validation import describe_validation_error

__all__ = [
    "MAX_ID_CHARS",
    "SUPPORTED_SUFFIXES",
    "dump_dataset_jsonl",
    "load_dataset",
    "may_hold_nul",
    "nul_field",
]

SUPPORTED_SUFFIXES = (".json", ".jsonl", ".csv")
"""File suffixes :func:`load_dataset` reads."""

MAX_ID_CHARS = 200
"""Longest example id a dataset may have: the store keeps results under ids of at most
this many characters (the same limit as its column), so a longer one is refused when
the file is read, at its line, rather than half-way through a run."""

_TOP_LEVEL_KEYS = ("examples", "name", "version", "schema_version")
_CSV_FIELDS = ("id", "expected_label", "expected", "output", "cohort")
_OUTPUT = "output"
# Fields an output field may not be named after: they mean something else in a row.
_RESERVED_FIELDS = (set(Example.model_fields) | set(Case.model_fields)) - {_OUTPUT}
_CSV_PREFIXES = ("input", "metadata")
_JSON_WHITESPACE = re.compile(r"[ \t\n\r]*")

# Where example i sits: (line or None, item label such as "examples[3]" or None).
_Locate = Callable[[int], tuple[int | None, str | None]]


def load_dataset(
    path: str | os.PathLike[str], *, name: str | None = None, output_field: str = _OUTPUT
) -> Dataset:
    """Read and validate a whole dataset file.

    Args:
        path: A ``.json``, ``.jsonl`` or ``.csv`` file (see the module docstring).
        name: Dataset name; defaults to the file's ``name`` key (JSON), else its stem.
        output_field: The top-level key (CSV: the column) holding each row's recorded
            output, read into ``Example.output``.

    Returns:
        The dataset, examples in file order.

    Raises:
        InputError: The file is missing, unreadable, not UTF-8, malformed, or an
            example is invalid, duplicated or absent, or ``output_field`` names
            another field of a row. Nothing is returned half-loaded.
    """
    _check_output_field(output_field)
    file = Path(path)
    suffix = file.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES and file.exists() and not file.is_dir():
        shown = repr(file.suffix) if file.suffix else "(no suffix)"
        raise InputError(
            f"{file}: unsupported file type {shown}; use {', '.join(SUPPORTED_SUFFIXES)}"
        )
    text = read_text(file, what="dataset file")
    meta: dict[str, Any] = {}
    if suffix == ".json":
        items, locate, meta = _parse_json(file, text)
    else:
        if suffix == ".jsonl":
            items, lines = _parse_jsonl(file, text)
        else:
            items, lines = _parse_csv(file, text, output_field)
        locate = lambda i: (lines[i], None)  # noqa: E731
    nul = may_hold_nul(text)
    return _build(
        file, items, locate, name=name, meta=meta, output_field=output_field, check_nul=nul
    )


def _check_output_field(output_field: str) -> None:
    if not isinstance(output_field, str) or not output_field.strip():
        raise InputError(f"the output field must be a non-empty key, got {output_field!r}")
    if output_field in _RESERVED_FIELDS:
        raise InputError(
            f"the output field cannot be {output_field!r}: that key means something else "
            "in a dataset row; name the key that holds the outputs"
        )


def dump_dataset_jsonl(dataset: Dataset, path: str | os.PathLike[str]) -> None:
    """Write a dataset's examples as canonical JSONL (sorted keys, compact, UTF-8).

    Name and version are not written; loading the file back yields the same
    ``content_hash``.

    Args:
        dataset: The dataset to write.
        path: Destination file; overwritten if it exists.
    """
    text = "".join(f"{_canonical_json(e.canonical_dump())}\n" for e in dataset.examples)
    Path(path).write_text(text, encoding="utf-8", newline="\n")


def _canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _parse_json(file: Path, text: str) -> tuple[list[Any], _Locate, dict[str, Any]]:
    data = parse_json(text, source=str(file))
    meta: dict[str, Any] = {}
    if isinstance(data, list):
        items, key = data, None
    elif isinstance(data, dict):
        unknown = sorted(set(data) - set(_TOP_LEVEL_KEYS))
        if unknown:
            expected = ", ".join(repr(k) for k in _TOP_LEVEL_KEYS)
            raise InputError(f"{file}: unknown top-level key {unknown[0]!r}; expected {expected}")
        if "examples" not in data:
            raise InputError(f"{file}: missing top-level key 'examples'")
        items, key = data["examples"], "examples"
        if not isinstance(items, list):
            raise InputError(f"{file}: 'examples' must be an array, got {json_type(items)}")
        meta = {k: v for k, v in data.items() if k != "examples"}
        version = meta.get("version")
        if isinstance(version, int | float) and not isinstance(version, bool):
            meta["version"] = str(version)  # "version": 2 is what people write
    else:
        kind = json_type(data)
        raise InputError(f"{file}: top level must be an object or an array, got {kind}")
    lines = functools.cache(lambda: _example_lines(text, key))

    def locate(i: int) -> tuple[int | None, str | None]:
        return lines()[i], f"{key or ''}[{i}]"

    return items, locate, meta


def _member_starts(text: str, pos: int) -> list[tuple[Any, int]]:
    """(key or index, start offset) of each member of the array or object at ``pos``."""
    decoder = json.JSONDecoder()

    def skip(at: int) -> int:
        return _JSON_WHITESPACE.match(text, at).end()  # type: ignore[union-attr]  # `*` matches

    is_object = text[pos] == "{"
    members: list[tuple[Any, int]] = []
    pos = skip(pos + 1)
    while text[pos] not in "]}":
        key: Any = len(members)
        if is_object:
            key, pos = decoder.raw_decode(text, pos)
            pos = skip(skip(pos) + 1)  # past the ':'
        members.append((key, pos))
        _, pos = decoder.raw_decode(text, skip(pos))
        pos = skip(pos)
        if text[pos] == ",":
            pos = skip(pos + 1)
    return members


def _example_lines(text: str, key: str | None) -> list[int]:
    """Line of each example in valid JSON ``text``; re-scans, so only used on errors."""
    pos = _JSON_WHITESPACE.match(text).end()  # type: ignore[union-attr]  # `*` matches
    if key is not None:  # the reader refuses duplicate keys: one member has this key
        pos = [start for name, start in _member_starts(text, pos) if name == key][-1]
    newlines = [m.start() for m in re.finditer("\n", text)]
    return [bisect.bisect(newlines, start) + 1 for _, start in _member_starts(text, pos)]


def _parse_jsonl(file: Path, text: str) -> tuple[list[Any], list[int]]:
    numbered = list(iter_json_lines(text, source=str(file)))
    return [value for _, value in numbered], [n for n, _ in numbered]


def _parse_csv(file: Path, text: str, output_field: str) -> tuple[list[Any], list[int]]:
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    items: list[Any] = []
    lines: list[int] = []
    start = 1  # first line of the record being read; a quoted cell may span lines
    try:
        header = next(reader, None)
        if header is None:
            raise InputError(f"{file}: empty file; expected a header row (id, expected_label, ...)")
        columns = _csv_columns(file, header, output_field)
        start = reader.line_num + 1
        for row in reader:
            if any(cell.strip() for cell in row):
                if len(row) != len(columns):
                    counts = f"{len(row)} cells but the header has {len(columns)} columns"
                    raise InputError(f"{file}:{start}: row has {counts}")
                items.append(_csv_record(columns, row))
                lines.append(start)
            start = reader.line_num + 1
    except csv.Error as exc:
        raise InputError(f"{file}:{start}: malformed CSV: {exc}") from exc
    return items, lines


def _csv_columns(file: Path, header: list[str], output_field: str) -> list[tuple[str, ...]]:
    fields = tuple(output_field if f == _OUTPUT else f for f in _CSV_FIELDS)
    columns: list[tuple[str, ...]] = []
    for number, raw in enumerate(header, start=1):
        name, at = raw.strip(), f"{file}:1:{number}"
        prefix, _, rest = name.partition(".")
        if name in fields:
            column: tuple[str, ...] = (name,)
        elif prefix in _CSV_PREFIXES and rest and all(rest.split(".")):
            column = (prefix, *rest.split("."))
        else:
            expected = f"{', '.join(fields)}, input.<key>, metadata.<key>"
            raise InputError(f"{at}: unknown column {name!r}; expected {expected}")
        for seen in columns:
            if column == seen:
                raise InputError(f"{at}: duplicate column {name!r}")
            if seen[: len(column)] == column or column[: len(seen)] == seen:
                clash = f"clashes with column {'.'.join(seen)!r}"
                raise InputError(f"{at}: column {name!r} {clash} (a value cannot hold keys)")
        columns.append(column)
    return columns


def _csv_record(columns: list[tuple[str, ...]], row: list[str]) -> dict[str, Any]:
    record: dict[str, Any] = {"input": {}, "metadata": {}}
    for column, cell in zip(columns, row, strict=True):
        if cell == "":
            continue
        if len(column) == 1:  # id, expected_label, expected, the output, cohort: text
            record[column[0]] = cell
            continue
        target: dict[str, Any] = record[column[0]]
        for part in column[1:-1]:
            target = target.setdefault(part, {})
        target[column[-1]] = parse_scalar(cell)
    return record


def _where(file: Path, locate: _Locate, i: int) -> str:
    """Called only on the error path: locating a JSON example re-scans the file."""
    line, item = locate(i)
    head = f"{file}:{line}" if line is not None else str(file)
    return f"{head}: {item}" if item else head


def _build(
    file: Path,
    items: list[Any],
    locate: _Locate,
    *,
    name: str | None,
    meta: dict[str, Any],
    output_field: str = _OUTPUT,
    check_nul: bool = False,
) -> Dataset:
    if not items:
        raise InputError(f"{file}: no examples (a dataset needs at least one)")
    examples: list[Example] = []
    first_seen: dict[str, int] = {}
    first_case: int | None = None
    first_example: int | None = None
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            kind = json_type(item)
            raise InputError(f"{_where(file, locate, i)}: an example must be an object, got {kind}")
        if check_nul and (field := nul_field(item)) is not None:
            reason = f"field {field!r}: must not contain a NUL character (U+0000)"
            raise InputError(f"{_where(file, locate, i)}: {reason}")
        if item.get("id") is None:
            item = {**item, "id": f"{file.stem}-{i + 1}"}
        if output_field != _OUTPUT:
            where = functools.partial(_where, file, locate, i)
            item = _renamed_output(item, output_field, where)
        is_case = is_case_row(item)
        if is_case:
            first_case = i if first_case is None else first_case
        else:
            first_example = i if first_example is None else first_example
        if first_case is not None and first_example is not None:
            other = first_example if is_case else first_case
            raise InputError(f"{_where(file, locate, i)}: {_mixed(locate, other, is_case)}")
        try:
            example = _case_example(item) if is_case else _plain_example(item)
        except ValueError as exc:
            raise InputError(f"{_where(file, locate, i)}: {exc}") from None
        if len(example.id) > MAX_ID_CHARS:
            too_long = (
                f"field 'id': {len(example.id):,} characters, more than the {MAX_ID_CHARS} "
                "the store keeps"
            )
            raise InputError(f"{_where(file, locate, i)}: {too_long}")
        if example.id in first_seen:
            first_line, first_item = locate(first_seen[example.id])
            first = first_item or f"line {first_line}"
            duplicate = f"duplicate id {example.id!r} (first used at {first})"
            raise InputError(f"{_where(file, locate, i)}: {duplicate}")
        first_seen[example.id] = i
        examples.append(example)
    fields = {**meta, "name": name if name is not None else meta.get("name", file.stem)}
    try:
        return Dataset.model_validate({**fields, "examples": examples})
    except ValidationError as exc:
        raise InputError(f"{file}: {describe_validation_error(exc, Dataset)}") from None


def may_hold_nul(text: str) -> bool:
    """Whether a file's text may hold a NUL once parsed: raw, or escaped as in JSON
    (a cheap scan, so rows are walked by :func:`nul_field` only when it says so)."""
    return "\x00" in text or "\\u0000" in text


def nul_field(item: dict[str, Any]) -> str | None:
    """The field of a parsed row whose key or text holds a NUL (the first found, as a
    dotted path with ``[i]`` for list items), else None."""
    stack: list[tuple[Any, str]] = [(item, "")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, str):
            if "\x00" in value:
                return path
        elif isinstance(value, dict):
            children = []
            for key, child in value.items():
                at = f"{path}.{key}" if path else str(key)
                if "\x00" in str(key):
                    return at
                children.append((child, at))
            stack.extend(reversed(children))
        elif isinstance(value, list):
            stack.extend(reversed([(c, f"{path}[{n}]") for n, c in enumerate(value)]))
    return None


def _renamed_output(
    item: dict[str, Any], output_field: str, where: Callable[[], str]
) -> dict[str, Any]:
    """The row with its ``output_field`` key read as ``output``."""
    if _OUTPUT in item:
        raise InputError(
            f"{where()}: key {_OUTPUT!r} would shadow the output field {output_field!r}; "
            "rename or remove one"
        )
    if output_field not in item:
        return item
    renamed = {key: value for key, value in item.items() if key != output_field}
    renamed[_OUTPUT] = item[output_field]
    return renamed


def _mixed(locate: _Locate, other: int, is_case: bool) -> str:
    """Why a row is refused whose shape differs from row ``other``'s, an earlier one."""
    line, label = locate(other)
    at = label or f"line {line}"
    this, others = ("a jury case", "examples") if is_case else ("an example", "jury cases")
    return (
        f"{this} among {others} (the first at {at}); a file holds examples or jury "
        "cases (task, output, no input), not both"
    )


def _plain_example(item: dict[str, Any]) -> Example:
    """The example a row describes.

    Raises:
        ValueError: Why it describes none, one line.
    """
    unknown = _unknown_key(item)
    if unknown is not None:
        raise ValueError(unknown)
    try:
        return Example.model_validate(item)
    except ValidationError as exc:
        raise ValueError(describe_validation_error(exc, Example)) from None


def _case_example(item: dict[str, Any]) -> Example:
    """The example a jury case row is read as.

    Raises:
        ValueError: Why the row is not a valid case, one line.
    """
    try:
        case = Case.model_validate(item)
    except ValidationError as exc:
        raise ValueError(describe_validation_error(exc, Case)) from None
    return example_of_case(case)


def _unknown_key(item: dict[str, Any]) -> str | None:
    """The first key an example may not have, with the field probably meant."""
    for key in item:
        if key in Example.model_fields:
            continue
        fields = list(Example.model_fields)
        meant = [f for f in fields if isinstance(key, str) and key and key in f]
        meant = meant or difflib.get_close_matches(str(key), fields, n=1, cutoff=0.5)
        hint = f"; did you mean {meant[0]!r}?" if meant else ""
        known = ", ".join(repr(f) for f in fields)
        return f"unknown key {key!r}{hint} (an example has {known})"
    return None
