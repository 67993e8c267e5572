"""The judge layer: judges at once, isolated, under a budget that holds one full call."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from arbiter.contract import Example, ModelCalls, Output, Score
from arbiter.judges.layer import effective_budget, run_judges
from arbiter.judges.panel import CallMeter

EXAMPLE, OUTPUT = Example(id="e1", input={"question": "q"}), Output(text="a")


@dataclass
class StubJudge:
    """A judge that rules at once, raises, or spends a call and then never returns."""

    name: str
    behaviour: str = "rule"
    call_timeout: float = 0.01

    async def judge(self, example: Example, output: Output, meter: CallMeter) -> Score:
        meter.add(ModelCalls(calls=1, input_tokens=10, cost_usd=0.5))
        if self.behaviour == "hang":
            await asyncio.Event().wait()  # only the layer's cut-off ends this
        if self.behaviour == "raise":
            raise RuntimeError("judge bug")
        return Score(name=self.name, passed=True, model=meter.total)


@pytest.mark.parametrize(
    ("budget", "timeout", "margin", "expected"),
    [(25.0, 20.0, 2.0, 25.0), (5.0, 20.0, 2.0, 22.0), (0.0, 0.0, 0.5, 0.5)],
)
def test_the_budget_always_holds_one_full_call(
    budget: float, timeout: float, margin: float, expected: float
) -> None:
    assert effective_budget(budget, timeout, margin) == expected


async def test_budget_expiry_keeps_finished_rulings_and_names_the_cut_off() -> None:
    judges = [StubJudge("fast"), StubJudge("stuck", "hang"), StubJudge("also_fast")]
    result = await run_judges(judges, EXAMPLE, OUTPUT, budget=0.0, margin=0.05)
    by_name = {s.name: s for s in result.scores}
    assert [s.name for s in result.scores] == ["fast", "stuck", "also_fast"]
    assert by_name["fast"].passed is True
    assert by_name["also_fast"].passed is True
    stuck = by_name["stuck"]
    assert stuck.passed is None
    assert stuck.explanation == f"cut off by the judge layer's budget of {result.budget:g}s"
    assert stuck.metadata["cut_off_s"] == pytest.approx(0.06)
    assert result.silenced == ("stuck",)


async def test_a_silenced_judges_finished_calls_are_still_counted() -> None:
    judges = [StubJudge("fast"), StubJudge("stuck", "hang")]
    result = await run_judges(judges, EXAMPLE, OUTPUT, budget=0.0, margin=0.05)
    assert result.model.calls == 2
    assert result.model.cost_usd == pytest.approx(1.0)
    assert result.scores[1].model is not None
    assert result.scores[1].model.calls == 1


async def test_a_judge_that_raises_is_a_named_abstention_and_the_others_stand() -> None:
    result = await run_judges(
        [StubJudge("broken", "raise"), StubJudge("fine")], EXAMPLE, OUTPUT, budget=5.0
    )
    broken, fine = result.scores
    assert (broken.name, broken.passed, broken.error) == ("broken", None, "RuntimeError: judge bug")
    assert fine.passed is True
    assert result.silenced == ()


async def test_no_judge_is_an_empty_layer() -> None:
    result = await run_judges([], EXAMPLE, OUTPUT, budget=1.0)
    assert (result.scores, result.model.calls) == ((), 0)
