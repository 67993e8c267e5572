"""The one reader of JSON input files.

Datasets, case files, online configs, rule files, label maps, rosters and body
templates are all read here, so every one of them behaves the same way:

- the path must be a regular file (a missing file, a directory or a FIFO is named so);
- the text is UTF-8, with or without a byte-order mark; an invalid byte is reported
  with its line and offset;
- a syntax error is reported as ``file:line:column``; NaN, Infinity and numbers too
  large for a float (``1e999``) are refused, so a document means one thing wherever it
  goes (a NaN is stored as ``null``, an infinity is not JSON at all);
- an escape that decodes to a lone UTF-16 surrogate (``"\\ud800"``) is refused: no
  UTF-8 text, no database and no terminal can hold it;
- a key given twice in one object is refused (a parser would keep one of the values
  without a word, and which one differs between parsers);
- an integer longer than Python converts (4,300 digits by default) is named with its
  place and length;
- nesting deeper than :data:`MAX_DEPTH` is refused before anything recurses into it.

The parse is orjson's when orjson is installed and what it gives is provably the
standard library's answer (see :func:`_fast_parse`); any doubt, and every error, goes to
the standard library's reader, which decides and words the message.

Every failure is an :class:`~arbiter.errors.InputError` with one line. The same parser
serves one line of a JSONL stream (:func:`parse_json_line`), where the online scorer
turns the error into a per-line result instead of stopping. What a parsed document means
is then checked by :func:`arbiter.validation.validate_document`, whose messages name the
field as the document's author wrote it.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import os
import re
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from arbiter.errors import InputError

try:  # the fast parser (a core dependency); the standard library's when it is absent
    import orjson
except ImportError:  # pragma: no cover - orjson is installed with arbiter
    orjson = None  # type: ignore[assignment]

__all__ = [
    "MAX_DEPTH",
    "JsonInputError",
    "iter_json_lines",
    "json_type",
    "parse_json",
    "parse_json_line",
    "parse_scalar",
    "read_json_file",
    "read_text",
]

MAX_DEPTH = 128
"""Deepest nesting of arrays and objects accepted in any JSON input."""

_BOM = "\ufeff"
_DEEP_INDENT = b"\n" + b" " * (2 * MAX_DEPTH)
"""In JSON written with an indent of two, what starts a line nested :data:`MAX_DEPTH` deep."""
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


class JsonInputError(InputError):
    """Invalid JSON input, with what kind of invalid it is, where, and why.

    Attributes:
        kind: ``bad_encoding``, ``invalid_json``, ``not_finite``, ``surrogate``,
            ``duplicate_key``, ``too_long`` or ``too_deep``.
        reason: The message without its ``file:line:column:`` location.
        column: The 1-based column, when known.
    """

    def __init__(self, where: str, reason: str, *, kind: str, column: int | None = None) -> None:
        super().__init__(f"{where}: {reason}")
        self.kind, self.reason, self.column = kind, reason, column


def _regular_file(path: Path, what: str) -> None:
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read the {what}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(mode):
        raise InputError(f"{path}: is a directory, not a {what}")
    if not stat.S_ISREG(mode):
        kind = "a FIFO" if stat.S_ISFIFO(mode) else "not a regular file"
        raise InputError(f"{path}: is {kind}; give the {what} as a regular file")


def read_text(path: str | os.PathLike[str], *, what: str = "file") -> str:
    """The text of a UTF-8 file (a byte-order mark is skipped).

    Args:
        path: The file.
        what: What the file is, for messages ("dataset", "online config", ...).

    Raises:
        InputError: Missing, a directory, not a regular file, unreadable, or not UTF-8
            (the message names the line and byte offset).
    """
    file = Path(path)
    _regular_file(file, what)
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise InputError(f"{file}: cannot read the {what}: {exc.strerror or exc}") from None
    skip = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    try:
        return data[skip:].decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = exc.start + skip
        line = data.count(b"\n", 0, offset) + 1
        reason = f"byte 0x{data[offset]:02x} at byte offset {offset} is not valid UTF-8"
        raise JsonInputError(
            f"{file}:{line}", f"{reason} (save the file as UTF-8)", kind="bad_encoding"
        ) from None


class _DuplicateKey(Exception):
    """A key given twice in one object (raised from inside the parser)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return found


