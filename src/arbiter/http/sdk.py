"""The client handed to an SDK that makes its HTTP requests itself (the ``mcp`` SDK).

The ``mcp`` SDK's streamable-HTTP transport takes an ``httpx2`` client and sends each
POST from a task of its own session, where a client error would tear the whole session
down and cancel the task that opened it. The client made by :func:`sdk_client`
answers such a failure with a stand-in error status instead, so the SDK fails only the
one request, and notes what really happened in the :class:`WireNotes` of the call that
waits for it. The caller then reads the failure as every other outbound call reads
one: through the failure table of :mod:`arbiter.http.errors`, with the service's own
message and ``Retry-After``; an answer larger than the bound ends there and is reported
as too large.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass

import httpx2

from arbiter.errors import ArbiterError
from arbiter.http.bodies import declared_length
from arbiter.http.errors import Side, body_too_large, service_message, status_error, transport_error
from arbiter.http.retry_after import parse_retry_after

__all__ = ["WireNotes", "sdk_client"]

_FAILED_POST_STATUS = 503
"""Stands in for a POST that never got an answer."""
_BODY_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})


@dataclass
class WireNotes:
    """What went wrong on the HTTP wire beneath one call: the SDK does not say."""

    failure: Exception | None = None
    """The first transport error (refused, reset, timed out, broke off)."""
    status: int | None = None
    """The first error status answered."""
    detail: str = ""
    """The service's message with that status."""
    retry_after: float | None = None
    """Its ``Retry-After``, in seconds."""
    oversize: int | None = None
    """The bound an answer passed, if one did."""

    def note_failure(self, exc: Exception) -> None:
        """Keep the first transport error."""
        self.failure = self.failure or exc

    def error(self, side: Side, where: str, *, timeout: float) -> ArbiterError | None:
        """Our error for what was noted (see :mod:`arbiter.http.errors`), None if nothing was.

        Args:
            side: Whose error it is.
            where: What was called, for the message.
            timeout: The call's time limit, named by a timeout's message.
        """
        if self.oversize is not None:
            return body_too_large(side, where, self.oversize)
        if self.failure is not None:
            return transport_error(side, where, self.failure, timeout=timeout)
        if self.status is not None:
            return status_error(side, where, self.status, self.detail, retry_after=self.retry_after)
        return None


def sdk_client(
    *,
    headers: Mapping[str, str],
    timeout: float,
    read_timeout: float,
    max_response_bytes: int,
    notes: Callable[[], WireNotes | None],
) -> httpx2.AsyncClient:
    """An ``httpx2`` client whose POSTs fail as error answers, noted in ``notes()``.

    Args:
        headers: Sent with every request.
        timeout: Seconds for connecting, writing and waiting for the pool.
        read_timeout: Seconds between two reads of an answer.
        max_response_bytes: Largest answer to a POST; a larger one ends there and is
            noted as too large. (The GET stream of server events is not bounded: it
            lives as long as the session.)
        notes: The notes of the call now waiting (``None``: nobody is listening).
    """
    return httpx2.AsyncClient(
        headers=dict(headers),
        timeout=httpx2.Timeout(timeout, read=read_timeout),
        transport=_GuardedTransport(httpx2.AsyncHTTPTransport(), notes, max_response_bytes),
    )


class _GuardedTransport(httpx2.AsyncBaseTransport):
    """Turns a POST that fails on the wire into an error answer, noting the cause."""

    def __init__(
        self,
        inner: httpx2.AsyncBaseTransport,
        notes: Callable[[], WireNotes | None],
        limit: int,
    ) -> None:
        self._inner = inner
        self._notes = notes
        self._limit = limit

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        # The SDK already survives failures of its GET stream and session DELETE.
        if request.method != "POST":
            return await self._inner.handle_async_request(request)
        notes = self._notes()
        try:
            response = await self._inner.handle_async_request(request)
            if response.status_code >= 400:
                # Read the error body here: the SDK drops it unless it is JSON-RPC.
                body = await _head(response, self._limit)
        except httpx2.TransportError as exc:
            if notes is not None:
                notes.note_failure(exc)
            return httpx2.Response(_FAILED_POST_STATUS, request=request)
        if response.status_code < 400:
            if isinstance(response.stream, httpx2.AsyncByteStream):
                declared = declared_length(response.headers.get("content-length"))
                response.stream = _GuardedStream(response.stream, notes, self._limit, declared)
            return response
        if notes is not None and notes.status is None:
            notes.status = response.status_code
            notes.detail = service_message(body, response.reason_phrase)
            notes.retry_after = parse_retry_after(response.headers.get("retry-after"))
        headers = [(k, v) for k, v in response.headers.multi_items() if k not in _BODY_HEADERS]
        return httpx2.Response(response.status_code, headers=headers, content=body, request=request)

    async def aclose(self) -> None:
        await self._inner.aclose()


async def _head(response: httpx2.Response, limit: int) -> bytes:
    """At most ``limit`` bytes of an error answer (its message is all that is read)."""
    parts: list[bytes] = []
    size = 0
    try:
        async for chunk in response.aiter_bytes():
            parts.append(chunk[: limit - size])
            size += len(parts[-1])
            if size >= limit:
                break
    finally:
        await response.aclose()
    return b"".join(parts)


class _GuardedStream(httpx2.AsyncByteStream):
    """A POST's answer that ends early, instead of raising, when the wire fails or the
    answer passes its bound."""

    def __init__(
        self,
        inner: httpx2.AsyncByteStream,
        notes: WireNotes | None,
        limit: int,
        declared: int | None,
    ) -> None:
        self._inner = inner
        self._notes = notes
        self._limit = limit
        self._declared = declared

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._declared is not None and self._declared > self._limit:
            self._oversize()
            return
        size = 0
        try:
            async for chunk in self._inner:
                size += len(chunk)
                if size > self._limit:
                    self._oversize()
                    return
                yield chunk
        except httpx2.TransportError as exc:
            if self._notes is not None:
                self._notes.note_failure(exc)

    def _oversize(self) -> None:
        if self._notes is not None:
            self._notes.oversize = self._limit

    async def aclose(self) -> None:
        await self._inner.aclose()
