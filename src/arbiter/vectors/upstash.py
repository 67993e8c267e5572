"""Upstash Vector over its REST API, behind the ``VectorStore`` Protocol.

Failures map into our tree at this seam: a dimension the index refuses becomes an
``InputError`` carrying Upstash's own message; 401/403, 429, 5xx, timeouts and
unreadable answers become the ``ProviderError`` subclasses, as for an LLM provider.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

import httpx

from arbiter.errors import (
    ArbiterError,
    InputError,
    InvalidResponse,
    ProviderAuthError,
    ProviderTimeout,
    ProviderUnavailable,
    RateLimited,
)
from arbiter.retry_after import parse_retry_after
from arbiter.vectors.base import Match, VectorItem

__all__ = ["UpstashVectorStore"]


class UpstashVectorStore:
    """Upstash Vector over its REST API, with the namespace in the path.

    A query is ``POST {url}/query/{namespace}`` with ``{"vector", "topK",
    "includeMetadata": true}``; an upsert ``POST {url}/upsert/{namespace}`` with a list
    of ``{"id", "vector", "metadata"}``; the default namespace ``""`` has no path
    segment. No threshold is sent: the caller applies its own. Upstash reports a score
    normalised to [0, 1], ``(1 + cos) / 2`` for a COSINE index; it is mapped back to the
    cosine so that both stores, and their thresholds, speak one scale. Use a COSINE
    index (a DOT_PRODUCT one over unit vectors scores the same).

    Args:
        url: The index's REST URL (``UPSTASH_VECTOR_REST_URL``).
        token: Its REST token (``UPSTASH_VECTOR_REST_TOKEN``); never shown in messages.
        timeout: Seconds one call may take.
        transport: An httpx transport to use instead of the network (tests).
    """

    name = "upstash"

    def __init__(
        self,
        url: str,
        token: str,
        *,
        timeout: float = 10.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self._token = token
        self._transport = transport

    async def upsert(self, namespace: str, items: Sequence[VectorItem]) -> None:
        """Insert or replace items by id.

        Raises:
            InputError: Upstash refused the vectors' dimension (its message is kept), or
                a vector is not finite, or metadata is not JSON.
            ProviderError: Its subclasses for auth, rate limits, 5xx, timeouts, bad answers.
        """
        if items:
            body = [{"id": i.id, "vector": i.vector, "metadata": i.metadata} for i in items]
            await self._post("upsert", namespace, body)

    async def query(
        self, namespace: str, vector: Sequence[float], *, top_k: int = 5
    ) -> list[Match]:
        """The ``top_k`` nearest items, best first, with cosine similarity as the score.

        Raises:
            InputError: Upstash refused the vector's dimension (its message is kept), or
                the vector is not finite.
            ProviderError: Its subclasses for auth, rate limits, 5xx, timeouts, bad answers.
        """
        _check_top_k(top_k)
        try:
            values = [float(x) for x in vector]  # numpy scalars too
        except (TypeError, ValueError):
            raise InputError(f"upstash query {namespace!r}: the vector is not numbers") from None
        body = {"vector": values, "topK": top_k, "includeMetadata": True}
        result = await self._post("query", namespace, body)
        if not isinstance(result, list):
            raise InvalidResponse(f"upstash query {namespace!r}: 'result' is not a list")
        matches = []
        for entry in result:
            score = entry.get("score") if isinstance(entry, dict) else None
            if not isinstance(score, int | float) or not isinstance(entry.get("id"), str | int):
                raise InvalidResponse(f"upstash query {namespace!r}: a match lacks id or score")
            metadata = entry.get("metadata")
            matches.append(
                Match(
                    id=str(entry["id"]),
                    score=2.0 * float(score) - 1.0,
                    metadata=metadata if isinstance(metadata, dict) else {},
                )
            )
        return matches

    async def _post(self, verb: str, namespace: str, body: Any) -> Any:
        """POST to Upstash and return the answer's ``result``, mapping every failure."""
        url = f"{self.url}/{verb}" + (f"/{quote(namespace, safe='')}" if namespace else "")
        where = f"upstash {verb} {namespace!r}"
        try:
            content = json.dumps(body, allow_nan=False, ensure_ascii=False).encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise InputError(f"{where}: vectors must be finite and metadata JSON: {exc}") from None
        headers = {"Authorization": f"Bearer {self._token}", "Content-Type": "application/json"}
        try:
            async with (
                asyncio.timeout(self.timeout),
                httpx.AsyncClient(timeout=self.timeout, transport=self._transport) as client,
            ):
                response = await client.post(url, content=content, headers=headers)
        except (TimeoutError, httpx.TimeoutException):
            raise ProviderTimeout(f"{where}: no answer within {self.timeout:g}s") from None
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise ProviderUnavailable(f"{where}: unreachable: {self._redact(exc)}") from None
        try:
            document = response.json()
        except ValueError:
            document = None
        error = document.get("error") if isinstance(document, dict) else None
        if response.status_code >= 400:
            raise self._status_error(where, response, error)
        if not isinstance(document, dict) or "result" not in document:
            raise InvalidResponse(f"{where}: HTTP {response.status_code} without a 'result'")
        return document["result"]

    def _status_error(self, where: str, response: httpx.Response, error: Any) -> ArbiterError:
        status = response.status_code
        message = self._redact(error if isinstance(error, str) else response.text)
        line = f"{where}: HTTP {status}: {message or response.reason_phrase}"
        if status in (401, 403):
            return ProviderAuthError(line)
        if status == 429:
            return RateLimited(
                line, retry_after=parse_retry_after(response.headers.get("retry-after"))
            )
        if status >= 500:
            return ProviderUnavailable(line)
        if status == 400 and "dimension" in message.lower():
            return InputError(f"{where}: {message}")
        return InvalidResponse(line)

    def _redact(self, text: Any) -> str:
        line = " ".join(str(text).split())[:200]
        return line.replace(self._token, "[redacted]") if self._token else line


def _check_top_k(top_k: int) -> None:
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ValueError(
            f"The 'top_k' parameter of query must be a positive int. Got {top_k!r} instead."
        )
