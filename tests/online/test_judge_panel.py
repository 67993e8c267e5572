"""The judge-panel layer: who reaches the judges (sampling), what it records, fail-open.

The panels here are injected stand-ins (the online engine never imports the judges);
tests/service/test_online_judges.py runs the real judges behind the same seam.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from arbiter.contract import Example, ModelCalls, OnlineResult, Output, Score
from arbiter.online.judge_panel import JudgedRun, JudgePanelLayer, PanelOutcome
from arbiter.online.pipeline import OnlinePipeline
from arbiter.online.rules import Condition, HeuristicRules
from arbiter.online.sampling import draw, sampled, trigger
from arbiter.online.scorers_layer import ScorersFinding, ScorersLayer
from arbiter.online.sink import BatchSummary
from tests.online.test_scorers_layer import COMPLETED, TRAJECTORY

CALL = ModelCalls(calls=2, input_tokens=300, output_tokens=40, latency_ms=5.0, cost_usd=0.02)


@dataclass
class Panels:
    """Judges that answer at once (or raise, or never answer), counting who asked."""

    names: Sequence[str] = ("groundedness", "plan_quality")
    budget_s: float = 1.0
    raises: Exception | None = None
    hangs: bool = False
    asked: list[str] = field(default_factory=list)

    async def judge(self, example: Example, output: Output) -> PanelOutcome:
        self.asked.append(example.id)
        assert output.trajectory is not None
        if self.raises is not None:
            raise self.raises
        if self.hangs:
            await asyncio.Event().wait()  # never set: only the pipeline's budget ends this
        scores = [
            Score(name="groundedness", passed=False, model=CALL),
            Score(name="plan_quality", explanation="abstained: no plan"),
        ]
        return PanelOutcome(scores=scores, model=CALL, silenced=())


def item(number: int, *, status: str = "completed", **extra: Any) -> dict[str, Any]:
    run = {**TRAJECTORY, "id": f"run-{number}", "status": status}
    return {"id": f"turn-{number}", "label": status, "trajectory": run, **extra}


def pipeline(panels: Panels, *, rate: float = 0.0, seed: int = 0, **options: Any) -> OnlinePipeline:
    return OnlinePipeline(
        rules=HeuristicRules(rules=[]),
        grounding=None,
        layers=[ScorersLayer([COMPLETED]), JudgePanelLayer(panels)],
        sample_rate=rate,
        seed=seed,
        **options,
    )


async def test_at_rate_zero_a_flagged_item_is_judged_and_a_clean_one_is_not() -> None:
    panels = Panels()
    scoring = pipeline(panels)
    clean = await scoring.evaluate(item(1))
    failed = await scoring.evaluate(item(2, status="error"))
    assert clean.layers["judge_panel"].status == "not_escalated"
    assert panels.asked == ["turn-2"]
    judged = failed.payload("judge_panel", JudgedRun)
    assert judged is not None
    assert judged.trigger == "flagged"
    assert judged.reasons == ["scorers: failed completed"]
    assert judged.rulings == {"groundedness": "fail", "plan_quality": "unknown"}


async def test_an_anomalous_item_is_judged_whatever_the_rate() -> None:
    anomalous = [Condition(field="label", op="in", value=["escalated_to_human"])]
    panels = Panels()
    result = await pipeline(panels, anomalous=anomalous).evaluate(
        item(3, status="completed", label="escalated_to_human")
    )
    judged = result.payload("judge_panel", JudgedRun)
    assert judged is not None
    assert judged.trigger == "anomalous"


async def test_deterministic_scoring_is_never_sampled() -> None:
    panels = Panels()
    scoring = pipeline(panels, rate=0.0)
    results = [await scoring.evaluate(item(n)) for n in range(20)]
    assert all(r.layers["scorers"].status == "ran" for r in results)
    assert all(r.payload("scorers", ScorersFinding) is not None for r in results)
    assert panels.asked == []


@pytest.mark.parametrize(("rate", "low", "high"), [(0.0, 0, 0), (0.25, 70, 130), (1.0, 400, 400)])
async def test_that_share_of_clean_items_reaches_the_judges(
    rate: float, low: int, high: int
) -> None:
    panels = Panels()
    scoring = pipeline(panels, rate=rate, seed=3)
    results = [await scoring.evaluate(item(n)) for n in range(400)]
    judged = [r for r in results if r.layers["judge_panel"].status == "ran"]
    assert low <= len(judged) <= high
    assert all(r.escalation_reasons == ["sampled"] for r in judged)
    assert {r.prediction_id for r in judged} == set(panels.asked)


async def test_the_draw_is_per_item_id_so_order_and_concurrency_do_not_change_it() -> None:
    ids = list(range(200))
    shuffled = random.Random(5).sample(ids, len(ids))
    in_order = pipeline(Panels(), rate=0.3, seed=9)
    concurrent = pipeline(Panels(), rate=0.3, seed=9)
    first = {r.prediction_id: r.escalated for r in [await in_order.evaluate(item(n)) for n in ids]}
    results = await asyncio.gather(*(concurrent.evaluate(item(n)) for n in shuffled))
    again = {r.prediction_id: r.escalated for r in results}
    assert first == again
    assert first == {f"turn-{n}": sampled(f"turn-{n}", 0.3, 9) for n in ids}
    other_seed = pipeline(Panels(), rate=0.3, seed=10)
    other = {
        r.prediction_id: r.escalated for r in [await other_seed.evaluate(item(n)) for n in ids]
    }
    assert other != first


def test_raising_the_rate_only_adds_items() -> None:
    ids = [f"item-{n}" for n in range(500)]
    at_5 = {i for i in ids if sampled(i, 0.05, 1)}
    at_10 = {i for i in ids if sampled(i, 0.10, 1)}
    assert at_5 < at_10
    assert all(0.0 <= draw(i, 1) < 1.0 for i in ids)


@pytest.mark.parametrize(
    ("reasons", "expected"),
    [
        ([], None),
        (["sampled"], "sampled"),
        (["heuristics: silent_contradiction"], "flagged"),
        (["scorers: failed loops", 'anomalous: label in ["x"]'], "anomalous"),
    ],
)
def test_the_trigger_names_the_strongest_reason(reasons: list[str], expected: str | None) -> None:
    assert trigger(reasons) == expected


async def test_the_cost_of_every_judge_call_is_recorded_against_the_item_and_summed() -> None:
    scoring = pipeline(Panels())
    summary = BatchSummary()
    for n in range(4):
        result = await scoring.evaluate(item(n, status="error" if n % 2 else "completed"))
        judged = result.payload("judge_panel", JudgedRun)
        if n % 2:
            assert judged is not None
            assert judged.model == CALL
        # What is stored is JSON: the payload reads back with its usage.
        summary.add(OnlineResult.model_validate_json(result.model_dump_json()))
    report = summary.report()
    assert report.judged is not None
    assert (report.judged.count, report.judged.n) == (2, 4)
    assert report.judged_by_trigger == {"flagged": 2}
    assert report.judge_verdicts["groundedness"] == {"pass": 0, "fail": 2, "unknown": 0}
    usage = report.judge_usage
    assert (usage.calls, usage.input_tokens, usage.output_tokens) == (4, 600, 80)
    assert usage.cost_usd == pytest.approx(0.04)


async def test_without_a_judge_panel_the_summary_has_no_judged_share() -> None:
    result = await OnlinePipeline(rules=HeuristicRules(rules=[]), grounding=None).evaluate(item(1))
    summary = BatchSummary()
    summary.add(result)
    assert summary.report().judged is None


async def test_panels_that_raise_are_an_error_line_never_an_exception() -> None:
    result = await pipeline(Panels(raises=RuntimeError("provider bug"))).evaluate(
        item(1, status="error")
    )
    assert result.layers["judge_panel"].status == "error"
    assert "judge_panel: RuntimeError: provider bug" in result.errors
    assert result.layers["scorers"].status == "ran"  # what the free layers found stands


async def test_panels_that_hang_are_cut_off_at_the_pipeline_budget() -> None:
    panels = Panels(hangs=True, budget_s=0.05)
    scoring = pipeline(panels, budget_s=0.05, budget_margin_s=0.01)
    result = await scoring.evaluate(item(1, status="error"))
    report = result.layers["judge_panel"]
    assert (report.status, report.cut_off) == ("abstained", True)
    await scoring.aclose()


async def test_an_item_without_a_run_is_not_judged() -> None:
    panels = Panels()
    result = await pipeline(panels, rate=1.0).evaluate({"id": "x", "label": "ok"})
    assert result.layers["judge_panel"].status == "abstained"
    assert result.layers["judge_panel"].reason == "no trajectory or flow run to judge"
    assert panels.asked == []


def test_the_pipeline_budget_outlasts_the_panels_budget() -> None:
    scoring = pipeline(Panels(budget_s=30.0), budget_s=5.0, budget_margin_s=1.0)
    assert scoring.budget_s == 31.0
    assert scoring.budget_note is not None
    assert "judge panels' budget" in scoring.budget_note
