"""The ``gemini`` provider: Google's Gemini API ``generateContent``.

The schema goes to ``generationConfig.responseSchema`` in Gemini's OpenAPI subset
(converted from the request's strict JSON schema by ``to_gemini_schema``) with
``responseMimeType: application/json``. The key travels in the ``x-goog-api-key``
header, never in the URL, so it cannot leak into a logged address. ``effort`` is not
sent: Gemini's thinking controls differ by model generation and are not mapped yet.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from arbiter.errors import InvalidResponse
from arbiter.http.client import HttpClient, private_client
from arbiter.providers.base import CompletionRequest, CompletionResponse
from arbiter.providers.schema import to_gemini_schema
from arbiter.providers.shared import (
    Prices,
    billed,
    cut_off,
    gemini_refine,
    json_object,
    require_key,
    usage_with_cost,
)

if TYPE_CHECKING:
    import httpx

__all__ = ["GeminiProvider"]


class GeminiProvider:
    """Structured-output calls to the Gemini API.

    Args:
        api_key: The ``x-goog-api-key``; None fails each call with a ``ProviderAuthError``.
        base_url: API root including the version.
        http: The client calls go through; None: a private client without retries.
        transport: An httpx transport to use instead of the network (tests).
        prices: USD per million input / output tokens by model, for ``cost_usd``.
    """

    name = "gemini"

    def __init__(
        self,
        *,
        api_key: str | None,
        base_url: str = "https://generativelanguage.googleapis.com/v1beta",
        http: HttpClient | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        prices: Prices | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self._http = private_client(http, transport)
        self._prices = prices

    def __repr__(self) -> str:
        return f"GeminiProvider(base_url={self.base_url!r})"

    async def aclose(self) -> None:
        """Close the provider's connection pool."""
        await self._http.aclose()

    def endpoint(self, model: str) -> str:
        """The URL ``complete`` posts to for ``model`` (a ``models/`` prefix is allowed)."""
        name = quote(model.removeprefix("models/"), safe="-._")
        return f"{self.base_url}/models/{name}:generateContent"

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        """Ask Gemini for JSON following ``request.json_schema``.

        Raises:
            ProviderAuthError: No key is configured, or it was refused.
            RateLimited: HTTP 429 (``retry_after`` from the RetryInfo detail).
            ProviderUnavailable: HTTP 5xx or no connection.
            ProviderTimeout: No answer within ``request.timeout``.
            InvalidResponse: Any other failure, a blocked prompt, or an answer cut off
                at ``request.max_output_tokens``.
        """
        api_key = require_key(self._api_key, provider=self.name, env="GEMINI_API_KEY")
        started = time.perf_counter()
        where = f"{self.name} {request.model}"
        answer = await self._http.post_json(
            self.endpoint(request.model),
            self.request_body(request),
            where=where,
            headers={"x-goog-api-key": api_key},
            timeout=request.timeout,
            secrets=(api_key,),
            refine=gemini_refine,
        )
        document = json_object(answer.document, where)
        latency_ms = (time.perf_counter() - started) * 1000
        meta = document.get("usageMetadata")
        meta = meta if isinstance(meta, dict) else {}
        output_tokens = meta.get("candidatesTokenCount")
        if isinstance(output_tokens, int) and isinstance(meta.get("thoughtsTokenCount"), int):
            output_tokens += meta["thoughtsTokenCount"]  # thinking is billed as output
        answered_by = str(document.get("modelVersion") or request.model)
        cost = usage_with_cost(
            meta.get("promptTokenCount"),
            output_tokens,
            models=(request.model, answered_by),
            prices=self._prices,
        )
        with billed(cost):
            text = self._candidate_text(document, request)
        return CompletionResponse(text=text, model=answered_by, usage=cost, latency_ms=latency_ms)

    def request_body(self, request: CompletionRequest) -> dict[str, Any]:
        """The JSON body ``complete`` sends for ``request``."""
        return {
            "systemInstruction": {"parts": [{"text": request.system}]},
            "contents": [{"role": "user", "parts": [{"text": request.prompt}]}],
            "generationConfig": {
                "responseMimeType": "application/json",
                "responseSchema": to_gemini_schema(request.json_schema),
                "maxOutputTokens": request.max_output_tokens,
            },
        }

    def _candidate_text(self, document: dict[str, Any], request: CompletionRequest) -> str:
        where = f"{self.name} {request.model}"
        candidates = document.get("candidates")
        if not isinstance(candidates, list) or not candidates:
            feedback = document.get("promptFeedback")
            reason = feedback.get("blockReason") if isinstance(feedback, dict) else None
            raise InvalidResponse(f"{where}: no candidate in the answer (blockReason {reason!r})")
        candidate = candidates[0] if isinstance(candidates[0], dict) else {}
        finish = candidate.get("finishReason")
        if finish == "MAX_TOKENS":
            raise cut_off(where, request.max_output_tokens)
        content = candidate.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        texts = [
            part["text"]
            for part in (parts if isinstance(parts, list) else [])
            if isinstance(part, dict)
            and isinstance(part.get("text"), str)
            and not part.get("thought")
        ]
        if not texts:
            raise InvalidResponse(f"{where}: the candidate has no text (finishReason {finish!r})")
        return "".join(texts)