@functools.cache
def _decoder(allow_non_finite: bool, unique_keys: bool) -> json.JSONDecoder:
    """One decoder per option set, made once: ``json.loads`` with options makes a new
    one for every text, which costs as much as parsing a short one."""
    hook = _unique_object if unique_keys else None
    if allow_non_finite:
        return json.JSONDecoder(object_pairs_hook=hook)
    return json.JSONDecoder(
        parse_constant=_reject_constant, parse_float=_finite_float, object_pairs_hook=hook
    )


def _reject_constant(token: str) -> Any:
    raise ValueError(f"{token} is not valid JSON (use null or a string)")


def _finite_float(token: str) -> float:
    value = float(token)
    if not math.isfinite(value):
        raise OverflowError(token)
    return value


def _position(text: str, index: int) -> tuple[int, int]:
    """1-based line and column of ``text[index]``."""
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def _where(source: str, text: str, index: int, line: int | None) -> tuple[str, int]:
    row, column = _position(text, index)
    at = f"{source}:{(line or 1) + row - 1}:{column}" if line else f"{source}:{row}:{column}"
    return at, column


def parse_json(
    text: str,
    *,
    source: str,
    line: int | None = None,
    allow_non_finite: bool = False,
    unique_keys: bool = True,
) -> Any:
    """Parse JSON text, refusing what cannot mean the same thing everywhere.

    Args:
        text: The JSON text (a whole file, or one line of a JSONL file).
        source: Where it came from, for messages (usually the file's path).
        line: The line ``text`` starts at, for one line of a JSONL file.
        allow_non_finite: Accept ``NaN``, ``Infinity`` and overflowing numbers (as
            float NaN and infinities): for traffic whose broken values are findings of
            the pipeline rather than input errors.
        unique_keys: Refuse a key given twice in one object. Off only for JSON texts
            an instrumentation wrote inside an attribute (the last value is kept).

    Raises:
        JsonInputError: ``source:line:column: invalid JSON: why``; or a NaN, an
            infinity, a number too large for a float, an integer too long to convert,
            a lone surrogate escape, a duplicate key, or nesting deeper than
            ``MAX_DEPTH``.
    """
    value = _fast_parse(text, unique_keys)
    if value is not _MISS:
        return value
    try:
        if text.startswith(_BOM):  # as json.loads says of a str that keeps its mark
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
        value = _decoder(allow_non_finite, unique_keys).decode(text)
    except _DuplicateKey as exc:
        found = _duplicate_key(text)
        column: int | None = None
        if found is not None:
            where, column = _where(source, text, found[1], line)
        else:
            where = f"{source}:{line}" if line else source
        key = found[0] if found is not None else exc.key
        reason = f"duplicate key {key!r} in one object (give each key once)"
        raise JsonInputError(where, reason, kind="duplicate_key", column=column) from None
    except json.JSONDecodeError as exc:
        where, column = _where(source, text, exc.pos, line)
        raise JsonInputError(
            where, f"invalid JSON: {exc.msg}", kind="invalid_json", column=column
        ) from None
    except OverflowError as exc:
        token = str(exc)
        where, column = _where(source, text, max(text.find(token), 0), line)
        reason = f"the number {token[:40]} is too large for a float (it would be infinite)"
        raise JsonInputError(where, reason, kind="not_finite", column=column) from None
    except RecursionError:
        where = f"{source}:{line}" if line else source
        reason = f"JSON nested deeper than {MAX_DEPTH} levels"
        raise JsonInputError(where, reason, kind="too_deep") from None
    except ValueError as exc:  # NaN / Infinity tokens, an int of over 4,300 digits
        long_integer = _long_integer(text)
        if long_integer is not None:
            start, digits = long_integer
            where, column = _where(source, text, start, line)
            reason = (
                f"the integer here has {digits:,} digits, more than the "
                f"{sys.get_int_max_str_digits():,} a number may have (write it as a string)"
            )
            raise JsonInputError(where, reason, kind="too_long", column=column) from None
        where = f"{source}:{line}" if line else source
        reason = "invalid JSON: " + " ".join(str(exc).split())[:120]
        raise JsonInputError(where, reason, kind="not_finite") from None
    _check_tree(value, text, source, line)
    return value


