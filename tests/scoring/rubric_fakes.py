"""A scripted judge for the ``rubric`` scorer's tests, reached through a real registry."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from arbiter.config import Settings
from arbiter.errors import ProviderUnavailable
from arbiter.http.client import HttpClient
from arbiter.providers.base import CompletionRequest, CompletionResponse, Provider
from arbiter.providers.registry import ProviderRegistry
from arbiter.providers.shared import Prices, usage_with_cost
from arbiter.scoring.base import BuiltScorer, ScoringContext
from arbiter.scoring.registry import ScorerRegistry

JUDGE_MODEL = "judge-1"
PRICE = (1.0, 2.0)
"""USD per million tokens: a call of 100 + 20 tokens costs 0.00014."""
CALL_COST = (100 * 1.0 + 20 * 2.0) / 1_000_000

Answer = dict[str, Any] | str | Callable[[CompletionRequest], dict[str, Any] | str]


def verdict(
    verdict: str = "pass",
    score: float = 0.9,
    quotes: list[str] | None = None,
    reasoning: str = "It meets the rubric.",
) -> dict[str, Any]:
    """A judge's answer as the rubric's schema asks for it."""
    return {
        "reasoning": reasoning,
        "evidence": [{"quote": q, "shows": f"it says {q}"} for q in quotes or []],
        "verdict": verdict,
        "score": score,
    }


class ScriptedJudge:
    """Answers a fixed or computed answer, billed 100 + 20 tokens; records what it saw."""

    name = "judge"
    base_url = "http://judge.test/v1"

    def __init__(self, answer: Answer, prices: Prices | None = None) -> None:
        self.answer = answer
        self.prices = prices
        self.requests: list[CompletionRequest] = []
        self.fail = False
        self.closed = 0

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        self.requests.append(request)
        if self.fail:
            raise ProviderUnavailable(f"judge {request.model}: HTTP 503 after 2 retries")
        answer = self.answer(request) if callable(self.answer) else self.answer
        text = answer if isinstance(answer, str) else json.dumps(answer)
        usage = usage_with_cost(100, 20, models=(request.model,), prices=self.prices)
        return CompletionResponse(text=text, model=request.model, usage=usage, latency_ms=5.0)

    async def aclose(self) -> None:
        self.closed += 1


def judge_context(
    judge: ScriptedJudge,
    tmp_path: Path,
    *,
    use_cache: bool = False,
    prices: dict[str, tuple[float, float]] | None = None,
) -> ScoringContext:
    """A context whose provider ``judge`` is ``judge``, priced from the settings."""
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        home=tmp_path / "home",
        model_prices={JUDGE_MODEL: PRICE} if prices is None else prices,
    )
    registry = ProviderRegistry.default(plugins=False)

    def build(settings: Settings, http: HttpClient) -> Provider:
        judge.prices = settings.model_prices
        return judge

    registry.register_provider("judge", build)
    return ScoringContext(settings=settings, providers=registry, use_cache=use_cache)


def rubric_scorer(context: ScoringContext, **arguments: Any) -> BuiltScorer:
    """The ``rubric`` scorer on the scripted judge, as a registry builds it."""
    given: dict[str, Any] = {
        "rubric": "The answer names the capital.",
        "provider": "judge",
        "model": JUDGE_MODEL,
        **arguments,
    }
    return ScorerRegistry.default(plugins=False).factory_of("rubric")(context=context, **given)
