"""The online pipeline: ordering, escalation, budgets, isolation of failures, telemetry."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from arbiter.config import Settings
from arbiter.contract import Prediction
from arbiter.errors import InputError
from arbiter.online.build import build_pipeline, evaluate_item, evaluate_item_sync
from arbiter.online.config import OnlineConfig
from arbiter.online.consistency import ConsistencyCheck, ConsistencyLayer
from arbiter.online.disagreement import DisagreementLayer
from arbiter.online.grounding import GroundingConfig, GroundingLayer, PolicyCheck
from arbiter.online.heuristics import HeuristicsLayer
from arbiter.online.judge_chain import JudgeChain
from arbiter.online.layer import Unconfigured
from arbiter.online.pipeline import OnlinePipeline
from arbiter.online.rules import Condition
from arbiter.telemetry import Telemetry
from arbiter.vectors.base import VectorItem
from arbiter.vectors.stores import EmbeddedVectorStore

VOCABULARY = ["nominal", "degraded", "critical"]
CLEAN: dict[str, Any] = {
    "id": "ax-1",
    "label": "nominal",
    "confidence": 0.9,
    "raw_output": {"status": "nominal", "anomaly_score": 0.1},
    "metadata": {"input": {"event": 1}},
}
CONTRADICTION = {
    **CLEAN,
    "id": "ax-2",
    "raw_output": {"status": "nominal", "anomaly_score": 0.93},
}
HANG = object()


# ----------------------------------------------------------------------------- fakes


class Rendezvous:
    """Lets its parties through only once all of them have arrived: run them one after
    the other and the first never returns."""

    def __init__(self, parties: int) -> None:
        self.parties = parties
        self.arrived = 0
        self.everyone = asyncio.Event()

    async def arrive(self) -> None:
        self.arrived += 1
        if self.arrived == self.parties:
            self.everyone.set()
        await self.everyone.wait()


class FakeSystem:
    """A system under test answering a label after a delay (or hanging, or raising)."""

    def __init__(self, answer: object, delay: float = 0.0, meet: Rendezvous | None = None):
        self.answer = answer
        self.delay = delay
        self.meet = meet
        self.calls = 0

    async def __call__(self, input: dict[str, Any]) -> Prediction:
        self.calls += 1
        if self.meet is not None:
            await self.meet.arrive()
        await asyncio.sleep(self.delay)
        if self.answer is HANG:
            await asyncio.Event().wait()
        if isinstance(self.answer, BaseException):
            raise self.answer
        return Prediction(label=str(self.answer))


class FakeJudge:
    def __init__(
        self,
        name: str,
        answer: object = "critical",
        delay: float = 0.0,
        timeout: float = 1.0,
        meet: Rendezvous | None = None,
    ):
        self.name = name
        self.answer = answer
        self.delay = delay
        self.timeout = timeout
        self.meet = meet
        self.calls = 0

    async def verdict(self, prediction: Prediction, context: str | None) -> str:
        self.calls += 1
        if self.meet is not None:
            await self.meet.arrive()
        await asyncio.sleep(self.delay)
        if self.answer is HANG:
            await asyncio.Event().wait()
        if isinstance(self.answer, BaseException):
            raise self.answer
        return str(self.answer)


class FakeEmbedder:
    name = "fake"
    dimension = 2

    def __init__(
        self,
        delay: float = 0.0,
        error: BaseException | None = None,
        meet: Rendezvous | None = None,
    ) -> None:
        self.delay = delay
        self.error = error
        self.meet = meet

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self.meet is not None:
            await self.meet.arrive()
        await asyncio.sleep(self.delay)
        if self.error is not None:
            raise self.error
        return [[1.0, 0.0] for _ in texts]


def consistency_check(pipeline: OnlinePipeline) -> ConsistencyCheck:
    layer = pipeline.layer("consistency")
    assert isinstance(layer, ConsistencyLayer)
    return layer.check


def policy_check(pipeline: OnlinePipeline) -> PolicyCheck:
    layer = pipeline.layer("grounding")
    assert isinstance(layer, GroundingLayer)
    assert layer.policy is not None
    return layer.policy


def chain(*judges: FakeJudge) -> JudgeChain:
    return JudgeChain(list(judges), vocabulary=VOCABULARY)


async def past_items() -> EmbeddedVectorStore:
    store = EmbeddedVectorStore()
    await store.upsert(
        "transactions",
        [VectorItem(id="old", vector=[1.0, 0.0], metadata={"label": "critical"})],
    )
    return store


async def full_pipeline(
    delay: float = 0.0, meet: Rendezvous | None = None, **options: Any
) -> OnlinePipeline:
    return OnlinePipeline(
        grounding=GroundingConfig(),
        systems={
            "a": FakeSystem("critical", delay, meet),
            "b": FakeSystem("nominal", delay, meet),
        },
        consistency=ConsistencyCheck(
            embedder=FakeEmbedder(delay, meet=meet), store=await past_items(), threshold=0.9
        ),
        judge_chain=chain(FakeJudge("local", "critical", delay, meet=meet)),
        **options,
    )


# ------------------------------------------------------------------- order, escalation


async def test_a_clean_item_is_not_escalated_and_the_expensive_layers_say_so() -> None:
    result = await (await full_pipeline()).evaluate(CLEAN)
    assert result.escalated is False
    assert result.escalation_reasons == []
    assert result.heuristics is not None
    assert not result.heuristics.flagged
    assert result.grounding is not None
    assert {name: report.status for name, report in result.layers.items()} == {
        "heuristics": "ran",
        "grounding": "ran",
        "disagreement": "not_escalated",
        "consistency": "not_escalated",
        "judge": "not_escalated",
    }
    assert (result.disagreement, result.consistency, result.judge) == (None, None, None)


async def test_a_flagged_item_runs_every_configured_layer_concurrently() -> None:
    # Two systems, the embedder and the judge meet: only concurrent layers all finish.
    pipeline = await full_pipeline(
        delay=0.05, meet=Rendezvous(4), disagreement_timeout=1.0, budget_s=2.0
    )
    result = await pipeline.evaluate(CONTRADICTION)
    assert result.escalation_reasons == ["heuristics: silent_contradiction"]
    assert all(result.layers[n].status == "ran" for n in ("disagreement", "consistency", "judge"))
    assert result.disagreement is not None
    assert result.disagreement.agreed is False
    assert result.consistency is not None
    assert result.consistency.agrees is False
    assert result.judge is not None
    assert (result.judge.label, result.judge.agrees) == (
        "critical",
        False,
    )
    assert all(result.layers[n].latency_ms >= 45 for n in ("disagreement", "judge"))
    assert result.total_ms >= result.layers["judge"].latency_ms


async def test_an_unconfigured_layer_is_none_with_not_configured() -> None:
    pipeline = OnlinePipeline(judge_chain=chain(FakeJudge("local")))
    result = await pipeline.evaluate(CONTRADICTION)
    assert result.escalated
    assert result.judge is not None
    for name in ("grounding", "disagreement", "consistency"):
        assert result.layers[name].model_dump() == {
            "status": "not_configured",
            "reason": "not configured",
            "latency_ms": 0.0,
            "cut_off": False,
            "payload": None,
        }
    assert (result.grounding, result.disagreement, result.consistency) == (None, None, None)


async def test_an_ungrounded_claim_escalates() -> None:
    prediction = {**CLEAN, "raw_output": {**CLEAN["raw_output"], "narrative": "per policy X-9"}}
    result = await OnlinePipeline(grounding=GroundingConfig()).evaluate(prediction)
    assert result.escalation_reasons == ["grounding: ungrounded x-9"]


async def test_an_anomalous_item_escalates_with_the_condition_named() -> None:
    pipeline = OnlinePipeline(anomalous=[Condition(field="label", op="in", value=["critical"])])
    result = await pipeline.evaluate({**CLEAN, "label": "critical"})
    assert result.escalation_reasons == ['anomalous: label in ["critical"]']


def sampled(pipeline: OnlinePipeline, n: int) -> list[bool]:
    return [
        asyncio.run(pipeline.evaluate({**CLEAN, "id": str(i)})).escalation_reasons == ["sampled"]
        for i in range(n)
    ]


@pytest.mark.parametrize(("rate", "low", "high"), [(0.0, 0, 0), (1.0, 400, 400), (0.3, 90, 150)])
def test_sample_rate_escalates_that_share_of_clean_items(rate: float, low: int, high: int) -> None:
    assert low <= sum(sampled(OnlinePipeline(sample_rate=rate, seed=7), 400)) <= high


def test_sampling_is_reproducible_under_a_seed() -> None:
    first = sampled(OnlinePipeline(sample_rate=0.5, seed=11), 50)
    again = sampled(OnlinePipeline(sample_rate=0.5, seed=11), 50)
    other = sampled(OnlinePipeline(sample_rate=0.5, seed=12), 50)
    assert first == again
    assert first != other


async def test_a_flagged_item_never_draws_from_the_sampler() -> None:
    pipeline = OnlinePipeline(sample_rate=1.0)
    result = await pipeline.evaluate(CONTRADICTION)
    assert "sampled" not in result.escalation_reasons


# ------------------------------------------------------------------------------ budget


async def test_the_budget_is_raised_to_the_longest_call_plus_margin_and_says_so() -> None:
    pipeline = OnlinePipeline(
        judge_chain=chain(FakeJudge("slow", timeout=20.0)), budget_s=2.5, budget_margin_s=1.0
    )
    assert pipeline.budget_s == 21.0
    assert pipeline.budget_note == (
        "budget_s 2.5s raised to 21s: the longest judge timeout (20s) + 1s margin"
    )
    assert OnlinePipeline(budget_s=2.5).budget_note is None


async def test_the_cut_off_keeps_finished_rulings_and_names_itself_for_the_rest() -> None:
    pipeline = OnlinePipeline(
        systems={"a": FakeSystem("critical", 0.01), "b": FakeSystem("critical", 0.02)},
        disagreement_timeout=0.2,
        consistency=ConsistencyCheck(embedder=FakeEmbedder(delay=30), store=await past_items()),
        # Two judges of 0.2 s each, both hanging: the chain needs 0.4 s, the budget is 0.25 s.
        judge_chain=chain(FakeJudge("one", HANG, timeout=0.2), FakeJudge("two", HANG, timeout=0.2)),
        budget_s=0.1,
        budget_margin_s=0.05,
    )
    assert pipeline.budget_s == pytest.approx(0.25)
    result = await pipeline.evaluate(CONTRADICTION)
    assert result.layers["disagreement"].status == "ran"
    assert result.disagreement is not None
    assert result.disagreement.agreed is True
    for name in ("consistency", "judge"):
        assert result.layers[name].status == "abstained"
        assert result.layers[name].reason == "cut off at 0.25s budget"
    assert (result.consistency, result.judge) == (None, None)
    await pipeline.aclose()  # the silenced layers are cancelled, not left running


# -------------------------------------------------------------------------- isolation


async def test_a_layer_that_raises_is_recorded_not_raised() -> None:
    pipeline = OnlinePipeline(
        consistency=ConsistencyCheck(
            embedder=FakeEmbedder(error=RuntimeError("embedder exploded")), store=await past_items()
        ),
        judge_chain=chain(FakeJudge("local")),
    )
    result = await pipeline.evaluate(CONTRADICTION)
    assert result.layers["consistency"].status == "error"
    assert result.layers["consistency"].reason == "RuntimeError: embedder exploded"
    assert "consistency: RuntimeError: embedder exploded" in result.errors
    assert result.judge is not None
    assert result.judge.label == "critical"


async def test_a_rule_set_that_raises_still_yields_a_result() -> None:
    class Broken:
        def check(self, doc: Any) -> Any:
            raise ZeroDivisionError("bad rule")

    pipeline = OnlinePipeline()
    heuristics = pipeline.layer("heuristics")
    assert isinstance(heuristics, HeuristicsLayer)
    heuristics.rules = Broken()  # type: ignore[assignment]
    result = await pipeline.evaluate(CLEAN)
    assert result.heuristics is None
    assert result.layers["heuristics"].status == "error"
    assert result.errors == ["heuristics: ZeroDivisionError: bad rule"]


async def test_systems_that_fail_are_kept_in_the_result_and_the_errors() -> None:
    pipeline = OnlinePipeline(
        systems={
            "ok": FakeSystem("critical"),
            "raises": FakeSystem(ConnectionError("refused")),
            "hangs": FakeSystem(HANG),
        },
        disagreement_timeout=0.1,
    )
    result = await pipeline.evaluate(CONTRADICTION)
    assert result.disagreement is not None
    assert result.disagreement.agreed is None
    assert set(result.disagreement.errors_by_provider) == {"raises", "hangs"}
    assert "disagreement: hangs: SystemTimeout: no answer within 0.1s" in result.errors


async def test_disagreement_without_an_input_abstains_and_input_can_be_passed() -> None:
    system = FakeSystem("critical")
    pipeline = OnlinePipeline(systems={"a": system})
    without = await pipeline.evaluate({**CONTRADICTION, "metadata": {}})
    assert without.layers["disagreement"].status == "abstained"
    assert "no input to replay" in (without.layers["disagreement"].reason or "")
    given = await pipeline.evaluate({**CONTRADICTION, "metadata": {}}, input={"event": 2})
    assert given.disagreement is not None
    assert given.disagreement.labels_by_provider == {"a": "critical"}


def ollama_answer(label: str) -> httpx.Response:
    content = json.dumps({"label": label, "reason": "the score says so"})
    return httpx.Response(200, json={"model": "m", "message": {"content": content}})


async def hang_forever(request: httpx.Request) -> httpx.Response:
    await asyncio.sleep(30)
    return ollama_answer("critical")


def refuse_400(request: httpx.Request) -> httpx.Response:
    return httpx.Response(400, json={"error": {"message": "bad request"}})


def fail_500(request: httpx.Request) -> httpx.Response:
    return httpx.Response(500, text="internal error")


def garbage(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, text="<html>not json</html>")


def out_of_vocabulary(request: httpx.Request) -> httpx.Response:
    return ollama_answer("reject")


def raising(request: httpx.Request) -> httpx.Response:
    raise RuntimeError("the provider raised")


@pytest.mark.parametrize("handler", [hang_forever, fail_500, garbage, out_of_vocabulary, raising])
async def test_a_faulty_judge_provider_still_yields_a_result_with_the_failure(
    handler: Any,
) -> None:
    config = OnlineConfig(
        judges=[{"name": "ollama", "provider": "ollama", "model": "m", "timeout": 0.3}],
        budget_s=0.2,
        budget_margin_s=0.2,
    )
    pipeline = build_pipeline(
        config, Settings(_env_file=None), transport=httpx.MockTransport(handler)
    )
    result = await pipeline.evaluate(CONTRADICTION)
    assert result.judge is not None
    assert result.judge.source == "heuristics_fallback"
    assert result.judge.label is None
    [attempt] = result.judge.attempts
    assert attempt.outcome == "failed"
    assert attempt.error
    assert f"judge: ollama: {attempt.error}" in result.errors


async def test_a_working_judge_provider_answers_through_build_pipeline() -> None:
    config = OnlineConfig(judges=[{"name": "ollama", "provider": "ollama", "model": "m"}])
    transport = httpx.MockTransport(lambda request: ollama_answer("critical"))
    pipeline = build_pipeline(config, Settings(_env_file=None), transport=transport)
    result = await pipeline.evaluate(CONTRADICTION)
    assert result.judge is not None
    assert (result.judge.source, result.judge.label) == (
        "ollama",
        "critical",
    )


# ------------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    ("prediction", "error"),
    [
        ({"id": "p"}, "prediction: label: Field required"),
        ({**CLEAN, "confidence": math.nan}, "prediction: confidence: Value error"),
        ({**CLEAN, "confidence": 7}, "prediction: confidence: Value error"),
        ({**CLEAN, "raw_output": "text"}, "prediction: raw_output: Input should be a valid dict"),
        ({**CLEAN, "label": 3}, "prediction: label: Input should be a valid string"),
    ],
)
async def test_a_bad_prediction_dict_still_yields_a_result(
    prediction: dict[str, Any], error: str
) -> None:
    pipeline = await full_pipeline()
    result = await pipeline.evaluate(prediction)
    assert any(line.startswith(error) for line in result.errors), result.errors
    assert result.heuristics is not None
    assert result.heuristics.flagged
    assert result.escalated  # the layers still run, on a sanitised copy
    assert result.layers["judge"].status == "ran"


async def test_an_unknown_extra_field_is_not_an_error() -> None:
    result = await OnlinePipeline().evaluate({**CLEAN, "source": "stream-7"})
    assert result.errors == []


@pytest.mark.parametrize("prediction", [None, "a string", 42, ["a", "list"]])
async def test_an_unreadable_prediction_yields_a_result_saying_so(prediction: Any) -> None:
    result = await (await full_pipeline()).evaluate(prediction)
    assert result.label is None
    assert result.prediction_id.startswith("sha256:")
    assert result.errors[0].startswith("unreadable prediction: expected a Prediction or a mapping")
    assert result.layers["heuristics"].status == "error"


async def test_a_prediction_without_an_id_gets_a_content_hash() -> None:
    pipeline = OnlinePipeline()
    first = await pipeline.evaluate({**CLEAN, "id": ""})
    second = await pipeline.evaluate({**CLEAN, "id": ""})
    assert first.prediction_id.startswith("sha256:")
    assert first.prediction_id == second.prediction_id


async def test_a_5mb_narrative_yields_a_result_with_the_truncation_recorded() -> None:
    narrative = "x" * 5_000_000 + " per policy LATE-1"
    prediction = {**CLEAN, "raw_output": {**CLEAN["raw_output"], "narrative": narrative}}
    pipeline = await full_pipeline()
    result = await pipeline.evaluate(prediction)
    assert result.escalated is False
    assert result.layers["grounding"].reason == (
        "raw_output.narrative truncated: scanned 100,000 of 5,000,018 chars"
    )


async def test_a_prediction_model_is_accepted_as_is() -> None:
    result = await OnlinePipeline().evaluate(Prediction.model_validate(CONTRADICTION))
    assert (result.prediction_id, result.label, result.errors) == ("ax-2", "nominal", [])
    assert result.escalated


# ---------------------------------------------------------------- grounding stage 3


async def test_stage3_runs_for_regulatory_text_and_its_failure_keeps_stages_1_2() -> None:
    policies = EmbeddedVectorStore()
    await policies.upsert("policies", [VectorItem(id="AML-1", vector=[0.0, 1.0])])
    prediction = {
        **CLEAN,
        "raw_output": {**CLEAN["raw_output"], "narrative": "AML review", "policy_refs": ["AML-1"]},
    }
    far = OnlinePipeline(
        grounding=GroundingConfig(),
        policy=PolicyCheck(embedder=FakeEmbedder(), store=policies, threshold=0.7),
    )
    result = await far.evaluate(prediction)
    assert result.grounding is not None
    assert result.grounding.stages == [1, 2, 3]
    assert result.escalation_reasons == ["grounding: best policy similarity 0.00 under threshold"]
    broken = OnlinePipeline(
        grounding=GroundingConfig(),
        policy=PolicyCheck(embedder=FakeEmbedder(delay=5), store=policies, timeout_s=0.05),
    )
    result = await broken.evaluate(prediction)
    assert result.grounding is not None
    assert result.grounding.stages == [1, 2]
    assert result.errors == ["grounding stage 3: no answer within 0.05s"]
    assert result.layers["grounding"].status == "ran"
    assert result.layers["grounding"].reason == "stage 3: no answer within 0.05s"
    assert result.escalated is False


# ------------------------------------------------------------------------- telemetry


def spans_by_name(exporter: InMemorySpanExporter) -> dict[str, ReadableSpan]:
    return {span.name: span for span in exporter.get_finished_spans()}


async def test_spans_and_metrics_are_emitted_through_the_telemetry_object() -> None:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    telemetry = Telemetry(
        tracer_provider=tracer_provider, meter_provider=MeterProvider(metric_readers=[reader])
    )
    config = OnlineConfig(
        judges=[
            {"name": "down", "provider": "ollama", "model": "m", "timeout": 0.5},
        ]
    )
    pipeline = build_pipeline(
        config,
        Settings(_env_file=None),
        telemetry=telemetry,
        transport=httpx.MockTransport(refuse_400),  # not retried: one failed attempt
    )
    await pipeline.evaluate(CONTRADICTION)
    await pipeline.evaluate(CLEAN)

    spans = spans_by_name(exporter)
    root = spans["arbiter.evaluate_item"]
    assert root.attributes is not None
    assert root.attributes["arbiter.prediction_id"] == "ax-1"
    judge_layer = spans["arbiter.layer.judge"]
    for name in ("arbiter.layer.heuristics", "arbiter.layer.grounding", "arbiter.layer.judge"):
        assert spans[name].parent is not None
    attempt = spans["arbiter.judge.down"]
    assert attempt.parent is not None
    assert attempt.parent.span_id == judge_layer.context.span_id
    assert attempt.events
    assert attempt.events[0].name == "exception"
    assert [event.name for event in judge_layer.events] == ["arbiter.judge.attempt_failed"]

    data = reader.get_metrics_data()
    assert data is not None
    points: dict[str, Any] = {
        metric.name: metric.data.data_points
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
    }
    assert sum(p.value for p in points["arbiter.items"]) == 2
    assert sum(p.value for p in points["arbiter.escalations"]) == 1
    judge_sources = {p.attributes["source"] for p in points["arbiter.judge.outcome"]}
    assert judge_sources == {"heuristics_fallback"}
    layers = {
        (p.attributes["layer"], p.attributes["status"]) for p in points["arbiter.layer.latency"]
    }
    assert ("judge", "ran") in layers
    assert ("heuristics", "ran") in layers


# ------------------------------------------------------------------ entry points, config


async def test_evaluate_item_builds_a_default_pipeline() -> None:
    result = await evaluate_item(CONTRADICTION)
    assert result.escalation_reasons == ["heuristics: silent_contradiction"]
    assert result.layers["judge"].status == "not_configured"


def test_evaluate_item_sync_wraps_the_async_core() -> None:
    result = evaluate_item_sync(CLEAN, pipeline=OnlinePipeline())
    assert result.escalated is False


def test_config_loads_from_json_with_a_relative_rules_file(tmp_path: Path) -> None:
    (tmp_path / "rules.json").write_text(json.dumps([{"kind": "label_in", "labels": ["ok"]}]))
    (tmp_path / "online.json").write_text(
        json.dumps({"rules": "rules.json", "sample_rate": 0.1, "judges": []})
    )
    config = OnlineConfig.load(tmp_path / "online.json")
    assert config.rule_set().vocabulary == ["ok"]
    heuristics = build_pipeline(config).layer("heuristics")
    assert isinstance(heuristics, HeuristicsLayer)
    assert heuristics.rules.names == ("label_in",)


@pytest.mark.parametrize(
    ("document", "named"),
    [
        ({"sample_rate": 2}, "sample_rate"),
        ({"judges": [{"name": "j", "provider": "ollama"}]}, r"judges\[0\]\.model"),
        ({"consistency": {"top_k": 0, "embedder": {"kind": "ollama"}}}, "consistency.top_k"),
        ({"budget": 3}, "budget"),
    ],
)
def test_a_bad_config_is_an_input_error_naming_the_field(
    tmp_path: Path, document: dict[str, Any], named: str
) -> None:
    path = tmp_path / "online.json"
    path.write_text(json.dumps(document))
    with pytest.raises(InputError, match=rf"online\.json: field '{named}': "):
        OnlineConfig.load(path)


def test_an_unknown_embedder_kind_is_an_input_error_naming_the_known_ones() -> None:
    config = OnlineConfig.model_validate({"consistency": {"embedder": {"kind": "bert"}}})
    with pytest.raises(InputError, match="unknown embedder 'bert'; known: 'local', 'ollama'"):
        build_pipeline(config, Settings(_env_file=None))


def test_build_pipeline_wires_every_layer_from_a_config(tmp_path: Path) -> None:
    config = OnlineConfig.model_validate(
        {
            "budget_s": 1,
            "disagreement": {"systems": {"py": {"kind": "python", "target": "json:loads"}}},
            "consistency": {
                "embedder": {"kind": "ollama"},
                "store": {"kind": "embedded", "path": str(tmp_path / "v")},
            },
            "policy_grounding": {
                "embedder": {"kind": "ollama"},
                "store": {"kind": "embedded", "path": str(tmp_path / "v")},
            },
            "judges": [{"name": "local", "provider": "mock", "model": "m", "timeout": 5}],
        }
    )
    pipeline = build_pipeline(config, Settings(_env_file=None))
    assert [layer.name for layer in pipeline.layers] == [
        "heuristics",
        "grounding",
        "disagreement",
        "consistency",
        "judge",
    ]
    assert not any(isinstance(layer, Unconfigured) for layer in pipeline.layers)
    disagreement = pipeline.layer("disagreement")
    assert isinstance(disagreement, DisagreementLayer)
    assert list(disagreement.systems) == ["py"]
    consistency, policy = consistency_check(pipeline), policy_check(pipeline)
    # One store object per folder, one embedder per description: shared between layers.
    assert consistency.store is policy.store
    assert consistency.embedder is policy.embedder
    assert consistency.threshold == 0.90  # UPSTASH_VECTOR_THRESHOLD's default
    assert pipeline.budget_s == 11.0  # raised to the disagreement timeout (10 s) + 1 s
    assert pipeline.budget_note is not None


def test_judges_without_a_vocabulary_are_an_input_error() -> None:
    config = OnlineConfig(rules=[], judges=[{"name": "local", "provider": "mock", "model": "m"}])
    with pytest.raises(InputError, match="no vocabulary"):
        build_pipeline(config, Settings(_env_file=None))


def test_upstash_without_credentials_is_an_input_error() -> None:
    config = OnlineConfig.model_validate(
        {"consistency": {"embedder": {"kind": "ollama"}, "store": {"kind": "upstash"}}}
    )
    with pytest.raises(InputError, match="UPSTASH_VECTOR_REST_URL"):
        build_pipeline(config, Settings(_env_file=None))


def test_the_policies_threshold_comes_from_its_variable_unless_the_config_sets_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # defect 14: UPSTASH_VECTOR_POLICIES_THRESHOLD was documented but never read.
    monkeypatch.setenv("UPSTASH_VECTOR_POLICIES_THRESHOLD", "0.42")
    stage3 = {"embedder": {"kind": "ollama"}, "store": {"path": str(tmp_path / "v")}}
    from_variable = build_pipeline(
        OnlineConfig.model_validate({"policy_grounding": stage3}), Settings(_env_file=None)
    )
    assert policy_check(from_variable).threshold == 0.42
    from_config = build_pipeline(
        OnlineConfig.model_validate({"policy_grounding": {**stage3, "threshold": 0.6}}),
        Settings(_env_file=None),
    )
    assert policy_check(from_config).threshold == 0.6


async def test_a_plugin_vector_store_is_built_from_its_registry_with_its_options() -> None:
    from arbiter.online.build import Registries
    from arbiter.vectors.registry import VectorStoreRegistry

    stores = VectorStoreRegistry.default(plugins=False)
    built: list[dict[str, Any]] = []

    def memory(options: Any, settings: Any, http: Any) -> EmbeddedVectorStore:
        built.append(dict(options))
        return EmbeddedVectorStore(None)

    stores.register_vector_store("memory", memory)
    config = OnlineConfig.model_validate(
        {"consistency": {"embedder": {"kind": "ollama"}, "store": {"kind": "memory", "shards": 3}}}
    )
    pipeline = build_pipeline(
        config, Settings(_env_file=None), registries=Registries(stores=stores)
    )
    assert consistency_check(pipeline).store is not None
    assert built == [{"kind": "memory", "path": None, "timeout": 10.0, "shards": 3}]
    await pipeline.aclose()