_MISS: Any = object()
"""What :func:`_fast_parse` answers when the exact reader must decide."""
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_RUN = b"0" * 19
_DIGIT_RUN = re.compile(rb"[0-9]{19}")
_MAX_REINDENTED = 64 * 1024
"""Largest text whose depth is read from it written again with an indent: each line of
that copy is indented twice its depth, so a text of leaves 254 levels deep (orjson's
limit) grows some 250 times; past this size the brackets are counted instead."""
_BEFORE_A_NUMBER = tuple(bytes([code]) + _LONG_RUN for code in b":,[- \t\n\r")
_ESCAPED_COLONS = (b"\\u003a", b"\\u003A")
_WHITESPACE = b" \t\n\r"


def _fast_parse(text: str, unique_keys: bool) -> Any:
    """``text`` parsed by orjson, when that gives exactly what the standard reader gives
    and the text passes every check; else :data:`_MISS` (the exact reader then parses it,
    accepting or naming the problem as it always has).

    orjson refuses NaN, infinities, overflowing numbers, every lone surrogate escape,
    control characters in strings and nesting past 1,024 levels, and its values equal the
    standard reader's but for two things; these and the depth are checked here with a few
    C-speed passes over the bytes (linear in the text):

    - the depth: a text with more brackets than :data:`MAX_DEPTH` is written again with an
      indent of two spaces, where a line indented by ``2 * MAX_DEPTH`` spaces exists
      whenever the nesting goes deeper (strings hold no raw newline); a text of over
      :data:`_MAX_REINDENTED` bytes, whose copy could be too large, has its brackets
      counted by :func:`_nested_deeper_than` instead;
    - when the value written compactly is the text itself (what machine writers produce),
      it holds no repeated key and no number changed kind: done;
    - else an integer of 19 digits or more may have come back as a float: a run of 19
      digits after a character that may begin a number sends the text to the exact
      reader; and a key given twice keeps its last value without a word: a tree without
      repeated keys has as many ``:`` written again as the text (``\\u003a`` escapes
      counted), a repeated key loses at least its own, so a difference sends the text to
      the exact reader too (which names the key).
    """
    if orjson is None or text.startswith(_BOM):
        return _MISS
    try:
        raw = text.encode("utf-8")
        value = orjson.loads(raw)
        # Nesting past MAX_DEPTH takes two brackets a level.
        if len(raw) > 2 * MAX_DEPTH and raw.count(b"[") + raw.count(b"{") > MAX_DEPTH:
            if len(raw) > _MAX_REINDENTED:
                if _nested_deeper_than(raw, MAX_DEPTH):
                    return _MISS
            elif _DEEP_INDENT in orjson.dumps(value, option=orjson.OPT_INDENT_2):
                return _MISS
        long_run = _DIGIT_RUN.search(raw) is not None
        if not (long_run or unique_keys):
            return value
        compact = orjson.dumps(value)
    except (UnicodeEncodeError, orjson.JSONDecodeError, orjson.JSONEncodeError):
        return _MISS  # a lone surrogate in the str, invalid JSON, or deeper than orjson goes
    if compact == raw.strip(_WHITESPACE):
        return value
    if long_run:
        digits = b" " + raw.translate(_DIGITS_AS_ZERO)  # a number may begin the text
        if any(run in digits for run in _BEFORE_A_NUMBER):
            return _MISS
    if unique_keys:
        colons = raw.count(b":")
        if b"\\u003" in raw:
            colons += sum(raw.count(escape) for escape in _ESCAPED_COLONS)
        if compact.count(b":") != colons:
            return _MISS
    return value


