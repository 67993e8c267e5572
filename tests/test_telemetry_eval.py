"""gen_ai.evaluation.result events: log records parented to the scored span, in a linked span."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from arbiter.contract import Score
from arbiter.telemetry import Telemetry
from arbiter.telemetry_eval import (
    MAX_EXPLANATION_CHARS,
    emit_evaluation_results,
    evaluation_attributes,
    score_label,
)
from tests.integration.serving import serve_asgi

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
SPAN_ID = "b7ad6b7169203331"


@dataclass
class Captured:
    telemetry: Telemetry
    spans: InMemorySpanExporter
    logs: InMemoryLogRecordExporter

    def records(self) -> list[ReadableLogRecord]:
        return list(self.logs.get_finished_logs())

    def finished(self) -> list[ReadableSpan]:
        return list(self.spans.get_finished_spans())


@pytest.fixture
def captured() -> Iterator[Captured]:
    spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    telemetry = Telemetry(tracer_provider=tracer_provider, logger_provider=logger_provider)
    yield Captured(telemetry, spans, logs)
    telemetry.shutdown()


@pytest.mark.parametrize(
    ("score", "label"),
    [
        (Score(name="cost", value=0.4, passed=True, band="review"), "review"),
        (Score(name="cost", value=9.0, passed=False, band="danger"), "danger"),
        (Score(name="completed", value=1.0, passed=True), "pass"),
        (Score(name="completed", value=0.0, passed=False), "fail"),
        (Score(name="must_contain"), "abstain"),
        (Score(name="broken", error="KeyError: 'x'"), "abstain"),
    ],
)
def test_label_is_the_band_else_pass_fail_abstain(score: Score, label: str) -> None:
    assert score_label(score) == label


def test_each_score_is_one_log_record_event_with_the_convention_attributes(
    captured: Captured,
) -> None:
    scores = [
        Score(name="cost", value=0.42, passed=True, band="healthy", explanation="$0.42"),
        Score(name="completed", value=0.0, passed=False, explanation="status error"),
    ]
    emitted = emit_evaluation_results(
        scores, trace_id=TRACE_ID, span_id=SPAN_ID, telemetry=captured.telemetry
    )

    assert emitted == 2
    records = captured.records()
    assert [r.log_record.event_name for r in records] == ["gen_ai.evaluation.result"] * 2
    assert [dict(r.log_record.attributes or {}) for r in records] == [
        {
            "gen_ai.evaluation.name": "cost",
            "gen_ai.evaluation.score.value": 0.42,
            "gen_ai.evaluation.score.label": "healthy",
            "gen_ai.evaluation.explanation": "$0.42",
            "arbiter.score.passed": True,
        },
        {
            "gen_ai.evaluation.name": "completed",
            "gen_ai.evaluation.score.value": 0.0,
            "gen_ai.evaluation.score.label": "fail",
            "gen_ai.evaluation.explanation": "status error",
            "arbiter.score.passed": False,
        },
    ]


def test_events_are_parented_to_the_scored_span(captured: Captured) -> None:
    emit_evaluation_results(
        [Score(name="completed", passed=True)],
        trace_id=TRACE_ID,
        span_id=SPAN_ID,
        telemetry=captured.telemetry,
    )

    (record,) = captured.records()
    assert f"{record.log_record.trace_id:032x}" == TRACE_ID
    assert f"{record.log_record.span_id:016x}" == SPAN_ID


def test_evaluation_span_links_to_the_scored_span(captured: Captured) -> None:
    emit_evaluation_results(
        [Score(name="completed", passed=True)],
        trace_id=TRACE_ID,
        span_id=SPAN_ID,
        telemetry=captured.telemetry,
        attributes={"gen_ai.agent.name": "planner"},
    )

    (span,) = captured.finished()
    assert span.name == "evaluation"
    assert dict(span.attributes or {}) == {
        "gen_ai.operation.name": "evaluation",
        "arbiter.evaluation.count": 1,
        "arbiter.evaluation.emitted": 1,
        "gen_ai.agent.name": "planner",
    }
    (link,) = span.links
    assert f"{link.context.trace_id:032x}" == TRACE_ID
    assert f"{link.context.span_id:016x}" == SPAN_ID
    assert span.context is not None
    assert span.context.trace_id != int(TRACE_ID, 16)  # linked, not a child


@pytest.mark.parametrize(
    ("trace_id", "span_id"),
    [
        (None, None),
        (TRACE_ID, None),
        (None, SPAN_ID),
        ("not-hex-" * 4, SPAN_ID),
        (TRACE_ID, "0x" + SPAN_ID[2:]),
        ("0" * 32, SPAN_ID),
    ],
)
def test_without_a_known_span_events_are_parented_to_the_evaluation_span(
    captured: Captured, trace_id: str | None, span_id: str | None
) -> None:
    emit_evaluation_results(
        [Score(name="completed", passed=True)],
        trace_id=trace_id,
        span_id=span_id,
        telemetry=captured.telemetry,
    )

    (span,) = captured.finished()
    (record,) = captured.records()
    assert span.links == ()
    assert span.context is not None
    assert record.log_record.trace_id == span.context.trace_id
    assert record.log_record.span_id == span.context.span_id


def test_a_trace_without_a_span_is_named_on_the_evaluation_span(captured: Captured) -> None:
    emit_evaluation_results(
        [Score(name="completed", passed=True)],
        trace_id=TRACE_ID,
        span_id=None,
        telemetry=captured.telemetry,
        response_id="chatcmpl-1",
    )

    (span,) = captured.finished()
    (record,) = captured.records()
    assert (span.attributes or {})["arbiter.evaluated.trace_id"] == TRACE_ID
    assert (record.log_record.attributes or {})["gen_ai.response.id"] == "chatcmpl-1"


def test_explanation_is_one_bounded_line() -> None:
    long = "word\n" * 100_000
    attributes = evaluation_attributes(Score(name="grounded_overlap", explanation=long))

    explanation = attributes["gen_ai.evaluation.explanation"]
    assert isinstance(explanation, str)
    assert len(explanation) == MAX_EXPLANATION_CHARS
    assert explanation.endswith("…")
    assert "\n" not in explanation


def test_explanation_bound_is_a_parameter(captured: Captured) -> None:
    emit_evaluation_results(
        [Score(name="answer", explanation="x" * 500)],
        trace_id=TRACE_ID,
        span_id=SPAN_ID,
        telemetry=captured.telemetry,
        max_explanation_chars=40,
    )

    (record,) = captured.records()
    assert (record.log_record.attributes or {})["gen_ai.evaluation.explanation"] == "x" * 39 + "…"


def test_an_errored_score_carries_its_error_type_and_message() -> None:
    attributes = evaluation_attributes(Score(name="tasks", error="ZeroDivisionError: division"))

    assert attributes == {
        "gen_ai.evaluation.name": "tasks",
        "gen_ai.evaluation.score.label": "abstain",
        "gen_ai.evaluation.explanation": "ZeroDivisionError: division",
        "error.type": "ZeroDivisionError",
    }


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_a_non_finite_value_is_left_out(value: float) -> None:
    attributes = evaluation_attributes(Score(name="latency", value=value, passed=True))

    assert "gen_ai.evaluation.score.value" not in attributes


def test_disabled_telemetry_emits_nothing() -> None:
    assert (
        emit_evaluation_results(
            [Score(name="completed", passed=True)],
            trace_id=TRACE_ID,
            span_id=SPAN_ID,
            telemetry=Telemetry.disabled(),
        )
        == 0
    )
    assert emit_evaluation_results([Score(name="x")], trace_id=None, span_id=None) == 0


def test_no_scores_no_span(captured: Captured) -> None:
    emitted = emit_evaluation_results(
        [], trace_id=TRACE_ID, span_id=SPAN_ID, telemetry=captured.telemetry
    )

    assert emitted == 0
    assert captured.finished() == []


def test_providers_given_directly_override_telemetry(captured: Captured) -> None:
    other = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(other))

    emit_evaluation_results(
        [Score(name="completed", passed=True)],
        trace_id=TRACE_ID,
        span_id=SPAN_ID,
        logger_provider=provider,
    )

    assert len(other.get_finished_logs()) == 1
    assert captured.records() == []


def test_tracing_without_a_logger_provider_still_records_the_span() -> None:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))

    emitted = emit_evaluation_results(
        [Score(name="completed", passed=True)],
        trace_id=TRACE_ID,
        span_id=SPAN_ID,
        telemetry=Telemetry(tracer_provider=provider),
    )

    assert emitted == 0
    assert [span.name for span in spans.get_finished_spans()] == ["evaluation"]


class _BrokenLoggerProvider:
    def get_logger(self, *args: object, **kwargs: object) -> object:
        raise RuntimeError("exporter exploded")


def test_a_failing_provider_never_raises_into_the_caller() -> None:
    emitted = emit_evaluation_results(
        [Score(name="completed", passed=True)],
        trace_id=TRACE_ID,
        span_id=SPAN_ID,
        logger_provider=_BrokenLoggerProvider(),  # type: ignore[arg-type]
    )

    assert emitted == 0


# ------------------------------------------------------------- over OTLP/HTTP, decoded


@dataclass
class _Receiver:
    """Decodes the OTLP protobuf posted to /v1/logs and /v1/traces, as a collector would."""

    logs: list[Any] = field(default_factory=list)
    spans: list[Any] = field(default_factory=list)

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/logs", self._logs, methods=["POST"]),
                Route("/v1/traces", self._traces, methods=["POST"]),
            ]
        )

    @staticmethod
    async def _body(request: Request) -> bytes:
        body = await request.body()
        if request.headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        return body

    async def _logs(self, request: Request) -> Response:
        message = ExportLogsServiceRequest.FromString(await self._body(request))
        for resource in message.resource_logs:
            for scope in resource.scope_logs:
                self.logs.extend(scope.log_records)
        return Response(
            ExportLogsServiceResponse().SerializeToString(), media_type="application/x-protobuf"
        )

    async def _traces(self, request: Request) -> Response:
        message = ExportTraceServiceRequest.FromString(await self._body(request))
        for resource in message.resource_spans:
            for scope in resource.scope_spans:
                self.spans.extend(scope.spans)
        return Response(
            ExportTraceServiceResponse().SerializeToString(), media_type="application/x-protobuf"
        )


def _decoded(pairs: Any) -> dict[str, Any]:
    return {kv.key: getattr(kv.value, kv.value.WhichOneof("value")) for kv in pairs}


def test_from_env_exports_the_events_and_the_linked_span_over_otlp() -> None:
    receiver = _Receiver()
    with serve_asgi(receiver.app()) as url:
        telemetry = Telemetry.from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": url})
        emit_evaluation_results(
            [Score(name="cost", value=0.3, passed=True, band="review", explanation="$0.30")],
            trace_id=TRACE_ID,
            span_id=SPAN_ID,
            telemetry=telemetry,
        )
        telemetry.shutdown()

    (record,) = receiver.logs
    assert record.event_name == "gen_ai.evaluation.result"
    assert (record.trace_id.hex(), record.span_id.hex()) == (TRACE_ID, SPAN_ID)
    assert _decoded(record.attributes) == {
        "gen_ai.evaluation.name": "cost",
        "gen_ai.evaluation.score.value": 0.3,
        "gen_ai.evaluation.score.label": "review",
        "gen_ai.evaluation.explanation": "$0.30",
        "arbiter.score.passed": True,
    }
    (span,) = receiver.spans
    assert span.name == "evaluation"
    (link,) = span.links
    assert (link.trace_id.hex(), link.span_id.hex()) == (TRACE_ID, SPAN_ID)
