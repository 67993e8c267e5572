"""Reading JSON input files with one-line errors: shared by every loader of ours."""

from __future__ import annotations

import codecs
import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from arbiter.errors import InputError

__all__ = ["describe_validation_error", "json_type", "loads_json", "read_utf8"]


def read_utf8(file: Path) -> str:
    """The file's text; a UTF-8 BOM is skipped, invalid bytes are an ``InputError``."""
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise InputError(f"{file}: cannot read: {exc.strerror or exc}") from None
    skip = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        return data[skip:].decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = exc.start + skip
        line = data.count(b"\n", 0, offset) + 1
        reason = f"byte 0x{data[offset]:02x} at byte offset {offset} is not valid UTF-8"
        raise InputError(f"{file}:{line}: {reason} (save the file as UTF-8)") from None


def _reject_constant(token: str) -> Any:
    raise ValueError(f"{token} is not valid JSON (use null or a string)")


def loads_json(file: Path, text: str, line: int | None = None) -> Any:
    """Parse JSON text from ``file`` (at ``line`` for JSONL); NaN and Infinity refused.

    Raises:
        InputError: ``file:line:column: invalid JSON: why``.
    """
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{file}:{line or exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}"
        ) from None
    except ValueError as exc:  # NaN / Infinity, refused by _reject_constant
        raise InputError(f"{file}{f':{line}' if line else ''}: invalid JSON: {exc}") from None


def parse_scalar(cell: str) -> Any:
    """The JSON scalar a text reads as (``12``, ``true``, ``null``), else the text."""
    try:
        value = json.loads(cell, parse_constant=_reject_constant)
    except ValueError:
        return cell
    return value if value is None or isinstance(value, bool | int | float) else cell


def json_type(value: Any) -> str:
    """The JSON name of a parsed value's type (object, array, string, ...)."""
    names = {dict: "object", list: "array", str: "string", int: "number", float: "number"}
    return {type(None): "null", bool: "boolean", **names}.get(type(value), type(value).__name__)


def describe_validation_error(exc: ValidationError) -> str:
    """``field 'a.b': why (and N more)`` from pydantic's first error."""
    errors = exc.errors(include_url=False)
    loc = ".".join(str(part) for part in errors[0]["loc"])
    message = " ".join(errors[0]["msg"].split())
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return (f"field {loc!r}: {message}" if loc else message) + more
