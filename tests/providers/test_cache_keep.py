"""The model-call cache keeps only answers its caller accepts: the others are asked again."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from arbiter.contract import Case, Example, Output
from arbiter.judging import JudgingContext
from arbiter.jury.critics import CriticSpec, run_critic
from arbiter.providers.base import CompletionRequest, CompletionResponse
from arbiter.providers.cache import CachedProvider, ResponseCache
from tests.providers.test_cache import CountingProvider, request
from tests.scoring.rubric_fakes import ScriptedJudge, judge_context, rubric_scorer, verdict

SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["verdict"],
    "properties": {"verdict": {"enum": ["pass", "fail"]}},
}
CRITIQUE: dict[str, Any] = {
    "accuracy": 5,
    "consistency": 5,
    "completeness": 4,
    "callouts": [
        {
            "dimension": "completeness",
            "kind": "unsupported",
            "claim": "It stops early.",
            "quote": "Paris",
            "rival": None,
        }
    ],
}
CASE = Case(id="c1", task="Name the capital.", context="Paris is the capital.", output="Paris")


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[ResponseCache]:
    opened = ResponseCache(tmp_path / "models.sqlite3")
    yield opened
    opened.close()


async def asked_twice(provider: CountingProvider, cache: ResponseCache, sent: Any) -> int:
    """How many of two identical requests reached the model."""
    cached = CachedProvider(provider, cache)
    for _ in range(2):
        await cached.complete(sent)
    return len(provider.requests)


@pytest.mark.parametrize(
    "text",
    [
        "I think it passes.",
        '{"verdict": "maybe"}',
        "{}",
        '{"verdict": "pass", "extra": 1}',
        '["pass"]',
    ],
    ids=["prose", "bad-enum", "field-missing", "extra-field", "wrong-type"],
)
async def test_an_answer_that_breaks_the_requests_schema_is_asked_again(
    cache: ResponseCache, text: str
) -> None:
    provider = CountingProvider(text)
    assert await asked_twice(provider, cache, request(json_schema=SCHEMA)) == 2
    assert cache.entries() == 0


@pytest.mark.parametrize(
    "text",
    ['{"verdict": "pass"}', '```json\n{"verdict": "fail"}\n```'],
    ids=["bare", "fenced"],
)
async def test_an_answer_that_follows_the_schema_is_replayed(
    cache: ResponseCache, text: str
) -> None:
    provider = CountingProvider(text)
    assert await asked_twice(provider, cache, request(json_schema=SCHEMA)) == 1
    assert cache.entries() == 1


async def test_a_caller_decides_what_is_kept_when_it_says(cache: ResponseCache) -> None:
    seen: list[tuple[CompletionRequest, CompletionResponse]] = []

    def keep_nothing(sent: CompletionRequest, answer: CompletionResponse) -> bool:
        seen.append((sent, answer))
        return False

    provider = CountingProvider('{"verdict": "pass"}')
    cached = CachedProvider(provider, cache, keep=keep_nothing)
    for _ in range(2):
        await cached.complete(request(json_schema=SCHEMA))
    assert len(provider.requests) == 2
    assert [answer.text for _, answer in seen] == ['{"verdict": "pass"}'] * 2


@pytest.mark.parametrize(
    ("answer", "reached"),
    [
        (verdict("pass", 0.9, ["Paris"]), 1),
        (verdict("pass", 4.0, ["Paris"]), 1),  # the verdict is kept: so is the answer
        ({"verdict": "pass"}, 2),
        (verdict("maybe"), 2),
    ],
    ids=["valid", "score-out-of-range", "fields-missing", "bad-verdict"],
)
def test_the_rubric_judge_is_asked_again_only_after_an_answer_it_refused(
    tmp_path: Path, answer: dict[str, Any], reached: int
) -> None:
    judge = ScriptedJudge(answer)
    scores = []
    for _ in range(2):
        scorer = rubric_scorer(judge_context(judge, tmp_path, use_cache=True))
        scores.append(asyncio.run(scorer(Example(id="e1", input={}), Output(text="Paris"))))
    assert len(judge.requests) == reached
    assert scores[0].passed == scores[1].passed
    assert scores[0].error == scores[1].error


@pytest.mark.parametrize(
    ("critique", "reached"),
    [
        (CRITIQUE, 1),
        ({**CRITIQUE, "accuracy": 7}, 2),
        ({**CRITIQUE, "callouts": [{**CRITIQUE["callouts"][0], "kind": "rude"}]}, 2),
    ],
    ids=["valid", "rating-out-of-scale", "bad-callout-kind"],
)
async def test_a_critic_is_asked_again_only_after_an_answer_it_refused(
    cache: ResponseCache, critique: dict[str, Any], reached: int
) -> None:
    provider = CountingProvider(json.dumps(critique))
    cached = CachedProvider(provider, cache)
    spec = CriticSpec(name="factual", provider="judge", model="judge-1")
    context = JudgingContext(given={"judge": cached})
    outcomes = [await run_critic(spec, context, CASE) for _ in range(2)]
    assert len(provider.requests) == reached
    assert [o.status for o in outcomes] == ["ok" if reached == 1 else "dead"] * 2
