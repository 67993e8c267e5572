"""OnlineScorer: a bounded queue in front of the pipeline that never blocks or raises."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

import pytest

from arbiter.contract import OnlineResult, Prediction
from arbiter.online.judge_chain import JudgeChain
from arbiter.online.pipeline import OnlinePipeline
from arbiter.online.scorer import OnlineScorer

CONTRADICTION = {
    "id": "ax",
    "label": "nominal",
    "confidence": 0.9,
    "raw_output": {"status": "nominal", "anomaly_score": 0.93},
}


class SlowJudge:
    name = "slow"
    timeout = 5.0

    def __init__(self, delay: float) -> None:
        self.delay = delay

    async def verdict(self, prediction: Prediction, context: str | None) -> str:
        await asyncio.sleep(self.delay)
        return "critical"


def slow_pipeline(delay: float = 0.05) -> OnlinePipeline:
    chain = JudgeChain([SlowJudge(delay)], vocabulary=["nominal", "degraded", "critical"])
    return OnlinePipeline(judge_chain=chain)


def item(i: int) -> dict[str, Any]:
    return {**CONTRADICTION, "id": f"ax-{i}"}


async def test_submit_returns_at_once_while_scoring_goes_on_in_the_background() -> None:
    results: list[OnlineResult] = []
    scorer = OnlineScorer(slow_pipeline(0.2), workers=2, on_result=results.append)
    started = time.perf_counter()
    accepted = [scorer.submit(item(i)) for i in range(4)]
    assert time.perf_counter() - started < 0.05
    assert accepted == [True] * 4
    assert results == []
    await scorer.drain()
    assert sorted(r.prediction_id for r in results) == [f"ax-{i}" for i in range(4)]
    assert (scorer.submitted, scorer.completed) == (4, 4)
    await scorer.close()


async def test_drop_oldest_discards_waiting_items_and_counts_them() -> None:
    results: list[OnlineResult] = []
    scorer = OnlineScorer(
        slow_pipeline(), max_queue=2, when_full="drop_oldest", workers=1, on_result=results.append
    )
    accepted = [scorer.submit(item(i)) for i in range(5)]
    await scorer.close()
    assert accepted == [True] * 5
    # The worker has not started yet when the burst arrives: only the last two survive.
    assert [r.prediction_id for r in results] == ["ax-3", "ax-4"]
    assert (scorer.submitted, scorer.dropped, scorer.rejected, scorer.completed) == (5, 3, 0, 2)


async def test_reject_refuses_new_items_when_full_and_counts_them() -> None:
    results: list[OnlineResult] = []
    scorer = OnlineScorer(
        slow_pipeline(), max_queue=2, when_full="reject", workers=1, on_result=results.append
    )
    accepted = [scorer.submit(item(i)) for i in range(5)]
    await scorer.close()
    assert accepted == [True, True, False, False, False]
    assert [r.prediction_id for r in results] == ["ax-0", "ax-1"]
    assert (scorer.submitted, scorer.dropped, scorer.rejected, scorer.completed) == (2, 0, 3, 2)


async def test_drain_completes_everything_submitted() -> None:
    scorer = OnlineScorer(slow_pipeline(0.01), max_queue=100, workers=8)
    for i in range(60):
        assert scorer.submit(item(i))
    await scorer.drain()
    assert scorer.completed == 60
    assert scorer.pending == 0
    await scorer.close()


async def raising_callback(result: OnlineResult) -> None:
    raise RuntimeError("the sink is down")


@pytest.mark.parametrize("callback", [raising_callback, lambda result: 1 / 0])
async def test_a_failing_callback_never_reaches_the_caller(callback: Any) -> None:
    scorer = OnlineScorer(OnlinePipeline(), on_result=callback)
    for i in range(3):
        assert scorer.submit(item(i))
    await scorer.close()
    assert (scorer.completed, scorer.callback_errors) == (3, 3)


async def test_garbage_submissions_are_scored_not_raised() -> None:
    results: list[OnlineResult] = []
    scorer = OnlineScorer(OnlinePipeline(), on_result=results.append)
    assert scorer.submit(None)  # type: ignore[arg-type]
    assert scorer.submit({"confidence": float("nan")})
    await scorer.close()
    assert all(result.errors for result in results)
    assert len(results) == 2


async def test_a_closed_scorer_rejects_instead_of_raising() -> None:
    scorer = OnlineScorer(OnlinePipeline())
    await scorer.close()
    assert scorer.submit(item(0)) is False
    assert scorer.rejected == 1


def test_submit_without_a_running_loop_is_refused_not_raised() -> None:
    scorer = OnlineScorer(OnlinePipeline())
    assert scorer.submit(item(0)) is False
    assert scorer.rejected == 1


async def test_a_crashing_pipeline_is_counted_and_the_worker_lives_on() -> None:
    class Crashing(OnlinePipeline):
        async def evaluate(self, prediction: Prediction | Mapping[str, Any], **_: Any) -> Any:
            raise RuntimeError("bug")

    scorer = OnlineScorer(Crashing(), workers=1)
    for i in range(3):
        scorer.submit(item(i))
    await scorer.close()
    assert (scorer.completed, scorer.callback_errors) == (0, 3)


async def test_workers_yield_so_the_service_loop_keeps_running() -> None:
    ticks = 0

    async def service() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(service())
    scorer = OnlineScorer(OnlinePipeline(), max_queue=500, workers=1)
    for i in range(300):
        scorer.submit(item(i))
    await scorer.drain()
    task.cancel()
    await scorer.close()
    assert ticks >= 250  # the loop ran between the items, not only after the backlog


@pytest.mark.parametrize("options", [{"max_queue": 0}, {"workers": 0}, {"when_full": "block"}])
def test_bad_options_are_refused_at_construction(options: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="OnlineScorer"):
        OnlineScorer(OnlinePipeline(), **options)
