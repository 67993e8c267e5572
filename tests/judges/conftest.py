"""Fake judge models, reached through the provider registry as real ones are."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from arbiter.config import Settings
from arbiter.contract import Usage
from arbiter.providers.base import CompletionRequest, CompletionResponse
from arbiter.providers.registry import ProviderRegistry
from arbiter.scoring.base import ScoringContext


def answer(
    verdict: str = "pass", *, score: float = 0.9, quotes: tuple[str, ...] = (), reasoning: str = "r"
) -> dict[str, Any]:
    """A judge's answer as a model would give it."""
    return {
        "reasoning": reasoning,
        "evidence": [{"quote": q, "shows": "why"} for q in quotes],
        "verdict": verdict,
        "score": score,
    }


@dataclass
class FakeJudgeModel:
    """A provider answering a fixed text, raising, or never answering."""

    name: str
    reply: str | dict[str, Any] = field(default_factory=answer)
    hang: bool = False
    error: Exception | None = None
    usage: Usage = field(
        default_factory=lambda: Usage(input_tokens=100, output_tokens=20, cost_usd=0.01)
    )
    cacheable: bool = False
    requests: list[CompletionRequest] = field(default_factory=list)

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        self.requests.append(request)
        if self.hang:
            await asyncio.Event().wait()  # never set: only a timeout ends this call
        if self.error is not None:
            raise self.error
        text = self.reply if isinstance(self.reply, str) else json.dumps(self.reply)
        return CompletionResponse(text=text, model=f"{self.name}-model", usage=self.usage)


Models = Callable[..., ScoringContext]


@pytest.fixture
def models() -> Models:
    """``models(alpha=FakeJudgeModel(...), ...)``: a context whose providers are those fakes."""

    def build(**fakes: FakeJudgeModel) -> ScoringContext:
        registry = ProviderRegistry()
        for name, fake in fakes.items():
            registry.register_provider(name, _factory(fake))
        return ScoringContext(settings=Settings(), providers=registry, use_cache=False)

    return build


def _factory(fake: FakeJudgeModel) -> Callable[[Settings, Any], FakeJudgeModel]:
    return lambda settings, http: fake


def configs(*names: str, timeout: float = 5.0, **extra: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Panel configurations for fake providers ``names`` (each its own family)."""
    return [{"provider": n, "model": "m", "timeout": timeout, **extra.get(n, {})} for n in names]
