"""The Layer protocol: a layer of one's own joins a pipeline without editing it."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic import BaseModel

from arbiter.contract import OnlineResult, Prediction
from arbiter.errors import InvalidParameter
from arbiter.online.judge_chain import JudgeChain
from arbiter.online.layer import LayerContext, NotRun
from arbiter.online.pipeline import OnlinePipeline
from arbiter.online.reading import Item

CLEAN: dict[str, Any] = {
    "id": "ax-1",
    "label": "nominal",
    "confidence": 0.9,
    "raw_output": {"status": "nominal", "anomaly_score": 0.1, "narrative": "All quiet."},
}
CONTRADICTION = {**CLEAN, "id": "ax-2", "raw_output": {"status": "nominal", "anomaly_score": 0.93}}


class Tone(BaseModel):
    """A payload of one's own."""

    words: int
    saw: list[str]


class ToneLayer:
    """An expensive layer defined here: counts the narrative's words."""

    name = "tone"
    expensive = True
    budget_floor = None

    def __init__(self) -> None:
        self.calls = 0

    async def run(self, item: Item, context: LayerContext) -> Tone:
        self.calls += 1
        narrative = item.doc.get("raw_output", {}).get("narrative", "")
        return Tone(words=len(narrative.split()), saw=list(context.found))


class ShoutingLayer:
    """A free layer defined here: flags a narrative in capitals."""

    name = "shouting"
    expensive = False
    budget_floor = None

    async def run(self, item: Item, context: LayerContext) -> dict[str, Any]:
        narrative = str(item.doc.get("raw_output", {}).get("narrative", ""))
        shouting = narrative.isupper()
        if shouting:
            context.flag("the narrative is in capitals")
        return {"flagged": shouting, "earlier": list(context.found)}


class Scripted:
    """An expensive layer that raises, abstains, or waits for ever."""

    expensive = True

    def __init__(self, name: str, behaviour: str, floor: tuple[float, str] | None = None):
        self.name = name
        self.behaviour = behaviour
        self.budget_floor = floor
        self.started = asyncio.Event()

    async def run(self, item: Item, context: LayerContext) -> dict[str, Any]:
        self.started.set()
        if self.behaviour == "raise":
            raise LookupError("no such tone")
        if self.behaviour == "abstain":
            raise NotRun("nothing to say")
        if self.behaviour == "survive":
            context.error("one backend failed", part="backend b")
            context.note("answered from backend a")
            return {"answered": True}
        await asyncio.Event().wait()
        return {}


class Critical:
    name = "local"
    timeout = 1.0

    async def verdict(self, prediction: Prediction, context: str | None) -> str:
        return "critical"


def judged(**options: Any) -> OnlinePipeline:
    chain = JudgeChain([Critical()], vocabulary=["nominal", "critical"])
    return OnlinePipeline(judge_chain=chain, **options)


async def test_a_layer_of_ones_own_appears_in_the_result_with_its_payload() -> None:
    tone = ToneLayer()
    result = await judged(layers=[tone]).evaluate(
        {
            **CONTRADICTION,
            "raw_output": {**CONTRADICTION["raw_output"], "narrative": "three words here"},
        }
    )
    assert list(result.layers) == [
        "heuristics",
        "grounding",
        "disagreement",
        "consistency",
        "judge",
        "tone",
    ]
    assert result.layers["tone"].status == "ran"
    assert result.payload("tone", Tone) == Tone(words=3, saw=["heuristics", "grounding"])
    assert result.judge is not None  # the built-in layers ran beside it
    assert result.judge.label == "critical"


async def test_a_payload_of_ones_own_survives_json_and_is_read_back_typed() -> None:
    result = await judged(layers=[ToneLayer()]).evaluate(CONTRADICTION)
    document = json.loads(result.model_dump_json())
    assert document["layers"]["tone"]["payload"] == {"words": 0, "saw": ["heuristics", "grounding"]}
    back = OnlineResult.model_validate(document)
    assert back.layers["tone"].payload == {"words": 0, "saw": ["heuristics", "grounding"]}
    assert back.payload("tone", Tone) == result.payload("tone", Tone)


async def test_an_expensive_layer_of_ones_own_waits_for_escalation() -> None:
    tone = ToneLayer()
    result = await judged(layers=[tone]).evaluate(CLEAN)
    assert result.escalated is False
    assert result.layers["tone"].status == "not_escalated"
    assert result.layers["tone"].payload is None
    assert tone.calls == 0


