"""One table from HTTP-client failures and error statuses to Arbiter's exception tree.

Every outbound call (:class:`~arbiter.http.client.HttpClient` on httpx or aiohttp, and
the httpx2 client of :mod:`arbiter.http.sdk`) goes through :func:`map_exceptions` and
:func:`status_error`, so a refused connection, a timeout, a body cut off or a 429 reads
the same way whoever made the call. The *side* says whose error it is: the system under
test's (``SystemUnderTestError`` subclasses) or a provider's (``ProviderError``
subclasses: LLMs, embedders, vector stores).

The table lists the client libraries' exception types by name and is built from the
libraries already imported, so mapping an error never imports a client library.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from enum import Enum
from typing import Any, Literal

from arbiter.datasets.jsonio import JsonInputError, parse_json
from arbiter.errors import (
    ArbiterError,
    InvalidResponse,
    InvalidSystemResponse,
    ProviderAuthError,
    ProviderError,
    ProviderTimeout,
    ProviderUnavailable,
    RateLimited,
    SystemHTTPError,
    SystemTimeout,
    SystemUnderTestError,
    SystemUnreachable,
)
from arbiter.http.redact import redact

__all__ = [
    "Failure",
    "Side",
    "body_too_large",
    "error_document",
    "map_exceptions",
    "not_json",
    "service_message",
    "snippet",
    "status_error",
    "transport_error",
]

Side = Literal["system", "provider"]
"""Whose error a failed call is: the system under test's, or a provider's."""

SNIPPET_CHARS = 200
"""Longest excerpt of a service's text kept in a message."""


class Failure(Enum):
    """What went wrong below HTTP, whatever the client library."""

    TIMEOUT = "no answer within {timeout}"
    UNREACHABLE = "unreachable: {reason}"
    BROKEN = "the answer broke off: {reason}"
    UNDECODABLE = "undecodable body: {reason}"


# (module, exception class name, failure), most specific first; a module not imported yet
# cannot have raised, so its rows are skipped.
_TABLE: tuple[tuple[str, str, Failure], ...] = (
    ("builtins", "TimeoutError", Failure.TIMEOUT),  # asyncio.timeout; aiohttp's timeouts too
    ("httpx", "TimeoutException", Failure.TIMEOUT),
    ("httpx2", "TimeoutException", Failure.TIMEOUT),
    ("httpx", "DecodingError", Failure.UNDECODABLE),
    ("httpx", "RemoteProtocolError", Failure.BROKEN),
    ("httpx", "TransportError", Failure.UNREACHABLE),
    ("httpx", "InvalidURL", Failure.UNREACHABLE),
    ("httpx", "HTTPError", Failure.UNREACHABLE),
    ("httpx2", "DecodingError", Failure.UNDECODABLE),
    ("httpx2", "RemoteProtocolError", Failure.BROKEN),
    ("httpx2", "TransportError", Failure.UNREACHABLE),
    ("aiohttp.http_exceptions", "ContentEncodingError", Failure.UNDECODABLE),
    ("aiohttp", "ClientPayloadError", Failure.BROKEN),
    ("aiohttp", "ClientError", Failure.UNREACHABLE),
    ("builtins", "OSError", Failure.UNREACHABLE),
)

_CLASSES: dict[Side, dict[Failure, type[ArbiterError]]] = {
    "system": {
        Failure.TIMEOUT: SystemTimeout,
        Failure.UNREACHABLE: SystemUnreachable,
        Failure.BROKEN: SystemUnreachable,
        Failure.UNDECODABLE: InvalidSystemResponse,
    },
    "provider": {
        Failure.TIMEOUT: ProviderTimeout,
        Failure.UNREACHABLE: ProviderUnavailable,
        Failure.BROKEN: ProviderUnavailable,
        Failure.UNDECODABLE: InvalidResponse,
    },
}


def _classify(exc: BaseException) -> Failure | None:
    # aiohttp wraps a bad gzip body in ClientPayloadError; the cause tells it apart.
    candidates = [exc.__cause__, exc] if exc.__cause__ is not None else [exc]
    for module_name, class_name, failure in _TABLE:
        module = sys.modules.get(module_name)
        kind = getattr(module, class_name, None) if module is not None else None
        if isinstance(kind, type) and any(isinstance(c, kind) for c in candidates):
            return failure
    return None


def snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    """``text`` on one line, at most ``limit`` characters."""
    return " ".join(text.split())[:limit]


