"""Online scoring of agent runs: scorers from the registry, evaluation events, the judge seam."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from arbiter.contract import Example, FlowRun, OnlineResult, Output, Score, Trajectory
from arbiter.online.layer import LayerContext
from arbiter.online.reading import Item
from arbiter.online.scorers_layer import ScorersFinding
from arbiter.online.stream import score_stream
from arbiter.scoring.base import ScoreFunction, scorer
from arbiter.scoring.registry import ScorerRegistry
from arbiter.service.online_agents import (
    TrajectoryScorers,
    agent_pipeline,
    score_trajectory,
    trajectory_item,
    trajectory_scorers,
)
from arbiter.telemetry import Telemetry
from arbiter.trajectories.scorers import TRAJECTORY_SCORERS
from arbiter.trajectories.scorers.common import trajectory_scorer

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN_ID = "00f067aa0ba902b7"


@trajectory_scorer(name="finished", dimension="outcome", moment="run")
def finished() -> ScoreFunction:
    """The run completed."""

    def score(example: Example, output: Output) -> Score:
        assert output.trajectory is not None
        done = output.trajectory.status == "completed"
        return Score(
            value=float(done), passed=done, explanation=f"status {output.trajectory.status}"
        )

    return score


@trajectory_scorer(name="completed", dimension="outcome", moment="run")
def completed_stand_in() -> ScoreFunction:
    """Stands in for the catalogue's scorer of that name."""
    return lambda example, output: Score(passed=True)


@trajectory_scorer(
    name="few_nodes", dimension="cost", moment="run", applies_to=["flow"], needs="flow"
)
def few_nodes() -> ScoreFunction:
    """A flow ran few nodes."""

    def score(example: Example, output: Output) -> Score:
        assert output.flow is not None
        return Score(value=float(len(output.flow.nodes)), passed=len(output.flow.nodes) < 5)

    return score


@scorer(name="judged", kind="model")
def judged() -> ScoreFunction:
    """Asks a model."""
    return lambda example, output: Score(passed=True)


@scorer(name="needs_limit")
def needs_limit(*, limit: int) -> ScoreFunction:
    """Needs an argument."""
    return lambda example, output: Score(passed=True)


@scorer(name="broken_factory")
def broken_factory() -> ScoreFunction:
    """Its factory fails."""
    raise RuntimeError("half-written module")


def _registry() -> ScorerRegistry:
    registry = ScorerRegistry()
    for factory in (finished, few_nodes, judged, needs_limit, broken_factory):
        registry.register_scorer(factory)
    return registry


def _selection() -> TrajectoryScorers:
    return trajectory_scorers(_registry(), names=["finished", "few_nodes"])


def _trajectory(status: str = "completed", **fields: Any) -> Trajectory:
    return Trajectory.model_validate(
        {
            "id": "turn-9",
            "agent": {"name": "planner", "version": "3", "agent_class": "tool_enabled"},
            "conversation_id": "conv-1",
            "steps": [{"kind": "tool_call", "name": "search"}],
            "final_answer": "done",
            "status": status,
            "source": {"format": "otlp_json", "trace_id": TRACE_ID, "span_ids": [SPAN_ID]},
            **fields,
        }
    )


def _score(run: Trajectory | FlowRun, **options: Any) -> OnlineResult:
    pipeline = agent_pipeline(scorers=options.pop("scorers", None) or _selection(), **options)
    return asyncio.run(score_trajectory(run, pipeline=pipeline))


def _payload(result: OnlineResult) -> ScorersFinding:
    found = result.payload("scorers", ScorersFinding)
    assert found is not None, result.layers
    return found


def test_only_deterministic_scorers_that_build_are_kept_and_the_rest_named() -> None:
    names = ["finished", "few_nodes", "judged", "needs_limit", "broken_factory", "missing"]

    selection = trajectory_scorers(_registry(), names=names)

    assert [s.name for s in selection.scorers] == ["finished", "few_nodes"]
    assert selection.skipped["judged"] == "asks a model: the judge layer's, not this one's"
    assert "'limit'" in selection.skipped["needs_limit"]
    assert selection.skipped["broken_factory"] == (
        "cannot be built: RuntimeError: half-written module"
    )
    assert "missing" in selection.skipped["missing"]


def test_every_catalogued_trajectory_scorer_is_run_or_said_to_be_left_out() -> None:
    selection = trajectory_scorers()

    built = {s.name for s in selection.scorers}
    assert built | set(selection.skipped) == set(TRAJECTORY_SCORERS)
    assert built.isdisjoint(selection.skipped)
    assert {s.spec.kind for s in selection.scorers} <= {"deterministic"}


def test_a_trajectory_gets_the_scorers_that_apply_to_its_class() -> None:
    found = _payload(_score(_trajectory()))

    assert [(s.name, s.passed) for s in found.scores] == [("finished", True)]
    assert found.not_applicable == ["few_nodes"]


def test_a_flow_run_gets_the_flow_scorers() -> None:
    flow = FlowRun.model_validate({"id": "flow-1", "nodes": [{"id": "a"}], "status": "completed"})

    found = _payload(_score(flow))

    assert [(s.name, s.value) for s in found.scores] == [("few_nodes", 1.0)]
    assert found.not_applicable == ["finished"]


