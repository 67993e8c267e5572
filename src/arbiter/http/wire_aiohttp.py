"""The aiohttp wire of :class:`~arbiter.http.client.HttpClient`, for the ``http`` system.

A system under test is called as fast as the run's concurrency allows, and there the
client's own CPU decides the throughput. ``bench/http_client.py`` measured, at 100 calls
in flight on a service answering in 50 ms (ideal 2.50 s for 5,000 calls): aiohttp 1.09 x
the ideal (0.23 ms of CPU a request), httpx 20.6 x (10.3 ms: its pool scans every
connection on each request), httpx over a pool without that scan 1.54 x (0.72 ms),
httpx2 2.05 x (1.0 ms); this client on aiohttp 1.07 x. At 16 in flight every one of
them is within 1.21 x. Only the wire differs: the time limit, the size bound, the JSON
reader, the failure table and the redaction are the client's, as for every other call.
"""

from __future__ import annotations

import urllib.request
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

import aiohttp
from yarl import URL

from arbiter.http.wire import WireAnswer

__all__ = ["AiohttpWire"]

_CHUNK = 64 * 1024
_MAX_PROXY_CACHE = 1024


class AiohttpWire:
    """An aiohttp session with an unbounded connector; redirects are not followed.

    The proxy named by ``HTTP_PROXY`` / ``HTTPS_PROXY`` / ``NO_PROXY`` is read once when
    the wire is made, then looked up per host (aiohttp's own ``trust_env`` would read the
    environment and ``~/.netrc`` again on every request).

    Args:
        headers: Sent with every request.
    """

    def __init__(self, headers: Mapping[str, str]) -> None:
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0),  # the caller bounds concurrency
            headers=dict(headers),
            timeout=aiohttp.ClientTimeout(total=None),  # the caller bounds every call
        )
        self._proxies = urllib.request.getproxies()
        self._proxy_of: dict[str, str | None] = {}

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
        async with self._session.request(
            method,
            url,
            data=content,
            params=params,
            headers=headers,
            allow_redirects=False,
            proxy=self._proxy(url),
        ) as response:
            yield WireAnswer(
                response.status,
                response.reason or "",
                response.headers,
                response.charset,
                response.content_length,
                _body(response),
            )

    async def aclose(self) -> None:
        """Close the session and its connections."""
        await self._session.close()

    def _proxy(self, url: str) -> str | None:
        found = self._proxy_of.get(url, "")
        if found != "":
            return found
        target = URL(url)
        host = target.host
        proxy = None
        if host is not None and not urllib.request.proxy_bypass(host):
            proxy = self._proxies.get(target.scheme)
        if len(self._proxy_of) >= _MAX_PROXY_CACHE:
            self._proxy_of.clear()
        self._proxy_of[url] = proxy
        return proxy


async def _body(response: aiohttp.ClientResponse) -> AsyncIterator[bytes]:
    """A body of declared length in one read (a small JSON answer), any other in chunks."""
    if response.content_length is not None:
        yield await response.read()
        return
    async for chunk in response.content.iter_chunked(_CHUNK):
        yield chunk
