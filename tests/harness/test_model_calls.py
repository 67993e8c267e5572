"""Model calls in a report: how ``ModelCalls`` add up, per scorer and overall, live and
once stored."""

from __future__ import annotations

from functools import reduce
from operator import add
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arbiter.contract import Dataset, Example, ModelCalls, Output, PairResult, Score, ScorerSpec
from arbiter.harness.report import build_report
from arbiter.harness.runner import run_eval
from arbiter.providers.base import CompletionRequest
from arbiter.service.runs import load_run
from arbiter.store import Store
from tests.scoring.rubric_fakes import (
    CALL_COST,
    ScriptedJudge,
    judge_context,
    rubric_scorer,
    verdict,
)

PRICED = ModelCalls(calls=1, input_tokens=100, output_tokens=20, latency_ms=5.0, cost_usd=0.25)
UNPRICED = ModelCalls(calls=1, input_tokens=100, output_tokens=20, latency_ms=5.0)
"""A billed call of a model missing from the price table: its cost is unknown."""
HIT = ModelCalls(calls=1, cached=1, latency_ms=0.1)
"""A cache hit that says nothing of its cost: it cost nothing."""
NONE = ModelCalls()


@pytest.mark.parametrize(
    ("left", "right", "cost"),
    [
        (PRICED, PRICED, 0.5),
        (PRICED, UNPRICED, None),
        (UNPRICED, HIT, None),
        (PRICED, HIT, 0.25),
        (HIT, HIT, 0.0),
        (NONE, PRICED, 0.25),
        (NONE, UNPRICED, None),
        (NONE, NONE, 0.0),
    ],
    ids=[
        "priced+priced",
        "priced+unpriced",
        "unpriced+hit",
        "priced+hit",
        "hit+hit",
        "none+priced",
        "none+unpriced",
        "none+none",
    ],
)
def test_a_cost_is_known_only_when_every_billed_call_was_priced(
    left: ModelCalls, right: ModelCalls, cost: float | None
) -> None:
    for total in (left + right, right + left):
        assert total.cost_usd == cost
        assert total.calls == left.calls + right.calls
        assert total.cached == left.cached + right.cached
        assert total.input_tokens == left.input_tokens + right.input_tokens
        assert total.latency_ms == pytest.approx(left.latency_ms + right.latency_ms)


calls = st.builds(
    ModelCalls,
    calls=st.just(1),
    cached=st.integers(0, 1),
    input_tokens=st.integers(0, 10_000),
    output_tokens=st.integers(0, 10_000),
    latency_ms=st.floats(0, 60_000),
    cost_usd=st.one_of(st.none(), st.floats(0, 10)),
)


@given(st.lists(calls, min_size=1, max_size=12), st.randoms())
def test_a_sum_of_model_calls_does_not_depend_on_their_order(
    many: list[ModelCalls], rng: Any
) -> None:
    shuffled = list(many)
    rng.shuffle(shuffled)
    one, other = reduce(add, many, ModelCalls()), reduce(add, shuffled, ModelCalls())
    assert (one.calls, one.cached, one.input_tokens, one.output_tokens) == (
        other.calls,
        other.cached,
        other.input_tokens,
        other.output_tokens,
    )
    assert one.latency_ms == pytest.approx(other.latency_ms)
    assert (one.cost_usd is None) == (other.cost_usd is None)
    if one.cost_usd is not None:
        assert one.cost_usd == pytest.approx(other.cost_usd)
    billed = [c for c in many if c.cached < c.calls]
    assert (one.cost_usd is None) == any(c.cost_usd is None for c in billed)


JUDGE = ScorerSpec(name="judge", kind="model")
CRITIC = ScorerSpec(name="critic", kind="model")
EXACT = ScorerSpec(name="exact")


def pair(example: str, repetition: int, *scores: Score, failed: bool = False) -> PairResult:
    if failed:
        return PairResult(
            example_id=example, repetition=repetition, error_type="SystemTimeout", latency_ms=1
        )
    return PairResult(
        example_id=example,
        repetition=repetition,
        output=Output(text="Paris"),
        scores=list(scores),
        passed=True,
        latency_ms=1.0,
    )


