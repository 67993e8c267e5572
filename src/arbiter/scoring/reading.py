"""What the built-in scorers read: the output's text or JSON, the example's reference.

Shared by the deterministic scorers so they read an output the same way and say the
same thing when something is missing. Untrusted text quoted in an explanation is
clipped (:func:`quoted`) and shown as a Python literal, so it stays on one line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue

from arbiter.contract import Example, Output
from arbiter.errors import MissingField
from arbiter.systems.base import lookup_path

__all__ = [
    "MAX_QUOTED",
    "Missing",
    "follow_path",
    "json_kind",
    "output_json",
    "quoted",
    "reference_texts",
]

MAX_QUOTED = 120
"""Characters of an output or reference quoted in an explanation."""


@dataclass(frozen=True)
class Missing:
    """Why something a scorer reads is not there."""

    reason: str
    """One line, e.g. "the example has no expected text"."""


def quoted(text: str, limit: int = MAX_QUOTED) -> str:
    """``text`` as a one-line literal, clipped to ``limit`` characters (``'Paris'``)."""
    if len(text) > limit:
        return repr(text[:limit]) + f" [... {len(text) - limit:,} more]"
    return repr(text)


def json_kind(value: object) -> str:
    """The JSON name of a value's type: ``a number``, ``an object``, ``null``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a text"
    if isinstance(value, list):
        return "a list"
    return "an object"


def reference_texts(example: Example) -> list[str] | Missing:
    """The reference answers a text scorer compares with, or why there are none.

    ``expected`` when it is a text or a non-empty list of texts (acceptable answers),
    else ``expected_label``.
    """
    expected = example.expected
    if expected is None:
        if example.expected_label is not None:
            return [example.expected_label]
        return Missing("the example has no expected text")
    if isinstance(expected, str):
        return [expected]
    if isinstance(expected, list) and expected and all(isinstance(e, str) for e in expected):
        return [e for e in expected if isinstance(e, str)]
    if isinstance(expected, list):
        return Missing("the example's expected is a list, but not a non-empty list of texts")
    return Missing(f"the example's expected is {json_kind(expected)}, not a text")


def output_json(output: Output) -> JsonValue | Missing:
    """The JSON an output carries: ``raw`` when set, else its text parsed as JSON.

    The text may be wrapped in one Markdown code fence (```` ```json ... ``` ````), as
    models often answer; text around a fence is not JSON.
    """
    if output.raw is not None:
        return output.raw
    text = output.answer_text
    if text is None:
        return Missing("the output has neither JSON nor a text")
    body = _unfenced(text.strip())
    try:
        return json.loads(body)  # type: ignore[no-any-return]
    except RecursionError:
        return Missing("the output is not JSON: it is nested too deeply")
    except ValueError as exc:  # JSONDecodeError, or an integer too long to convert
        reason = getattr(exc, "msg", None) or str(exc)
        where = f" at character {exc.pos}" if isinstance(exc, json.JSONDecodeError) else ""
        return Missing(f"the output is not JSON: {reason}{where}")


def _unfenced(text: str) -> str:
    """The inside of one Markdown code fence around the whole text, else the text."""
    if not (text.startswith("```") and text.endswith("```") and len(text) >= 6):
        return text
    first_line, newline, rest = text[3:-3].partition("\n")
    if not newline:  # ```{...}``` on one line: no info string to drop
        return first_line
    info = first_line.strip()
    return rest if not info or info.isidentifier() else text[3:-3]


def follow_path(document: Any, path: str, what: str) -> Any:
    """The value at a dotted path (``result.items.0.total``), or why there is none.

    Keys are separated by dots and an integer segment indexes a list, as the HTTP
    system's ``--label-path``.
    """
    try:
        return lookup_path(document, path)
    except MissingField:
        return Missing(f"{what} has no value at {path!r}")
