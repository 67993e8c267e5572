"""The one seam between Arbiter and a system under test.

A system under test is anything with ``async __call__(input: dict) -> Prediction``.
Adapters that hold a connection also implement ``__aenter__`` / ``__aexit__``; the
runner enters them once per run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from arbiter.contract import Prediction
from arbiter.errors import InputError, InvalidSystemResponse, MissingField

__all__ = ["ResponseMapping", "SystemUnderTest", "check_headers", "lookup_path"]


@runtime_checkable
class SystemUnderTest(Protocol):
    """Anything that turns one example input into a prediction.

    Two optional attributes let the runner do less work per call (it reads them with
    ``getattr``, so a system without them is fine): ``call_timeout`` — every call ends
    within this many seconds, so the runner sets no timer of its own when it is within
    the run's timeout; ``always_suspends`` — every call waits on I/O, so the runner
    need not yield after it to let the writer store results.
    """

    async def __call__(self, input: dict[str, Any]) -> Prediction:
        """Predict for one input; raise a ``SystemUnderTestError`` on failure."""
        ...


_MISSING = object()


def check_headers(headers: Mapping[str, str], *, url_has_credentials: bool, owner: str) -> None:
    """Refuse headers that would make every call fail, before any call is made.

    Args:
        headers: The extra request headers.
        url_has_credentials: The URL carries ``user:password@``.
        owner: The system's kind, for messages.

    Raises:
        InputError: A name or value holds CR or LF (header injection), a name is empty,
            or credentials are given twice (in the URL and as an Authorization header).
    """
    for name, value in headers.items():
        if not name.strip() or any(c in name for c in "\r\n:"):
            raise InputError(f"{owner}: header name {name!r} is not a valid header name")
        if "\r" in value or "\n" in value or "\x00" in value:
            raise InputError(
                f"{owner}: the value of header {name!r} holds a line break; a header value "
                "is one line"
            )
    if url_has_credentials and any(name.lower() == "authorization" for name in headers):
        raise InputError(
            f"{owner}: credentials are given twice, in the URL (user:password@) and in an "
            "Authorization header; give them once"
        )


def lookup_path(document: Any, path: str) -> Any:
    """Follow a dotted path (``result.items.0.label``) through dicts and lists.

    Args:
        document: Parsed JSON.
        path: Keys separated by dots; an integer segment indexes a list.

    Returns:
        The value found.

    Raises:
        MissingField: When any segment is absent.
    """
    current: Any = document
    for segment in path.split("."):
        if isinstance(current, Mapping):
            current = current.get(segment, _MISSING)
        elif isinstance(current, list) and segment.lstrip("-").isdigit():
            index = int(segment)
            current = current[index] if -len(current) <= index < len(current) else _MISSING
        else:
            current = _MISSING
        if current is _MISSING:
            raise MissingField(f"the response has no field {path!r}")
    return current


class ResponseMapping(BaseModel):
    """Where label, confidence and id live in a system's JSON answer."""

    label: str = "label"
    """Dotted path of the label; its value is turned into a string."""
    confidence: str | None = "confidence"
    """Dotted path of the confidence, or None when the system gives none."""
    id: str | None = None
    """Dotted path of the system's own id for the answer, if any."""
    label_values: dict[str, str] = Field(default_factory=dict)
    """Optional renaming of raw label values (e.g. ``{"nominal": "ok"}``)."""

    def to_prediction(self, document: Any) -> Prediction:
        """Map one parsed answer into a ``Prediction``.

        Raises:
            MissingField: A mapped field is absent (the confidence path is optional
                when the answer has no such field).
            InvalidSystemResponse: A field has the wrong type.
        """
        if not isinstance(document, dict):
            raise InvalidSystemResponse(f"expected a JSON object, got {type(document).__name__}")
        raw_label = lookup_path(document, self.label)
        if raw_label is None or isinstance(raw_label, (dict, list)):
            raise InvalidSystemResponse(f"field {self.label!r} is not a label: {raw_label!r}"[:200])
        label = str(raw_label)
        label = self.label_values.get(label, label)
        confidence: float | None = None
        if self.confidence is not None:
            try:
                value = lookup_path(document, self.confidence)
            except MissingField:
                value = None
            if value is not None:
                confidence = _as_confidence(value, self.confidence)
        ident = "" if self.id is None else str(lookup_path(document, self.id))
        return Prediction(id=ident, raw_output=document, label=label, confidence=confidence)


def _as_confidence(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidSystemResponse(f"field {path!r} is not a number: {value!r}"[:200])
    number = float(value)
    if math.isnan(number) or not 0.0 <= number <= 1.0:
        raise InvalidSystemResponse(f"field {path!r} is outside [0, 1]: {number}")
    return number
