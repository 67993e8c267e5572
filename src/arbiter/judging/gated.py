"""A provider whose every call passes a gate: a cluster's shared limits, by provider name.

:class:`~arbiter.judging.context.JudgingContext` puts a provider behind a
:class:`GatedProvider` when it is given a gate (a Ray worker's
:class:`~arbiter.engines.base.CallGate`) and behind the model-call cache after that,
so only a request that reaches the model takes a rate token or a slot.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from arbiter.engines.base import CallGate
    from arbiter.providers.base import CompletionRequest, CompletionResponse, Provider

__all__ = ["GatedProvider"]


class GatedProvider:
    """``provider``, each of whose calls holds ``gate(provider.name)`` while it runs.

    Every other attribute (``base_url``, ``dialect``, ``cacheable``) is the wrapped
    provider's, so the cache keys its answers as it keyed them unwrapped.
    """

    def __init__(self, provider: Provider, gate: CallGate) -> None:
        self.name = provider.name
        self.provider = provider
        self.gate = gate

    def __getattr__(self, name: str) -> Any:
        if name == "provider":  # not set yet: never look it up on itself
            raise AttributeError(name)
        return getattr(self.provider, name)

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        """The wrapped provider's answer, asked once the gate lets the call through."""
        async with self.gate(self.name):
            return await self.provider.complete(request)

    async def aclose(self) -> None:
        """Close the wrapped provider's connections."""
        from arbiter.providers.base import close_provider

        await close_provider(self.provider)
