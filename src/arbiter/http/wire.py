"""What carries a request of :class:`~arbiter.http.client.HttpClient`: its *wire*.

A wire sends one request and hands back the answer's status, headers and body chunks;
everything else (time limits, size bounds, the JSON reader, the failure table, retries,
redaction) is the client's, the same whatever the wire. The wire is httpx
(:class:`HttpxWire`, whose transport tests replace).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Protocol

import httpx

from arbiter.http.bodies import declared_length

__all__ = ["HttpxWire", "Wire", "WireAnswer", "WireFactory"]


@dataclass(frozen=True, slots=True)
class WireAnswer:
    """An answer as it arrives: status and headers read, the body not yet."""

    status: int
    """The HTTP status."""
    reason: str
    """Its reason phrase (``Not Found``)."""
    headers: Mapping[str, str]
    """Its headers (names compared case-insensitively)."""
    charset: str | None
    """The charset its Content-Type declares, if any."""
    length: int | None
    """The length its Content-Length declares, if any."""
    chunks: AsyncIterable[bytes]
    """The body, as it arrives."""


class Wire(Protocol):
    """Sends requests over one connection pool, bound to the event loop that made it."""

    def exchange(
        self,
        method: str,
        url: str,
        *,
        content: bytes | None,
        params: list[tuple[str, str]] | None,
        headers: Mapping[str, str] | None,
    ) -> AbstractAsyncContextManager[WireAnswer]:
        """Send one request; the answer's body is readable until the block exits."""
        ...

    async def aclose(self) -> None:
        """Close the pool and its connections."""
        ...


WireFactory = Callable[[Mapping[str, str]], Wire]
"""Makes a wire sending the given default headers with every request."""


class HttpxWire:
    """An httpx client with a keep-alive pool; redirects are not followed.

    Args:
        headers: Sent with every request.
        transport: An httpx transport instead of the network (tests).
    """

    def __init__(
        self, headers: Mapping[str, str], transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self._client = httpx.AsyncClient(
            transport=transport,
            headers=dict(headers),
            timeout=None,  # the caller bounds every call
            follow_redirects=False,
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=64),
        )

    @asynccontextmanager
    async def exchange(
        self,
        method: str,
        url: str,
        *,
        content: bytes | None,
        params: list[tuple[str, str]] | None,
        headers: Mapping[str, str] | None,
    ) -> AsyncIterator[WireAnswer]:
        """Send one request; the answer's body is readable until the block exits."""
        client = self._client
        query = httpx.QueryParams(tuple(params)) if params else None
        request = client.build_request(method, url, content=content, params=query, headers=headers)
        response = await client.send(request, stream=True)
        try:
            yield WireAnswer(
                response.status_code,
                response.reason_phrase,
                response.headers,
                response.charset_encoding,
                declared_length(response.headers.get("content-length")),
                response.aiter_bytes(),
            )
        finally:
            await response.aclose()

    async def aclose(self) -> None:
        """Close the pool and its connections."""
        await self._client.aclose()
