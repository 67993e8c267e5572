"""Tool calls as the tool scorers compare them: canonical arguments, bounded quotes.

Two calls are *identical* when their names are equal and their arguments have the
same canonical JSON: keys sorted, no whitespace, and a float with an integral value
written as the integer (a model's ``1.0`` is the case's ``1``). Booleans stay booleans.

Everything here reads untrusted trace data: arguments may be any JSON (None, a
string, a huge object), so each is canonicalised once, in time linear in its size,
and only a bounded prefix of it is ever quoted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from arbiter.errors import InputError
from arbiter.scoring.json_writer import json_writer

__all__ = [
    "MAX_LISTED",
    "TOOL_CLASSES",
    "ComparedCall",
    "canonical_json",
    "clip",
    "listed",
    "quote_call",
    "string_list",
]

TOOL_CLASSES = frozenset({"tool_enabled", "conversation_with_tools", "genie"})
"""The agent classes that call tools (the reference's "tool classes")."""

MAX_LISTED = 5
"""Most items an explanation names before it says how many more there are."""

_QUOTE_NAME = 100
_QUOTE_ARGUMENTS = 160
_SAFE_INTEGER = 2**53


_CANONICAL = json_writer(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
"""``json.dumps`` with the canonical options, its encoder made once."""


def canonical_json(value: Any) -> str:
    """``value`` as canonical JSON: sorted keys, compact, integral floats as integers.

    A value JSON cannot write (a non-finite float from a hand-built object) is written
    as its ``repr``, so two such values compare by what they are and nothing raises.
    """
    if value is None or isinstance(value, bool):
        return "true" if value is True else "false" if value is False else "null"
    try:
        kind = type(value)
        if kind is str:  # the common argument value: its JSON string, nothing to rewrite
            return _CANONICAL(value)
        if kind is int:  # as json writes an int (too many digits raise ValueError alike)
            return int.__repr__(value)
        text = _CANONICAL(value)
        # JSON writes an integral float below 2**53 as "3.0": without ".0" in the text
        # there is none to rewrite, and the walk below is skipped (the common case).
        if ".0" not in text:
            return text
        return _CANONICAL(_normalised(value))
    except (TypeError, ValueError, RecursionError):
        return f"<unserialisable {type(value).__name__}>"


def _normalised(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, str | int):
        return value
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer() and abs(value) < _SAFE_INTEGER:
            return int(value)
        return value
    if isinstance(value, Mapping):
        return {str(key): _normalised(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_normalised(item) for item in value]
    return value


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, an ellipsis marking the cut."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def quote_call(name: str, arguments: Any, *, canonical: str | None = None) -> str:
    """A call as ``name(canonical arguments)``, both parts bounded in length.

    ``canonical`` is the arguments' canonical JSON when the caller has it already.
    """
    shown = canonical if canonical is not None else canonical_json(arguments)
    return f"{clip(name, _QUOTE_NAME)}({clip(shown, _QUOTE_ARGUMENTS)})"


def listed(items: list[str], total: int | None = None) -> str:
    """Up to :data:`MAX_LISTED` items joined by ``, `` and how many were left out.

    ``total`` is how many there are when ``items`` holds only the first few.
    """
    shown = ", ".join(items[:MAX_LISTED])
    rest = (len(items) if total is None else total) - min(len(items), MAX_LISTED)
    return f"{shown} (+{rest} more)" if rest > 0 else shown


def string_list(
    assertions: Mapping[str, Any],
    key: str,
    *,
    expected: str = "a tool name or a list of tool names",
    non_empty: bool = False,
) -> list[str] | None:
    """The case's assertion ``key`` as a list of strings; None when the case has none.

    A single string is read as a list of one.

    Args:
        assertions: The case's assertions.
        key: The assertion.
        expected: What it must be, for the message.
        non_empty: Refuse empty strings (and say which value was given).

    Raises:
        InputError: The assertion is neither a string nor a list of strings.
    """
    value = assertions.get(key)
    if value is None:
        return None
    items = [value] if isinstance(value, str) else value
    if isinstance(items, list) and all(
        isinstance(item, str) and (item or not non_empty) for item in items
    ):
        return list(items)
    shown = f", got {value!r}" if non_empty else ""
    raise InputError(f"assertion {key!r} must be {expected}{shown}")


class ComparedCall:
    """A tool call (the agent's or an expected one) as matching compares it.

    Its canonical arguments are worked out on first use and kept: a call whose tool
    no expected call names is never canonicalised at all.
    """

    __slots__ = ("_canonical", "_fields", "arguments", "name")

    def __init__(self, name: str, arguments: Any) -> None:
        self.name = name
        self.arguments = arguments
        self._canonical: str | None = None
        self._fields: dict[str, str] | None = None

    @classmethod
    def of(cls, name: str, arguments: Any) -> ComparedCall:
        """The call of tool ``name`` with ``arguments`` (any JSON)."""
        return cls(name, arguments)

    @property
    def canonical(self) -> str:
        """The arguments as canonical JSON."""
        if self._canonical is None:
            self._canonical = canonical_json(self.arguments)
        return self._canonical

    @property
    def fields(self) -> Mapping[str, str] | None:
        """Top-level argument key to its canonical value; None unless an object."""
        if not isinstance(self.arguments, dict):
            return None
        if self._fields is None:
            self._fields = {key: canonical_json(value) for key, value in self.arguments.items()}
        return self._fields

    @property
    def quote(self) -> str:
        """The call as ``name(arguments)``, bounded for an explanation."""
        return quote_call(self.name, self.arguments, canonical=self.canonical)
