"""The ``anthropic`` provider: Claude through the Messages API.

Structured output is one forced tool: the schema is the tool's ``input_schema``,
``tool_choice`` names it, and the ``tool_use`` block's ``input`` is the answer.

Two capability rules, both learned from a live 400 rather than from the docs:
sampling parameters (temperature, top_p, top_k) were removed on current frontier
models, so none is ever sent; and ``output_config.effort`` is the depth control on
Sonnet / Opus but errors on Haiku 4.5, so it is sent only where ``supports_effort``
says the model takes it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from arbiter.errors import InvalidResponse
from arbiter.http.client import HttpClient, private_client
from arbiter.providers.base import CompletionRequest, CompletionResponse
from arbiter.providers.shared import (
    Prices,
    billed,
    cut_off,
    json_object,
    require_key,
    usage_with_cost,
)

if TYPE_CHECKING:
    import httpx

__all__ = ["ANTHROPIC_VERSION", "AnthropicProvider", "default_supports_effort"]

ANTHROPIC_VERSION = "2023-06-01"
"""The ``anthropic-version`` header sent with every call."""


def default_supports_effort(model: str) -> bool:
    """Whether a Claude model accepts ``output_config.effort``: every model but Haiku."""
    return "haiku" not in model.lower()


class AnthropicProvider:
    """Structured-output calls to Anthropic's Messages API.

    Args:
        api_key: The ``x-api-key``; None fails each call with a ``ProviderAuthError``.
        base_url: API root, without ``/v1``.
        http: The client calls go through; None: a private client without retries.
        transport: An httpx transport to use instead of the network (tests).
        prices: USD per million input / output tokens by model, for ``cost_usd``.
        supports_effort: Whether a model takes ``output_config.effort``; default:
            ``default_supports_effort``.
    """

    name = "anthropic"

    def __init__(
        self,
        *,
        api_key: str | None,
        base_url: str = "https://api.anthropic.com",
        http: HttpClient | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        prices: Prices | None = None,
        supports_effort: Callable[[str], bool] | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self._http = private_client(http, transport)
        self._prices = prices
        self._supports_effort = supports_effort or default_supports_effort

    def __repr__(self) -> str:
        return f"AnthropicProvider(base_url={self.base_url!r})"

    async def aclose(self) -> None:
        """Close the provider's connection pool."""
        await self._http.aclose()

    @property
    def endpoint(self) -> str:
        """The URL ``complete`` posts to."""
        return f"{self.base_url}/v1/messages"

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        """Ask Claude for the forced tool's input, following ``request.json_schema``.

        Raises:
            ProviderAuthError: No key is configured, or it was refused.
            RateLimited: HTTP 429.
            ProviderUnavailable: HTTP 5xx (529 overloaded included) or no connection.
            ProviderTimeout: No answer within ``request.timeout``.
            InvalidResponse: Any other failure, no tool call, or an answer cut off at
                ``request.max_output_tokens``.
        """
        api_key = require_key(self._api_key, provider=self.name, env="ANTHROPIC_API_KEY")
        started = time.perf_counter()
        where = f"{self.name} {request.model}"
        answer = await self._http.post_json(
            self.endpoint,
            self.request_body(request),
            where=where,
            headers={"x-api-key": api_key, "anthropic-version": ANTHROPIC_VERSION},
            timeout=request.timeout,
            secrets=(api_key,),
        )
        document = json_object(answer.document, where)
        latency_ms = (time.perf_counter() - started) * 1000
        usage = document.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        answered_by = str(document.get("model") or request.model)
        cost = usage_with_cost(
            usage.get("input_tokens"),
            usage.get("output_tokens"),
            models=(request.model, answered_by),
            prices=self._prices,
        )
        with billed(cost):
            text = self._tool_input(document, request)
        return CompletionResponse(
            text=text,
            model=answered_by,
            usage=cost,
            latency_ms=latency_ms,
        )

    def request_body(self, request: CompletionRequest) -> dict[str, Any]:
        """The JSON body ``complete`` sends for ``request``."""
        body: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_output_tokens,
            "system": request.system,
            "messages": [{"role": "user", "content": request.prompt}],
            "tools": [
                {
                    "name": request.schema_name,
                    "description": f"Record your answer as a {request.schema_name}.",
                    "input_schema": request.json_schema,
                }
            ],
            "tool_choice": {"type": "tool", "name": request.schema_name},
        }
        if request.effort is not None and self._supports_effort(request.model):
            body["output_config"] = {"effort": request.effort}
        return body

    def _tool_input(self, document: dict[str, Any], request: CompletionRequest) -> str:
        where = f"{self.name} {request.model}"
        if document.get("stop_reason") == "max_tokens":
            raise cut_off(where, request.max_output_tokens)
        blocks = document.get("content")
        for block in blocks if isinstance(blocks, list) else []:
            if (
                isinstance(block, dict)
                and block.get("type") == "tool_use"
                and block.get("name") == request.schema_name
            ):
                return json.dumps(block.get("input"), ensure_ascii=False)
        raise InvalidResponse(
            f"{where}: the answer has no tool_use block for {request.schema_name!r} "
            f"(stop_reason {document.get('stop_reason')!r})"
        )