def test_a_report_sums_the_calls_of_each_scorer_and_of_the_run() -> None:
    examples = [Example(id=f"e{i}", input={}, expected="Paris") for i in range(3)]
    results = [
        pair("e0", 0, Score(name="judge", passed=True, model=PRICED), Score(name="exact")),
        pair("e0", 1, Score(name="judge", passed=True, model=HIT), Score(name="exact")),
        pair("e1", 0, Score(name="judge", error="ProviderTimeout: 60 s"), Score(name="exact")),
        pair("e1", 1, Score(name="judge", passed=True, model=PRICED), Score(name="exact")),
        pair("e2", 0, failed=True),
        pair("e2", 1, Score(name="judge", passed=True, model=PRICED), Score(name="exact")),
    ]
    for one in results[:4]:
        one.scores.append(Score(name="critic", passed=True, model=UNPRICED))
    report = build_report(
        examples,
        results,
        dataset_name="d",
        dataset_hash="h",
        system="s",
        k=2,
        scorers=[JUDGE, EXACT, CRITIC],
    )
    judge = report.sections["judge"].model
    assert judge is not None
    assert (judge.calls, judge.cached, judge.input_tokens, judge.output_tokens) == (4, 1, 300, 60)
    assert judge.latency_ms == pytest.approx(15.1)
    assert judge.cost_usd == pytest.approx(0.75)
    assert report.sections["exact"].model is None  # a scorer that asks no model
    critic = report.sections["critic"].model
    assert critic is not None
    assert (critic.calls, critic.input_tokens, critic.cost_usd) == (4, 400, None)
    assert report.model is not None
    assert report.model.model_dump() == pytest.approx((judge + critic).model_dump())
    assert report.model.cost_usd is None  # one unpriced model makes the total unknown


def test_a_report_without_model_scorers_has_no_model_calls() -> None:
    examples = [Example(id="e0", input={}, expected="Paris")]
    results = [pair("e0", 0, Score(name="exact", passed=True))]
    report = build_report(
        examples, results, dataset_name="d", dataset_hash="h", system="s", k=1, scorers=[EXACT]
    )
    assert report.model is None


def test_a_section_answered_only_from_the_cache_cost_nothing() -> None:
    examples = [Example(id="e0", input={}, expected="Paris")]
    results = [pair("e0", 0, Score(name="judge", passed=True, model=HIT))]
    report = build_report(
        examples, results, dataset_name="d", dataset_hash="h", system="s", k=1, scorers=[JUDGE]
    )
    assert report.sections["judge"].model == ModelCalls(
        calls=1, cached=1, latency_ms=0.1, cost_usd=0.0
    )


async def capital(input: dict[str, Any]) -> str:
    return f"The capital is {input['city']}."


def quoting_judge(request: CompletionRequest) -> dict[str, Any]:
    return verdict("pass", 0.9, ["The capital"])


@pytest.mark.parametrize(
    ("k", "cache"), [(1, False), (2, True)], ids=["fresh-calls", "second-repetition-cached"]
)
def test_a_stored_run_reports_the_same_model_calls_as_the_live_one(
    store: Store, tmp_path: Path, k: int, cache: bool
) -> None:
    judge = ScriptedJudge(quoting_judge)
    context = judge_context(judge, tmp_path, use_cache=cache)
    dataset = Dataset(
        name="capitals",
        examples=[Example(id=c, input={"city": c}, expected=c) for c in ("Paris", "Rome", "Oslo")],
    )
    live = run_eval(
        capital, dataset, k=k, cache=cache, scorers=[rubric_scorer(context)], store=store
    )
    assert live.run_id is not None
    stored = load_run(store, live.run_id).report
    assert stored.model == live.model
    assert stored.sections["rubric"].model == live.sections["rubric"].model
    assert len(judge.requests) == 3  # with k = 2 the second repetition is a hit
    assert live.model is not None
    assert (live.model.calls, live.model.cached, live.model.input_tokens) == (3 * k, 3 * k - 3, 300)
    assert live.model.cost_usd == pytest.approx(3 * CALL_COST)
