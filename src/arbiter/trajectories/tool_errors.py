"""Whether a recorded tool result says the tool failed: the shapes providers and frameworks write.

A chat log has no one field for a failed tool call: each provider and agent framework
writes failure its own way, on the tool message or inside the result it carries.
:func:`tool_error` recognises these, and gives the failure's text:

- on the message: ``is_error: true`` (Anthropic's ``tool_result`` blocks), ``isError:
  true`` (an MCP tool result), ``error: true`` or an error text (τ²-bench), or a
  ``status`` of ``error`` (LangChain's ``ToolMessage``);
- in a result that is an object (or a JSON text of one): an ``error`` key that is set
  (``{"error": "timeout"}``, ``{"error": {"message": ...}}``), ``is_error`` /
  ``isError`` true, ``success: false`` or ``ok: false``, or a ``status`` of ``error``,
  ``failed``, ``failure``, ``exception`` or ``timeout`` beside a ``message``,
  ``detail``, ``reason`` or ``error`` (an envelope: a record whose own status field
  says ``failed``, an order's say, is not the tool failing);
- a result text that starts with ``Error:`` (what τ-bench's environments and
  LangChain's tool node write for an exception the tool raised).

Anything else is a result: an empty one, ``null`` and ``{"error": null}`` included.
The work is linear in the result's size (a JSON text is parsed once, only when it
starts like an object).
"""

from __future__ import annotations

import json
from typing import Any

from arbiter.contract.trajectory import MAX_TEXT_CHARS

__all__ = ["ERROR_STATUSES", "tool_error"]

ERROR_STATUSES = frozenset({"error", "failed", "failure", "exception", "timeout"})
"""``status`` values that mean the call failed (compared case-insensitively)."""

_ENVELOPE_KEYS = ("message", "detail", "reason", "error")
_FLAG_KEYS = ("is_error", "isError")
_GENERIC = "the tool reported an error"


def tool_error(result: Any, *, message: dict[str, Any] | None = None) -> str | None:
    """The failure a tool result reports, as text; None when it reports none.

    Args:
        result: What the tool returned: a text (maybe JSON), or a decoded value.
        message: The tool message that carried it, for the fields frameworks set there.
    """
    if message is not None:
        found = _flagged(message, result)
        if found is not None:
            return found
    value = _decoded(result)
    if isinstance(value, dict):
        return _from_object(value, result)
    if isinstance(result, str) and result.startswith("Error:"):
        return _clip(result)
    return None


def _flagged(message: dict[str, Any], result: Any) -> str | None:
    """A failure the tool message itself states."""
    if any(message.get(key) is True for key in _FLAG_KEYS):
        return _text_of(result)
    error = message.get("error")
    if error is True:
        return _text_of(result)
    if isinstance(error, str) and error.strip():
        return _clip(error)
    status = message.get("status")
    if isinstance(status, str) and status.lower() in ERROR_STATUSES:
        return _text_of(result)
    return None


def _decoded(result: Any) -> Any:
    """The result as a value: a JSON text of an object decoded, anything else as it is."""
    if not isinstance(result, str):
        return result
    head = result.lstrip()[:1]
    if head != "{":
        return result
    try:
        return json.loads(result)
    except (ValueError, RecursionError):
        return result


def _from_object(value: dict[str, Any], raw: Any) -> str | None:
    error = value.get("error")
    if error is not None and error is not False and error != "" and error != {}:
        return _describe(error, value)
    if any(value.get(key) is True for key in _FLAG_KEYS):
        return _describe(value.get("message") or value.get("content"), value)
    if value.get("success") is False or value.get("ok") is False:
        return _describe(value.get("message") or value.get("detail"), value)
    status = value.get("status")
    if (
        isinstance(status, str)
        and status.lower() in ERROR_STATUSES
        and any(value.get(key) for key in _ENVELOPE_KEYS)
    ):
        detail = next(value[key] for key in _ENVELOPE_KEYS if value.get(key))
        return _describe(detail, value)
    return None


def _describe(detail: Any, whole: dict[str, Any]) -> str:
    """The failure's text: its message when it has one, else the object as JSON."""
    if isinstance(detail, str) and detail.strip():
        return _clip(detail)
    if isinstance(detail, dict):
        inner = detail.get("message")
        if isinstance(inner, str) and inner.strip():
            return _clip(inner)
        return _clip(json.dumps(detail, ensure_ascii=False, default=str))
    if detail is True or detail is None:
        return _clip(json.dumps(whole, ensure_ascii=False, default=str))
    return _clip(json.dumps(detail, ensure_ascii=False, default=str))


def _text_of(result: Any) -> str:
    if isinstance(result, str) and result.strip():
        return _clip(result)
    if result is None or result == "":
        return _GENERIC
    return _clip(json.dumps(result, ensure_ascii=False, default=str))


def _clip(text: str) -> str:
    return text if len(text) <= MAX_TEXT_CHARS else text[: MAX_TEXT_CHARS - 1] + "…"
