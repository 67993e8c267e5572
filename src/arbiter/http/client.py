"""The one outbound JSON-over-HTTP client: systems under test, agents, providers, embedders, stores.

One :class:`HttpClient` per system, provider, embedder or store keeps one connection
pool for its whole life, instead of a client per call; ``aclose`` (or ``async with``)
closes it. Each call is bounded in time and in the size of the answer, retried under the
client's :class:`~arbiter.http.retry.RetryPolicy`, limited to ``concurrency`` calls in
flight, and fails only with Arbiter's own errors (the table of
:mod:`arbiter.http.errors`), secrets redacted. Every answer is read by one reader
(:mod:`arbiter.http.bodies`): bounded body, one JSON parser, one error-body reading.
Tests inject an ``httpx`` transport; nothing else changes.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Callable, Mapping
from typing import Any

import httpx

from arbiter.errors import ArbiterError, InputError, ProviderTimeout, SystemTimeout
from arbiter.http.bodies import decode_text, parse_answer, read_capped
from arbiter.http.errors import (
    Side,
    error_document,
    map_exceptions,
    service_message,
    status_error,
)
from arbiter.http.redact import redact_url
from arbiter.http.retry import RetryBudget, RetryPolicy
from arbiter.http.retry_after import parse_retry_after
from arbiter.http.wire import HttpxWire, Wire, WireFactory
from arbiter.params import check_number

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "NO_BODY",
    "HttpClient",
    "JsonAnswer",
    "Refine",
    "private_client",
]

Refine = Callable[[ArbiterError, int, Any], ArbiterError]
"""``(error, status, decoded body) -> error to raise``: a vendor's reading of an error."""

DEFAULT_MAX_RESPONSE_BYTES = 16 * 1024 * 1024
"""Largest answer read by default (``ARBITER_MAX_RESPONSE_BYTES``): 16 MiB."""

NO_BODY: Any = object()
"""The ``json`` of a request that has no body."""


class JsonAnswer:
    """A decoded JSON answer with its status and headers (for vendor-specific checks)."""

    __slots__ = ("document", "headers", "status")

    def __init__(self, status: int, headers: Mapping[str, str], document: Any) -> None:
        self.status, self.headers, self.document = status, headers, document