def _long_integer(text: str) -> tuple[int, int] | None:
    """Start and digit count of the first integer too long for ``int()``, if any."""
    limit = sys.get_int_max_str_digits()
    if not limit:
        return None
    # Outside strings a run of digits is a number; a string holding one is skipped whole.
    for match in re.finditer(rf'"(?:[^"\\]|\\.)*"|-?\d{{{limit + 1},}}', text):
        if not match.group(0).startswith('"'):
            return match.start(), len(match.group(0).lstrip("-"))
    return None


def _duplicate_key(text: str) -> tuple[str, int] | None:
    """A key given twice in one object of valid-but-for-that JSON, with the offset of its
    second occurrence; None when none is found. Re-scans the text container by
    container, so it runs only on this error path."""
    decoder = json.JSONDecoder()
    space = re.compile(r"[ \t\n\r]*")

    def skip(at: int) -> int:
        return space.match(text, at).end()  # type: ignore[union-attr]  # `*` matches

    pending = [skip(0)]
    try:
        while pending:
            pos = pending.pop(0)
            is_object = text[pos] == "{"
            seen: set[str] = set()
            pos = skip(pos + 1)
            while text[pos] not in "]}":
                if is_object:
                    key, after = decoder.raw_decode(text, pos)
                    if key in seen:
                        return key, pos
                    seen.add(key)
                    pos = skip(skip(after) + 1)  # past the ':'
                if text[pos] in "{[":
                    pending.append(pos)
                _, pos = decoder.raw_decode(text, pos)
                pos = skip(pos)
                if text[pos] == ",":
                    pos = skip(pos + 1)
    except (ValueError, IndexError, RecursionError):
        return None
    return None


_STRUCTURE = bytes.maketrans(b"[{]}", b"(())")
"""Opening brackets as ``(``, closing ones as ``)``: nesting does not need their kind."""
_NOT_STRUCTURE = bytes(code for code in range(256) if code not in b'"[]{}')
_PEEL_ROUNDS = 16
_STEP = {ord("("): 1, ord(")"): -1}


def _nested_deeper_than(text: str | bytes, limit: int) -> bool:
    """Whether the arrays and objects of valid JSON ``text`` nest deeper than ``limit``.

    Read from the text (its UTF-8 bytes), not the parsed tree, with byte operations that
    run in C: the escapes that hide a quote are dropped, everything but quotes and
    brackets is dropped (the brackets made ``(`` and ``)``), the rest is split at its
    quotes (every other piece is a string's content), and what is left is the document's
    brackets, paired (the text being valid JSON). Each round of removing every ``()``
    peels exactly one level; past :data:`_PEEL_ROUNDS` rounds the depth left is read as
    the highest running sum (+1 opening, -1 closing). A wide document costs a few scans,
    never a walk of every value.
    """
    raw = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return False
    if b"\\" in raw:  # an escaped backslash, then an escaped quote: neither ends a string
        raw = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    brackets = b"".join(raw.translate(_STRUCTURE, _NOT_STRUCTURE).split(b'"')[0::2])
    for peeled in range(min(limit, _PEEL_ROUNDS)):
        if not brackets:
            return False
        if len(brackets) <= 2 * (limit - peeled):  # too short to be deeper
            return False
        brackets = brackets.replace(b"()", b"")
    left = limit - min(limit, _PEEL_ROUNDS)
    return max(itertools.accumulate(map(_STEP.__getitem__, brackets)), default=0) > left


