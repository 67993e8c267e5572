"""The pooled JSON client of providers, embedders and vector stores.

One :class:`HttpClient` per provider (or embedder, or store) keeps one ``httpx``
connection pool for its whole life, instead of a client per call; ``aclose`` (or
``async with``) closes it. Each call is bounded in time and in the size of the answer,
retried under the client's :class:`~arbiter.http.retry.RetryPolicy`, limited to
``concurrency`` calls in flight, and fails only with Arbiter's own errors, secrets
redacted. Tests inject an ``httpx`` transport; nothing else changes.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Callable, Mapping
from typing import Any

import httpx

from arbiter.errors import ArbiterError, ProviderTimeout, SystemTimeout
from arbiter.http.errors import (
    Side,
    body_too_large,
    map_exceptions,
    not_json,
    service_message,
    status_error,
)
from arbiter.http.redact import redact_url
from arbiter.http.retry import RetryBudget, RetryPolicy
from arbiter.http.retry_after import parse_retry_after
from arbiter.params import check_number

__all__ = ["DEFAULT_MAX_RESPONSE_BYTES", "HttpClient", "JsonAnswer", "Refine", "private_client"]

Refine = Callable[[ArbiterError, int, Any], ArbiterError]
"""``(error, status, decoded body) -> error to raise``: a vendor's reading of an error."""

DEFAULT_MAX_RESPONSE_BYTES = 16 * 1024 * 1024
"""Largest answer read by default (``ARBITER_MAX_RESPONSE_BYTES``): 16 MiB."""


class JsonAnswer:
    """A decoded JSON answer with its status and headers (for vendor-specific checks)."""

    __slots__ = ("document", "headers", "status")

    def __init__(self, status: int, headers: httpx.Headers, document: Any) -> None:
        self.status, self.headers, self.document = status, headers, document