class HttpClient:
    """A long-lived, pooled JSON-over-HTTP client, bound to the event loop that uses it.

    Args:
        side: Whose errors its failures are: ``provider`` (LLMs, embedders, stores) or
            ``system`` (a system under test, an agent).
        transport: An httpx transport instead of the network (tests).
        retry: Retries of retryable failures (429, 5xx, connection errors, timeouts);
            None: no retry (a run's harness retries systems under test itself).
        budget: Cap on retries shared by this client's calls; None: no cap.
        concurrency: Calls in flight at once; None: no limit of its own.
        max_response_bytes: Larger answers fail as invalid responses.
        seed: Seed of the retry jitter.
        headers: Sent with every request (a call's own headers win).
        wire: Makes what carries the requests, given ``headers``; None: httpx over
            ``transport``.

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
        headers: Mapping[str, str] | None = None,
        wire: WireFactory | None = None,
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
        self.headers = dict(headers or {})
        self._make_wire: WireFactory = wire or (lambda given: HttpxWire(given, transport))
        self._rng = random.Random(seed)
        self._wire: Wire | None = None
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
        wire, self._wire, self._loop, self._limit = self._wire, None, None, None
        if wire is not None:
            await wire.aclose()

    def _pool(self) -> tuple[Wire, asyncio.Semaphore | None]:
        loop = asyncio.get_running_loop()
        if self._wire is None or self._loop is not loop:
            # A pool belongs to the loop that opened it: a new loop (a second asyncio.run
            # of a sync wrapper) gets its own. The old one died with its loop.
            self._wire = self._make_wire(self.headers)
            self._limit = asyncio.Semaphore(self.concurrency) if self.concurrency else None
            self._loop = loop
        return self._wire, self._limit

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

        As :meth:`request`, with the endpoint's origin appended to ``where``
        (``"openai gpt-4o at https://api..."``).
        """
        return await self.request(
            "POST",
            url,
            json=body,
            where=f"{where} at {_origin(url)}",
            headers=headers,
            timeout=timeout,
            secrets=secrets,
            refine=refine,
        )

    async def request(
        self,
        method: str,
        url: str,
        *,
        where: str,
        json: Any = NO_BODY,
        params: list[tuple[str, str]] | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = 30.0,  # noqa: ASYNC109 - a per-call limit, passed through
        secrets: tuple[str | None, ...] = (),
        refine: Refine | None = None,
    ) -> JsonAnswer:
        """Send one request and return the decoded 2xx JSON answer, retrying if allowed.

        Args:
            method: The HTTP method.
            url: The endpoint.
            where: Who is called, for messages: ``"POST http://host/ingest"``.
            json: The JSON body (NaN and infinities are refused before sending);
                ``NO_BODY`` (the default): the request has none.
            params: Query parameters, in order.
            headers: Request headers (authentication included), over the client's own.
            timeout: Seconds the whole call may take, from connecting to the last byte,
                retries and their waits included: a retry that cannot finish in time is
                not made.
            secrets: Values (API keys) redacted from every message.
            refine: Gets the error an error status maps to, the status and the decoded
                body, and returns the error to raise: how a vendor's own signals are
                read (Gemini's refused key in a 400, its ``RetryInfo`` delay).

        Raises:
            InputError: ``json`` holds something JSON cannot carry (NaN, an object).
            ProviderError: Its subclasses (or, with ``side="system"``, the
                ``SystemUnderTestError`` ones) for every failure.
        """
        content = None
        send_headers = headers
        if json is not NO_BODY:
            content = _encode(json, where)
            send_headers = {"Content-Type": "application/json", **(headers or {})}
        if self.retry is None:
            return await self._once(
                method, url, content, params, send_headers, where, timeout, secrets, refine
            )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout

        async def attempt() -> JsonAnswer:
            left = max(deadline - loop.time(), 0.001)
            try:
                return await self._once(
                    method, url, content, params, send_headers, where, left, secrets, refine
                )
            except (ProviderTimeout, SystemTimeout):
                # Name the whole call's limit, not what was left of it for this attempt.
                raise _timeout_error(self.side, where, timeout) from None

        return await self.retry.call(
            attempt, rng=self._rng, budget=self.budget, deadline=deadline, clock=loop.time
        )

    async def _once(
        self,
        method: str,
        url: str,
        content: bytes | None,
        params: list[tuple[str, str]] | None,
        headers: Mapping[str, str] | None,
        where: str,
        timeout: float,  # noqa: ASYNC109
        secrets: tuple[str | None, ...],
        refine: Refine | None,
    ) -> JsonAnswer:
        wire, limit = self._pool()
        self.calls += 1
        side = self.side
        with map_exceptions(side, where, timeout=timeout, secrets=secrets):
            if limit is not None:
                await limit.acquire()
            try:
                async with (
                    asyncio.timeout(timeout),
                    wire.exchange(
                        method, url, content=content, params=params, headers=headers
                    ) as answer,
                ):
                    raw = await read_capped(
                        answer.chunks,
                        answer.length,
                        self.max_response_bytes,
                        side=side,
                        where=where,
                    )
            finally:
                if limit is not None:
                    limit.release()
        text = decode_text(raw, answer.charset)
        status = answer.status
        if status >= 400:
            error = status_error(
                side,
                where,
                status,
                service_message(text, answer.reason),
                retry_after=parse_retry_after(answer.headers.get("retry-after")),
                secrets=secrets,
            )
            if refine is not None:
                error = refine(error, status, error_document(text))
            raise error
        return JsonAnswer(
            status, answer.headers, parse_answer(text, side=side, where=where, status=status)
        )


def private_client(
    http: HttpClient | None, transport: httpx.AsyncBaseTransport | None
) -> HttpClient:
    """The client a provider, embedder or store calls through: the one given, else its own.

    An own client does not retry (the registries' clients do, per ``Settings``), so one
    built by hand in a test answers each failure at once.
    """
    return http if http is not None else HttpClient(side="provider", transport=transport)


def _encode(body: Any, where: str) -> bytes:
    try:
        return json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError) as exc:  # NaN, infinities, a value JSON cannot hold
        raise InputError(f"{where}: the request body is not JSON: {exc}") from None


def _timeout_error(side: Side, where: str, timeout: float) -> ArbiterError:
    cls: type[ArbiterError] = ProviderTimeout if side == "provider" else SystemTimeout
    return cls(f"{where}: no answer within {timeout:g}s")


def _origin(url: str) -> str:
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError):
        return redact_url(url)
    return f"{parsed.scheme}://{parsed.netloc.decode('ascii', 'replace')}"