async def test_a_free_layer_of_ones_own_runs_after_grounding_and_can_escalate() -> None:
    pipeline = OnlinePipeline(layers=[ShoutingLayer(), ToneLayer()], sample_rate=0.0)
    shouting = {**CLEAN, "raw_output": {**CLEAN["raw_output"], "narrative": "ALL QUIET."}}
    result = await pipeline.evaluate(shouting)
    assert result.escalation_reasons == ["shouting: the narrative is in capitals"]
    assert result.layers["shouting"].payload == {
        "flagged": True,
        "earlier": ["heuristics", "grounding"],
    }
    assert result.flagged  # a free layer's "flagged" payload counts
    assert result.layers["tone"].status == "ran"
    quiet = await pipeline.evaluate(CLEAN)
    assert (quiet.escalated, quiet.flagged) == (False, False)


@pytest.mark.parametrize(
    ("behaviour", "status", "reason", "errors"),
    [
        ("raise", "error", "LookupError: no such tone", ["extra: LookupError: no such tone"]),
        ("abstain", "abstained", "nothing to say", []),
        ("survive", "ran", "answered from backend a", ["extra backend b: one backend failed"]),
    ],
)
async def test_a_layer_of_ones_own_is_isolated_like_the_built_in_ones(
    behaviour: str, status: str, reason: str, errors: list[str]
) -> None:
    result = await judged(layers=[Scripted("extra", behaviour)]).evaluate(CONTRADICTION)
    report = result.layers["extra"]
    assert (report.status, report.reason, report.cut_off) == (status, reason, False)
    assert result.errors == errors
    assert result.layers["judge"].status == "ran"
    assert ("extra" in result.error_kinds()) is (status == "error")


async def test_a_layer_of_ones_own_is_cut_off_by_the_budget_and_raises_it() -> None:
    hangs = Scripted("slow", "hang", floor=(0.05, "the slow layer's timeout"))
    pipeline = judged(layers=[hangs], budget_s=0.01, budget_margin_s=0.05)
    assert pipeline.budget_s == pytest.approx(1.05)  # the judge's 1 s outranks the layer's
    pipeline = OnlinePipeline(layers=[hangs], budget_s=0.01, budget_margin_s=0.05)
    assert pipeline.budget_note == (
        "budget_s 0.01s raised to 0.1s: the slow layer's timeout (0.05s) + 0.05s margin"
    )
    result = await pipeline.evaluate(CONTRADICTION)
    assert hangs.started.is_set()
    report = result.layers["slow"]
    assert (report.status, report.cut_off, report.reason) == (
        "abstained",
        True,
        "cut off at 0.1s budget",
    )
    await pipeline.aclose()


def test_two_layers_with_one_name_are_refused() -> None:
    with pytest.raises(InvalidParameter, match="layers with unique names"):
        OnlinePipeline(layers=[Scripted("judge", "raise")])


async def answer_x(input: dict[str, Any]) -> Prediction:
    return Prediction(label="x")


async def test_the_layers_are_reported_in_pipeline_order_whatever_finishes_first() -> None:
    pipeline = judged(systems={"a": answer_x}, layers=[Scripted("extra", "abstain")])
    result = await pipeline.evaluate({**CONTRADICTION, "metadata": {}})
    assert {name: r.status for name, r in result.layers.items()} == {
        "heuristics": "ran",
        "grounding": "not_configured",
        "disagreement": "abstained",
        "consistency": "not_configured",
        "judge": "ran",
        "extra": "abstained",
    }
    assert list(result.layers) == [layer.name for layer in pipeline.layers]


async def test_an_unreadable_prediction_reports_every_layer() -> None:
    pipeline = judged(layers=[ToneLayer(), ShoutingLayer()])
    assert [layer.name for layer in pipeline.layers] == [
        "heuristics",
        "grounding",
        "shouting",
        "disagreement",
        "consistency",
        "judge",
        "tone",
    ]
    result = await pipeline.evaluate(["not", "a", "prediction"])  # type: ignore[arg-type]
    assert {name: r.status for name, r in result.layers.items()} == {
        "heuristics": "error",
        "grounding": "not_configured",
        "shouting": "error",
        "disagreement": "not_configured",
        "consistency": "not_configured",
        "judge": "not_escalated",
        "tone": "not_escalated",
    }
