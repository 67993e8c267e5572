"""The ``openai`` provider: any OpenAI-compatible chat-completions server.

OpenAI-compatible servers agree on the chat-completions call but not on how it takes
a schema, so the *dialect* is a setting of the provider:

=============  ==============================  ===========================================
dialect        servers                          how the schema is sent
=============  ==============================  ===========================================
``openai``     OpenAI, vLLM, OpenRouter         ``response_format: {type: json_schema,
                                                json_schema: {name, strict: true, schema}}``
``llama_cpp``  llama-cpp-python's server        ``response_format: {type: json_object,
                                                schema}`` (it answers HTTP 500 to the above)
``ollama``     Ollama's native ``/api/chat``    ``format: <schema>``, ``stream: false``
=============  ==============================  ===========================================

No sampling parameter (temperature, top_p) is ever sent: current reasoning models
reject them, and stability comes from repeated calls, not from a temperature of 0.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from arbiter.errors import InvalidResponse
from arbiter.http.client import HttpClient, private_client
from arbiter.params import check_choice
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

__all__ = ["Dialect", "OpenAIProvider"]

Dialect = Literal["openai", "llama_cpp", "ollama"]
"""How an OpenAI-compatible server takes a JSON schema (see the module docstring)."""

# OpenAI's reasoning_effort tops out at "high"; our "max" asks for the most there is.
_OPENAI_EFFORT = {"low": "low", "medium": "medium", "high": "high", "max": "high"}
_OPENAI_HOST = "api.openai.com"


class OpenAIProvider:
    """Structured-output calls to an OpenAI-compatible server.

    Args:
        name: Provider name used in messages and records.
        base_url: The API root: ``https://api.openai.com/v1``, a vLLM or llama.cpp
            ``.../v1``, or, for the ``ollama`` dialect, Ollama's root
            (``http://localhost:11434``).
        api_key: Bearer token; required for api.openai.com, optional elsewhere.
        dialect: How the server takes a schema.
        http: The client calls go through (the registry's retries and concurrency
            limit); None: a private client without retries.
        transport: An httpx transport to use instead of the network (tests).
        prices: USD per million input / output tokens by model, for ``cost_usd``.

    Examples:
        >>> provider = OpenAIProvider(
        ...     "llama_cpp", base_url="http://127.0.0.1:8089/v1", api_key=None,
        ...     dialect="llama_cpp")
        >>> provider.endpoint
        'http://127.0.0.1:8089/v1/chat/completions'
    """

    def __init__(
        self,
        name: str = "openai",
        *,
        base_url: str,
        api_key: str | None,
        dialect: Dialect = "openai",
        http: HttpClient | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        prices: Prices | None = None,
    ) -> None:
        check_choice(dialect, "dialect", "OpenAIProvider", ("openai", "llama_cpp", "ollama"))
        self.name = name
        self.base_url = base_url.rstrip("/")
        self.dialect: Dialect = dialect
        self._api_key = api_key
        self._http = private_client(http, transport)
        self._prices = prices

    def __repr__(self) -> str:
        return (
            f"OpenAIProvider({self.name!r}, base_url={self.base_url!r}, dialect={self.dialect!r})"
        )

    async def aclose(self) -> None:
        """Close the provider's connection pool."""
        await self._http.aclose()

    @property
    def endpoint(self) -> str:
        """The URL ``complete`` posts to."""
        if self.dialect == "ollama":
            root = self.base_url.removesuffix("/v1")  # tolerate Ollama's OpenAI-style URL
            return f"{root}/api/chat"
        return f"{self.base_url}/chat/completions"

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        """Ask the model for JSON following ``request.json_schema``.

        Raises:
            ProviderAuthError: No key for api.openai.com, or the key was refused.
            RateLimited: HTTP 429.
            ProviderUnavailable: HTTP 5xx or no connection.
            ProviderTimeout: No answer within ``request.timeout``.
            InvalidResponse: Any other failure, a refusal, or an answer cut off at
                ``request.max_output_tokens``.
        """
        headers: dict[str, str] = {}
        if urlsplit(self.base_url).hostname == _OPENAI_HOST:
            require_key(self._api_key, provider=self.name, env="OPENAI_API_KEY")
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        started = time.perf_counter()
        answer = await self._http.post_json(
            self.endpoint,
            self.request_body(request),
            where=f"{self.name} {request.model}",
            headers=headers,
            timeout=request.timeout,
            secrets=(self._api_key,),
        )
        document = json_object(answer.document, f"{self.name} {request.model}")
        latency_ms = (time.perf_counter() - started) * 1000
        if self.dialect == "ollama":
            tokens = (document.get("prompt_eval_count"), document.get("eval_count"))
        else:
            usage = document.get("usage")
            usage = usage if isinstance(usage, dict) else {}
            tokens = (usage.get("prompt_tokens"), usage.get("completion_tokens"))
        answered_by = str(document.get("model") or request.model)
        cost = usage_with_cost(*tokens, models=(request.model, answered_by), prices=self._prices)
        with billed(cost):
            if self.dialect == "ollama":
                text = self._ollama_text(document, request)
            else:
                text = self._chat_text(document, request)
        return CompletionResponse(text=text, model=answered_by, usage=cost, latency_ms=latency_ms)

    def request_body(self, request: CompletionRequest) -> dict[str, Any]:
        """The JSON body ``complete`` sends for ``request`` in this dialect."""
        messages = [
            {"role": "system", "content": request.system},
            {"role": "user", "content": request.prompt},
        ]
        if self.dialect == "ollama":
            return {
                "model": request.model,
                "messages": messages,
                "stream": False,
                "format": request.json_schema,
                "options": {"num_predict": request.max_output_tokens},
            }
        body: dict[str, Any] = {"model": request.model, "messages": messages}
        if self.dialect == "llama_cpp":
            body["max_tokens"] = request.max_output_tokens
            body["response_format"] = {"type": "json_object", "schema": request.json_schema}
            return body
        body["max_completion_tokens"] = request.max_output_tokens
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {
                "name": request.schema_name,
                "strict": True,
                "schema": request.json_schema,
            },
        }
        if request.effort is not None:
            body["reasoning_effort"] = _OPENAI_EFFORT[request.effort]
        return body

    def _chat_text(self, document: dict[str, Any], request: CompletionRequest) -> str:
        where = f"{self.name} {request.model}"
        try:
            choice = document["choices"][0]
            message = choice["message"]
        except (KeyError, IndexError, TypeError):
            raise InvalidResponse(f"{where}: the answer has no choices[0].message") from None
        if not isinstance(message, dict):
            raise InvalidResponse(f"{where}: choices[0].message is not an object")
        if message.get("refusal"):
            raise InvalidResponse(f"{where}: the model refused: {message['refusal']}")
        content = message.get("content")
        if choice.get("finish_reason") == "length":
            raise cut_off(where, request.max_output_tokens)
        if not isinstance(content, str):
            raise InvalidResponse(f"{where}: choices[0].message.content is not text")
        return content

    def _ollama_text(self, document: dict[str, Any], request: CompletionRequest) -> str:
        where = f"{self.name} {request.model}"
        message = document.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if document.get("done_reason") == "length":
            raise cut_off(where, request.max_output_tokens)
        if not isinstance(content, str):
            raise InvalidResponse(f"{where}: the answer has no message.content text")
        return content