class HttpClient:
    """A long-lived, pooled JSON-over-HTTP client, bound to the event loop that uses it.

    Args:
        side: Whose errors its failures are (``provider`` for LLMs, embedders, stores).
        transport: An httpx transport instead of the network (tests).
        retry: Retries of retryable failures (429, 5xx, connection errors, timeouts);
            None: no retry.
        budget: Cap on retries shared by this client's calls; None: no cap.
        concurrency: Calls in flight at once; None: no limit of its own.
        max_response_bytes: Larger answers fail as invalid responses.
        seed: Seed of the retry jitter.

    Examples:
        >>> client = HttpClient(retry=RetryPolicy(retries=2), concurrency=4)
        >>> answer = await client.post_json(url, {"q": 1}, where="ollama m")  # doctest: +SKIP
        >>> await client.aclose()  # doctest: +SKIP
    """

    def __init__(
        self,
        *,
        side: Side = "provider",
        transport: httpx.AsyncBaseTransport | None = None,
        retry: RetryPolicy | None = None,
        budget: RetryBudget | None = None,
        concurrency: int | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        seed: int | None = None,
    ) -> None:
        check_number(
            concurrency, "concurrency", "HttpClient", minimum=1, integer=True, optional=True
        )
        check_number(
            max_response_bytes, "max_response_bytes", "HttpClient", minimum=1, integer=True
        )
        self.side: Side = side
        self.retry = retry
        self.budget = budget
        self.concurrency = concurrency
        self.max_response_bytes = max_response_bytes
        self._transport = transport
        self._rng = random.Random(seed)
        self._client: httpx.AsyncClient | None = None
        self._limit: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.calls = 0
        """Requests sent, retries included."""

    async def __aenter__(self) -> HttpClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool; the next call opens a new one."""
        client, self._client, self._loop, self._limit = self._client, None, None, None
        if client is not None:
            await client.aclose()

    def _pool(self) -> tuple[httpx.AsyncClient, asyncio.Semaphore | None]:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            # A pool belongs to the loop that opened it: a new loop (a second asyncio.run
            # of a sync wrapper) gets its own. The old one died with its loop.
            self._client = httpx.AsyncClient(
                transport=self._transport,
                timeout=None,  # every call brings its own limit
                limits=httpx.Limits(max_connections=None, max_keepalive_connections=64),
            )
            self._limit = asyncio.Semaphore(self.concurrency) if self.concurrency else None
            self._loop = loop
        return self._client, self._limit

    async def post_json(
        self,
        url: str,
        body: Mapping[str, Any] | list[Any],
        *,
        where: str,
        headers: Mapping[str, str] | None = None,
        timeout: float = 30.0,  # noqa: ASYNC109 - a per-call limit, passed through
        secrets: tuple[str | None, ...] = (),
        refine: Refine | None = None,
    ) -> JsonAnswer:
        """POST ``body`` as JSON and return the decoded 2xx answer, retrying if allowed.

        Args:
            url: The endpoint.
            body: The JSON body (NaN and infinities are refused before sending).
            where: Who is called, for messages: ``"openai gpt-4o"``; the endpoint's
                origin is appended.
            headers: Request headers (authentication included).
            timeout: Seconds the whole call may take, from connecting to the last byte,
                retries and their waits included: a retry that cannot finish in time is
                not made.
            secrets: Values (API keys) redacted from every message.
            refine: Gets the error an error status maps to, the status and the decoded
                body, and returns the error to raise: how a vendor's own signals are
                read (Gemini's refused key in a 400, its ``RetryInfo`` delay).

        Raises:
            ProviderError: Its subclasses (or, with ``side="system"``, the
                ``SystemUnderTestError`` ones) for every failure.
        """
        named = f"{where} at {_origin(url)}"
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout

        async def attempt() -> JsonAnswer:
            left = max(deadline - loop.time(), 0.001)
            try:
                return await self._post_once(url, body, named, headers, left, secrets, refine)
            except (ProviderTimeout, SystemTimeout):
                # Name the whole call's limit, not what was left of it for this attempt.
                raise _timeout_error(self.side, named, timeout) from None

        if self.retry is None:
            return await attempt()
        return await self.retry.call(
            attempt, rng=self._rng, budget=self.budget, deadline=deadline, clock=loop.time
        )

    async def _post_once(
        self,
        url: str,
        body: Mapping[str, Any] | list[Any],
        where: str,
        headers: Mapping[str, str] | None,
        timeout: float,  # noqa: ASYNC109
        secrets: tuple[str | None, ...],
        refine: Refine | None,
    ) -> JsonAnswer:
        client, limit = self._pool()
        content = json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
        send_headers = {"Content-Type": "application/json", **dict(headers or {})}
        self.calls += 1
        with map_exceptions(self.side, where, timeout=timeout, secrets=secrets):
            if limit is not None:
                await limit.acquire()
            try:
                async with asyncio.timeout(timeout):
                    request = client.build_request(
                        "POST", url, content=content, headers=send_headers
                    )
                    response = await client.send(request, stream=True)
                    try:
                        raw = await self._read(response, where)
                    finally:
                        await response.aclose()
            finally:
                if limit is not None:
                    limit.release()
        text = raw.decode(response.encoding or "utf-8", errors="replace")
        try:
            document = json.loads(text) if text.strip() else None
        except ValueError:
            document = None
        status = response.status_code
        if status >= 400:
            error = status_error(
                self.side,
                where,
                status,
                service_message(text, response.reason_phrase),
                retry_after=parse_retry_after(response.headers.get("retry-after")),
                secrets=secrets,
            )
            raise refine(error, status, document) if refine is not None else error
        if document is None:
            raise not_json(self.side, where, status, text)
        return JsonAnswer(status, response.headers, document)

    async def _read(self, response: httpx.Response, where: str) -> bytes:
        declared = response.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_response_bytes:
            raise body_too_large(self.side, where, self.max_response_bytes)
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > self.max_response_bytes:
                raise body_too_large(self.side, where, self.max_response_bytes)
            chunks.append(chunk)
        return b"".join(chunks)


def private_client(
    http: HttpClient | None, transport: httpx.AsyncBaseTransport | None
) -> HttpClient:
    """The client a provider, embedder or store calls through: the one given, else its own.

    An own client does not retry (the registries' clients do, per ``Settings``), so one
    built by hand in a test answers each failure at once.
    """
    return http if http is not None else HttpClient(side="provider", transport=transport)


def _timeout_error(side: Side, where: str, timeout: float) -> ArbiterError:
    cls: type[ArbiterError] = ProviderTimeout if side == "provider" else SystemTimeout
    return cls(f"{where}: no answer within {timeout:g}s")


def _origin(url: str) -> str:
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError):
        return redact_url(url)
    return f"{parsed.scheme}://{parsed.netloc.decode('ascii', 'replace')}"
