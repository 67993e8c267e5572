"""Upstash Vector over its REST API, behind the ``VectorStore`` Protocol.

Calls go through the one outbound HTTP layer (:class:`arbiter.http.client.HttpClient`),
so 401/403, 429, 5xx, timeouts and unreadable answers become the ``ProviderError``
subclasses, as for an LLM provider; a dimension the index refuses becomes an
``InputError`` carrying Upstash's own message.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from arbiter.errors import ArbiterError, InputError, InvalidResponse
from arbiter.params import check_number
from arbiter.vectors.base import Match, VectorItem

if TYPE_CHECKING:
    import httpx

    from arbiter.http.client import HttpClient

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
        http: The client calls go through; None: a private client without retries.
        transport: An httpx transport to use instead of the network (tests).
    """

    name = "upstash"

    def __init__(
        self,
        url: str,
        token: str,
        *,
        timeout: float = 10.0,
        http: HttpClient | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self._token = token
        from arbiter.http.client import private_client

        self._http = private_client(http, transport)

    async def aclose(self) -> None:
        """Close the store's connection pool."""
        await self._http.aclose()

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
        check_number(top_k, "top_k", "query", minimum=1, integer=True)
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
            json.dumps(body, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise InputError(f"{where}: vectors must be finite and metadata JSON: {exc}") from None
        answer = await self._http.post_json(
            url,
            body,
            where=where,
            headers={"Authorization": f"Bearer {self._token}"},
            timeout=self.timeout,
            secrets=(self._token,),
            refine=_dimension_refused,
        )
        document = answer.document
        if not isinstance(document, dict) or "result" not in document:
            raise InvalidResponse(f"{where}: HTTP {answer.status} without a 'result'")
        return document["result"]


def _dimension_refused(error: ArbiterError, status: int, document: Any) -> ArbiterError:
    """Upstash refuses a vector of the wrong dimension with a 400 naming the dimension."""
    message = document.get("error") if isinstance(document, dict) else None
    if status == 400 and isinstance(message, str) and "dimension" in message.lower():
        return InputError(str(error))
    return error