def _check_tree(value: Any, text: str, source: str, line: int | None) -> None:
    """Depth (from the text) and lone surrogates (walking strings only when the text
    holds a surrogate escape)."""
    if _nested_deeper_than(text, MAX_DEPTH):
        where = f"{source}:{line}" if line else source
        raise JsonInputError(where, f"JSON nested deeper than {MAX_DEPTH} levels", kind="too_deep")
    if "\\u" not in text or _SURROGATE_ESCAPE.search(text) is None:
        return
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if not _encodable(item):
                where, reason, column = _surrogate_message(text, source, line)
                raise JsonInputError(where, reason, kind="surrogate", column=column)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _surrogate_message(text: str, source: str, line: int | None) -> tuple[str, str, int | None]:
    for match in _SURROGATE_ESCAPE.finditer(text):
        escape = match.group(0)
        pair = text[match.end() : match.end() + 6]
        high = int(escape[2:], 16) < 0xDC00
        paired = high and re.fullmatch(r"\\u[dD][c-fC-F][0-9a-fA-F]{2}", pair) is not None
        preceded = text[max(0, match.start() - 6) : match.start()]
        closes = not high and re.fullmatch(r"\\u[dD][89abAB][0-9a-fA-F]{2}", preceded) is not None
        if not (paired or closes):
            where, column = _where(source, text, match.start(), line)
            reason = (
                f"the escape {escape} is a lone UTF-16 surrogate, not a character "
                "(JSON text must be valid Unicode)"
            )
            return where, reason, column
    where = f"{source}:{line}" if line else source
    return where, "a string holds a lone UTF-16 surrogate (JSON text must be valid Unicode)", None


def parse_json_line(
    raw: bytes | str,
    *,
    source: str,
    line: int,
    allow_non_finite: bool = False,
    unique_keys: bool = True,
) -> Any:
    """One line of a JSONL stream: decoded (UTF-8, a BOM on line 1 skipped) and parsed.

    The line's end (``\\n`` or ``\\r\\n``) is not part of the JSON, so an error at the
    end of the line is reported at its real column.

    Raises:
        JsonInputError: As :func:`parse_json`, or ``bad_encoding`` for bytes that are
            not UTF-8.
    """
    if isinstance(raw, bytes):
        body = raw.rstrip(b"\r\n")
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            reason = f"byte 0x{body[exc.start]:02x} at byte {exc.start} is not valid UTF-8"
            raise JsonInputError(
                f"{source}:{line}", reason, kind="bad_encoding", column=exc.start + 1
            ) from None
    else:
        text = raw.rstrip("\r\n")
    if line == 1:
        text = text.removeprefix(_BOM)
    return parse_json(
        text,
        source=source,
        line=line,
        allow_non_finite=allow_non_finite,
        unique_keys=unique_keys,
    )


def read_json_file(path: str | os.PathLike[str], *, what: str = "JSON file") -> Any:
    """Read and parse a whole JSON file (see :func:`read_text` and :func:`parse_json`).

    Raises:
        InputError: The file is missing, not a regular file, not UTF-8, or not valid JSON.
    """
    file = Path(path)
    return parse_json(read_text(file, what=what), source=str(file))


def iter_json_lines(text: str, *, source: str) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` for each non-blank line of JSONL text, in order.

    Raises:
        JsonInputError: A line is not valid JSON (see :func:`parse_json`).
    """
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            yield number, parse_json(line.rstrip("\r"), source=source, line=number)


def parse_scalar(cell: str) -> Any:
    """The JSON scalar a text reads as (``12``, ``true``, ``null``), else the text."""
    try:
        value = json.loads(cell, parse_constant=_reject_constant, parse_float=_finite_float)
    except (ValueError, OverflowError, RecursionError):
        return cell
    return value if value is None or isinstance(value, bool | int | float) else cell


def json_type(value: Any) -> str:
    """The JSON name of a parsed value's type (object, array, string, ...)."""
    names = {dict: "object", list: "array", str: "string", int: "number", float: "number"}
    return {type(None): "null", bool: "boolean", **names}.get(type(value), type(value).__name__)
