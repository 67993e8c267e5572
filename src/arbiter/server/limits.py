"""A bound on request bodies: a body larger than the limit is answered 413 unread.

An ASGI middleware rather than a route dependency, so it holds for every route alike
and for bodies sent in chunks without a length: the bytes are counted as they arrive
and reading stops at the limit.
"""

from __future__ import annotations

import math
from typing import Any, TypeVar

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from arbiter.server.errors import send_error

__all__ = ["MAX_DEPTH", "BodyLimit", "check_depth"]


T = TypeVar("T")

MAX_DEPTH = 32
"""The deepest nesting of lists and objects a free-form JSON field may hold."""


def check_depth(value: T, limit: int = MAX_DEPTH) -> T:
    """``value``, if its lists and objects nest at most ``limit`` deep and every number in
    it is finite (one linear pass, no recursion).

    A body within the size limit can still nest thousands deep; storing and answering it
    would then fail on serializers' own depth limits, past validation. The JSON parser
    reads ``NaN``, ``Infinity`` and ``1e999`` (an overflow) as floats that no JSON can
    hold: stored, they would come back as null, so they are refused, as the file reader
    refuses them.

    Raises:
        ValueError: It nests deeper, or holds a number that is not finite, named by its
            path (a Pydantic validator turns this into a 422).
    """
    stack: list[tuple[Any, int, str]] = [(value, 0, "")]
    while stack:
        item, depth, path = stack.pop()
        if isinstance(item, dict | list):
            if depth >= limit:
                raise ValueError(f"nests deeper than {limit} levels")
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            stack.extend(
                (child, depth + 1, f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}")
                for key, child in pairs
            )
        elif isinstance(item, float) and not math.isfinite(item):
            where = f" at {path.lstrip('.')[:200]!r}" if path else ""
            raise ValueError(
                f"holds a number that JSON cannot represent{where} (NaN, Infinity, or one "
                "too large for a double)"
            )
    return value


class _TooLarge(HTTPException):
    """Raised while reading a body past the limit; an HTTPException, so FastAPI's body
    parsing lets it through and the app's handler answers it in the error shape."""

    def __init__(self, message: str) -> None:
        super().__init__(status_code=413, detail=message)


class BodyLimit:
    """Answer 413 in the error shape to a request whose body passes ``max_bytes``.

    Args:
        app: The ASGI app it wraps.
        max_bytes: The largest body read.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared == -1:
            await _refuse(send, 400, "the Content-Length header is not a number")
            return
        if declared is not None and declared > self.max_bytes:
            await _refuse(send, 413, self._message())
            return
        seen = 0
        started = False

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise _TooLarge(self._message())
            return message

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, watched)
        except _TooLarge:
            if not started:
                await _refuse(send, 413, self._message())

    def _message(self) -> str:
        return f"the request body is larger than {self.max_bytes} bytes, the most this server reads"


def _content_length(scope: Scope) -> int | None:
    """The declared body length; None when not declared, -1 when not a number."""
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                length = int(value)
            except ValueError:
                return -1
            return length if length >= 0 else -1
    return None


async def _refuse(send: Send, status: int, message: str) -> None:
    await send_error(send, status, message, close=True)