def test_an_item_is_its_run_labelled_with_its_status() -> None:
    run = _trajectory(status="error")

    item = trajectory_item(run, input={"query": "q"}, assertions={"max_steps": 3})

    assert (item.id, item.label) == ("turn-9", "error")
    assert item.metadata == {
        "trajectory": run,
        "input": {"query": "q"},
        "assertions": {"max_steps": 3},
    }


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"id": None}, TRACE_ID),
        ({"id": None, "source": None}, "sha256:"),
    ],
)
def test_a_run_without_an_id_is_named_by_its_trace_or_its_content(
    fields: dict[str, Any], expected: str
) -> None:
    first = trajectory_item(_trajectory(**fields))
    again = trajectory_item(_trajectory(**fields))

    assert first.id.startswith(expected)
    assert first.id == again.id


@pytest.fixture
def exported() -> Iterator[tuple[Telemetry, InMemorySpanExporter, InMemoryLogRecordExporter]]:
    spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    telemetry = Telemetry(tracer_provider=tracer_provider, logger_provider=logger_provider)
    yield telemetry, spans, logs
    telemetry.shutdown()


def test_with_telemetry_on_each_verdict_is_an_event_on_the_scored_span(
    exported: tuple[Telemetry, InMemorySpanExporter, InMemoryLogRecordExporter],
) -> None:
    telemetry, spans, logs = exported

    _score(_trajectory(status="error"), telemetry=telemetry)

    (record,) = logs.get_finished_logs()
    assert record.log_record.event_name == "gen_ai.evaluation.result"
    assert dict(record.log_record.attributes or {}) == {
        "gen_ai.evaluation.name": "finished",
        "gen_ai.evaluation.score.value": 0.0,
        "gen_ai.evaluation.score.label": "fail",
        "gen_ai.evaluation.explanation": "status error",
        "arbiter.score.passed": False,
    }
    assert f"{record.log_record.trace_id:032x}" == TRACE_ID
    assert f"{record.log_record.span_id:016x}" == SPAN_ID
    (evaluation,) = [s for s in spans.get_finished_spans() if s.name == "evaluation"]
    (link,) = evaluation.links
    assert f"{link.context.span_id:016x}" == SPAN_ID
    assert (evaluation.attributes or {})["gen_ai.agent.name"] == "planner"
    assert (evaluation.attributes or {})["gen_ai.conversation.id"] == "conv-1"
    (layer_span,) = [s for s in spans.get_finished_spans() if s.name == "arbiter.layer.scorers"]
    assert evaluation.parent is not None
    assert layer_span.context is not None
    assert evaluation.parent.span_id == layer_span.context.span_id


def test_with_telemetry_off_no_event_is_emitted_and_scoring_is_the_same() -> None:
    found = _payload(_score(_trajectory(), telemetry=Telemetry.disabled()))

    assert [s.name for s in found.scores] == ["finished"]


class _ExplodingLoggerProvider:
    def get_logger(self, *args: object, **kwargs: object) -> object:
        raise RuntimeError("collector exploded")


def test_a_failing_exporter_never_reaches_the_caller() -> None:
    telemetry = Telemetry(logger_provider=_ExplodingLoggerProvider())  # type: ignore[arg-type]

    result = _score(_trajectory(), telemetry=telemetry)

    assert [s.name for s in _payload(result).scores] == ["finished"]
    assert result.errors == []


class _TrajectoryJudge:
    """Stands in for the trajectory judge of the next issue: an expensive layer."""

    name = "trajectory_judge"
    expensive = True
    budget_floor = None

    def __init__(self) -> None:
        self.saw: list[list[str]] = []

    async def run(self, item: Item, context: LayerContext) -> dict[str, Any]:
        scored = context.found["scorers"].payload
        assert isinstance(scored, ScorersFinding)
        self.saw.append([s.name for s in scored.scores if s.passed is False])
        return {"refined": True}


@pytest.mark.parametrize(("status", "judged"), [("completed", []), ("error", [["finished"]])])
def test_the_judge_seam_runs_only_on_runs_a_scorer_failed(
    status: str, judged: list[list[str]]
) -> None:
    judge = _TrajectoryJudge()

    result = _score(_trajectory(status=status), layers=[judge])

    assert judge.saw == judged
    assert result.layers["trajectory_judge"].status == ("ran" if judged else "not_escalated")


def test_scorers_left_out_are_logged_once_when_built_from_the_registry(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = ScorerRegistry()
    registry.register_scorer(completed_stand_in)

    with caplog.at_level(logging.WARNING, logger="arbiter.service.online_agents"):
        pipeline = agent_pipeline(registry=registry)

    assert pipeline.layer("scorers") is not None
    (record,) = caplog.records
    message = record.getMessage()
    assert message.startswith("online agent scoring runs 1 trajectory scorers; left out: ")
    assert "answer_present (unknown scorer 'answer_present'" in message
    assert "completed (" not in message


def test_jsonl_lines_carrying_trajectories_are_scored_through_the_stream() -> None:
    run = _trajectory(status="error").model_dump(mode="json")
    lines = [
        json.dumps({"id": "t-1", "label": "error", "trajectory": run}).encode(),
        json.dumps({"id": "t-2", "label": "completed", "trajectory": {"status": 7}}).encode(),
        b"{not json",
    ]
    results: list[OnlineResult] = []

    async def collect(result: OnlineResult) -> None:
        results.append(result)

    pipeline = agent_pipeline(scorers=_selection())
    numbered = ((n, raw, 0) for n, raw in enumerate(lines, start=1))
    asyncio.run(score_stream(pipeline, numbered, collect, max_in_flight=2))

    by_id = {result.prediction_id: result for result in results}
    assert [(s.name, s.passed) for s in _payload(by_id["t-1"]).scores] == [("finished", False)]
    assert by_id["t-2"].layers["scorers"].status == "error"
    assert len(results) == 3
