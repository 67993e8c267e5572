"""The one seam between Arbiter and an LLM: ``Provider.complete(request) -> response``.

Every provider (``mock``, ``openai``, ``anthropic``, ``gemini``) lives in its own module,
is imported lazily, converts its vendor's errors into the ``ProviderError`` tree at the
seam (through the one HTTP layer, :mod:`arbiter.http`), and takes an injected ``httpx``
transport so tests never touch the network. A provider holding connections closes them
in ``aclose``; :func:`close_provider` calls it where it exists.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from arbiter.contract import ModelCalls, Usage

__all__ = ["CompletionRequest", "CompletionResponse", "Provider", "close_provider"]


class CompletionRequest(BaseModel):
    """One structured-output call to a model."""

    model: str
    """Model name as the provider knows it."""
    system: str
    """System prompt."""
    prompt: str
    """User message."""
    schema_name: str = "critique"
    """Name of the JSON schema (some APIs require one)."""
    json_schema: dict[str, Any]
    """Strict JSON schema the answer must follow."""
    effort: Literal["low", "medium", "high", "max"] | None = None
    """Reasoning effort, sent only to models that accept it."""
    max_output_tokens: int = 2048
    """Upper bound on the answer's length."""
    timeout: float = 60.0
    """Seconds the call may take."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Anything a provider may want to log; never sent."""


class CompletionResponse(BaseModel):
    """A provider's answer: the JSON text and what it cost."""

    text: str
    """The raw text of the answer (JSON when the call succeeded)."""
    model: str
    """The model that answered, as the provider reports it."""
    usage: Usage = Field(default_factory=Usage)
    """Tokens and cost."""
    latency_ms: float = 0.0
    """Wall time of the call."""
    cached: bool = False
    """Answered from the model-call cache (:mod:`arbiter.providers.cache`): no model was
    asked, so ``usage`` is zero tokens at no cost."""

    def model_calls(self, *, latency_ms: float | None = None) -> ModelCalls:
        """This answer as one model call, for ``Score.model``.

        Args:
            latency_ms: The time the caller measured around the call (queueing for a
                concurrency slot and retries included); None: the provider's own.
        """
        return ModelCalls(
            calls=1,
            cached=int(self.cached),
            input_tokens=self.usage.input_tokens,
            output_tokens=self.usage.output_tokens,
            latency_ms=self.latency_ms if latency_ms is None else latency_ms,
            cost_usd=self.usage.cost_usd,
        )


class Provider(Protocol):
    """Anything that can answer a ``CompletionRequest``."""

    name: str

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        """Answer one request; raise a ``ProviderError`` subclass on failure."""
        ...


async def close_provider(provider: Provider) -> None:
    """Close a provider's connections, if it holds any (it has an ``aclose``)."""
    close = getattr(provider, "aclose", None)
    if callable(close):
        await close()