def _reason(exc: BaseException) -> str:
    """The library's own wording, on one line, without the status and URL some add."""
    cause = exc.__cause__
    message = getattr(cause, "message", None) if cause is not None else None
    if not isinstance(message, str):
        message = getattr(exc, "message", None)
    text = message if isinstance(message, str) and message else str(exc)
    return snippet(text) or type(exc).__name__


def transport_error(
    side: Side,
    where: str,
    exc: BaseException,
    *,
    timeout: float | None = None,
    secrets: tuple[str | None, ...] = (),
) -> ArbiterError | None:
    """Our error for a client library's exception, or None when the table does not know it.

    Args:
        side: Whose error it is.
        where: What was called, e.g. ``POST http://host/ingest`` or ``openai gpt-4o at https://api...``.
        exc: The library's exception.
        timeout: The call's time limit, named in a timeout's message.
        secrets: Values redacted from the message.
    """
    failure = _classify(exc)
    if failure is None:
        return None
    limit = f"{timeout:g}s" if timeout is not None else "the time limit"
    phrase = failure.value.format(timeout=limit, reason=_reason(exc))
    return _CLASSES[side][failure](redact(f"{where}: {phrase}", secrets))


@contextmanager
def map_exceptions(
    side: Side,
    where: str,
    *,
    timeout: float | None = None,
    secrets: tuple[str | None, ...] = (),
) -> Iterator[None]:
    """Convert client-library exceptions raised in the block into ours (see the table).

    Our own errors pass through untouched; an exception the table does not know is a
    bug and propagates as it is.
    """
    try:
        yield
    except ArbiterError:
        raise
    except Exception as exc:
        error = transport_error(side, where, exc, timeout=timeout, secrets=secrets)
        if error is None:
            raise
        raise error from None


def service_message(body: bytes | str, fallback: str = "") -> str:
    """The explanation in an error body: a JSON error's message, else the text, one line.

    Understands ``{"error": {"message": ...}}`` (OpenAI, Anthropic, Gemini, llama.cpp),
    ``{"error": "..."}`` (Ollama, Upstash), ``{"detail": ...}`` (FastAPI, also its list
    of validation errors) and ``{"message": ...}``.
    """
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    document = error_document(text)
    if isinstance(document, dict):
        for key in ("error", "detail", "message"):
            found = _message_in(document.get(key))
            if found:
                return snippet(found)
    return snippet(text) or fallback


def error_document(text: str) -> Any:
    """The JSON document of an error answer (by the one JSON reader), or None when the
    body is not JSON at all."""
    if not text.strip():
        return None
    try:
        return parse_json(text, source="answer")
    except JsonInputError:
        return None


def _message_in(value: Any) -> str | None:
    if isinstance(value, str):
        return value if value.strip() else None
    if isinstance(value, dict):
        return _message_in(value.get("message") or value.get("msg"))
    if isinstance(value, list) and value:
        return _message_in(value[0])
    return None


def status_error(
    side: Side,
    where: str,
    status: int,
    message: str,
    *,
    retry_after: float | None = None,
    secrets: tuple[str | None, ...] = (),
) -> ArbiterError:
    """Our error for an HTTP error status (>= 400).

    For a system under test every status is a ``SystemHTTPError`` (retryable on 429 and
    5xx). For a provider: 401 / 403 is ``ProviderAuthError``, 429 ``RateLimited``, 5xx
    ``ProviderUnavailable``, any other ``InvalidResponse``.
    """
    line = redact(f"{where}: HTTP {status}: {message}", secrets)
    if side == "system":
        return SystemHTTPError(status, line, retry_after=retry_after)
    if status in (401, 403):
        return ProviderAuthError(line)
    if status == 429:
        return RateLimited(line, retry_after=retry_after)
    if status >= 500:
        return ProviderUnavailable(line, retry_after=retry_after)
    return InvalidResponse(line)


def not_json(side: Side, where: str, status: int | None, body: str) -> ArbiterError:
    """The error for a 2xx answer (``status``; None: a text an SDK handed over) whose
    body is not the JSON expected."""
    cls: type[ArbiterError] = InvalidSystemResponse if side == "system" else InvalidResponse
    if status is None:
        return cls(f"{where} answered with text that is not JSON: {snippet(body)!r}")
    return cls(f"{where}: HTTP {status} with a body that is not JSON: {snippet(body)!r}")


def body_too_large(side: Side, where: str, limit: int) -> SystemUnderTestError | ProviderError:
    """The error for an answer larger than the configured bound."""
    line = f"{where}: the answer is larger than {limit:,} bytes (ARBITER_MAX_RESPONSE_BYTES)"
    return InvalidSystemResponse(line) if side == "system" else InvalidResponse(line)
