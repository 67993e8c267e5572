"""Telemetry against a real OTLP/HTTP receiver that decodes the protobuf it is sent.

The receiver is a Starlette app under uvicorn (tests/integration/serving.py) accepting
``POST /v1/traces`` and ``POST /v1/metrics``; it parses each body with
opentelemetry-proto's ``ExportTraceServiceRequest`` / ``ExportMetricsServiceRequest``,
exactly as a collector would, so these tests see what a collector would see.
"""

from __future__ import annotations

import gzip
import json
import logging
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from arbiter.cli.main import main
from arbiter.contract import Prediction
from arbiter.datasets import dump_dataset_jsonl
from arbiter.harness.runner import run_eval_async
from arbiter.online.build import TracedJudge, evaluate_item
from arbiter.online.grounding import GroundingConfig
from arbiter.online.judge_chain import JudgeChain
from arbiter.online.pipeline import OnlinePipeline
from arbiter.systems.python import PythonSystem
from arbiter.telemetry import Telemetry
from tests.helpers.data import yes_no_dataset
from tests.helpers.systems import mostly_right
from tests.integration.serving import free_port, serve_asgi

# ----------------------------------------------------------------------------- receiver


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


def _attributes(pairs: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in pairs}


@dataclass
class DecodedSpan:
    name: str
    span_id: str
    parent_id: str
    trace_id: str
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    status_code: int


@dataclass
class DecodedPoint:
    metric: str
    kind: str
    attributes: dict[str, Any]
    value: float


@dataclass
class OtlpReceiver:
    """Keeps every decoded span, metric point and resource it was sent."""

    spans: list[DecodedSpan] = field(default_factory=list)
    points: list[DecodedPoint] = field(default_factory=list)
    resources: list[dict[str, Any]] = field(default_factory=list)
    posts: list[str] = field(default_factory=list)

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/traces", self._traces, methods=["POST"]),
                Route("/v1/metrics", self._metrics, methods=["POST"]),
            ]
        )

    @staticmethod
    async def _body(request: Request) -> bytes:
        body = await request.body()
        if request.headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        assert request.headers["content-type"] == "application/x-protobuf"
        return body

    async def _traces(self, request: Request) -> Response:
        message = ExportTraceServiceRequest.FromString(await self._body(request))
        self.posts.append("traces")
        for resource_spans in message.resource_spans:
            self.resources.append(_attributes(resource_spans.resource.attributes))
            for scope in resource_spans.scope_spans:
                for span in scope.spans:
                    self.spans.append(
                        DecodedSpan(
                            name=span.name,
                            span_id=span.span_id.hex(),
                            parent_id=span.parent_span_id.hex(),
                            trace_id=span.trace_id.hex(),
                            attributes=_attributes(span.attributes),
                            events=[(e.name, _attributes(e.attributes)) for e in span.events],
                            status_code=span.status.code,
                        )
                    )
        return Response(
            ExportTraceServiceResponse().SerializeToString(), media_type="application/x-protobuf"
        )

    async def _metrics(self, request: Request) -> Response:
        message = ExportMetricsServiceRequest.FromString(await self._body(request))
        self.posts.append("metrics")
        for resource_metrics in message.resource_metrics:
            self.resources.append(_attributes(resource_metrics.resource.attributes))
            for scope in resource_metrics.scope_metrics:
                for metric in scope.metrics:
                    kind = metric.WhichOneof("data")
                    for point in getattr(metric, kind).data_points:
                        if kind == "histogram":
                            value = float(point.count)
                        else:
                            value = float(getattr(point, point.WhichOneof("value")))
                        self.points.append(
                            DecodedPoint(metric.name, kind, _attributes(point.attributes), value)
                        )
        return Response(
            ExportMetricsServiceResponse().SerializeToString(),
            media_type="application/x-protobuf",
        )

    def span(self, name: str) -> DecodedSpan:
        (found,) = [s for s in self.spans if s.name == name]
        return found

    def metric(self, name: str) -> list[DecodedPoint]:
        return [p for p in self.points if p.metric == name]


@pytest.fixture
def receiver() -> Iterator[tuple[OtlpReceiver, str]]:
    sink = OtlpReceiver()
    with serve_asgi(sink.app()) as url:
        yield sink, url


# ----------------------------------------------------------------------------- tests


def test_spans_events_and_metrics_reach_the_receiver_decoded(
    receiver: tuple[OtlpReceiver, str],
) -> None:
    sink, url = receiver
    telemetry = Telemetry.from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": url}, service_name="svc-x")
    assert telemetry.enabled
    with telemetry.span("arbiter.evaluate_item", {"prediction_id": "p1"}):
        with telemetry.span("arbiter.layer.heuristics"):
            telemetry.record_layer("heuristics", 0.2, "ran")
        with telemetry.span("arbiter.layer.judge"), telemetry.span("arbiter.judge.attempt") as a:
            Telemetry.event(a, "judge_failed", {"source": "ollama", "error": "timeout"})
            Telemetry.fail(a, "timeout")
        telemetry.record_judge("heuristics_fallback")
        telemetry.record_item(escalated=True)
    telemetry.shutdown()

    root = sink.span("arbiter.evaluate_item")
    assert root.parent_id == ""
    assert root.attributes == {"prediction_id": "p1"}
    heuristics, judge = sink.span("arbiter.layer.heuristics"), sink.span("arbiter.layer.judge")
    attempt = sink.span("arbiter.judge.attempt")
    assert heuristics.parent_id == judge.parent_id == root.span_id
    assert attempt.parent_id == judge.span_id
    assert {s.trace_id for s in sink.spans} == {root.trace_id}
    assert attempt.events == [("judge_failed", {"source": "ollama", "error": "timeout"})]
    assert attempt.status_code == 2  # STATUS_CODE_ERROR
    assert {"service.name": "svc-x"}.items() <= sink.resources[0].items()
    (latency,) = sink.metric("arbiter.layer.latency")
    assert (latency.kind, latency.attributes) == (
        "histogram",
        {"layer": "heuristics", "status": "ran"},
    )
    (outcome,) = sink.metric("arbiter.judge.outcome")
    assert (outcome.attributes, outcome.value) == ({"source": "heuristics_fallback"}, 1.0)
    assert [p.value for p in sink.metric("arbiter.items")] == [1.0]
    assert [p.value for p in sink.metric("arbiter.escalations")] == [1.0]


class _Judge:
    """A judge stub: answers ``label`` or raises ``error``."""

    def __init__(self, name: str, *, label: str | None = None, error: str = "") -> None:
        self.name, self.timeout, self._label, self._error = name, 2.0, label, error

    async def verdict(self, prediction: Prediction, context: str | None) -> str:
        if self._label is None:
            raise ConnectionError(self._error)
        return self._label


SILENT_CONTRADICTION = {
    "id": "evt-1",
    "label": "degraded",
    "confidence": 0.9,
    "raw_output": {
        "status": "degraded",
        "anomaly_score": 0.93,
        "narrative": "Paging the owning team per policy IR-POL-004.",
        "policy_refs": ["IR-POL-004"],
    },
}


async def test_evaluate_item_traces_each_layer_and_judge_attempt(
    receiver: tuple[OtlpReceiver, str],
) -> None:
    sink, url = receiver
    telemetry = Telemetry.from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": url})
    judges = [
        _Judge("ollama", error="connection refused"),
        _Judge("gemini_flash", label="critical"),
    ]
    chain = JudgeChain(
        [TracedJudge(judge, telemetry) for judge in judges],
        vocabulary=["nominal", "degraded", "critical"],
    )
    pipeline = OnlinePipeline(grounding=GroundingConfig(), judge_chain=chain, telemetry=telemetry)
    result = await evaluate_item(SILENT_CONTRADICTION, pipeline=pipeline)
    telemetry.shutdown()

    assert result.escalated
    assert result.judge is not None
    assert result.judge.source == "gemini_flash"
    root = sink.span("arbiter.evaluate_item")
    assert root.parent_id == ""
    assert root.attributes["arbiter.prediction_id"] == "evt-1"
    layers = {
        name: sink.span(f"arbiter.layer.{name}") for name in ("heuristics", "grounding", "judge")
    }
    assert {span.parent_id for span in layers.values()} == {root.span_id}
    ollama, flash = sink.span("arbiter.judge.ollama"), sink.span("arbiter.judge.gemini_flash")
    assert ollama.parent_id == flash.parent_id == layers["judge"].span_id
    assert {s.trace_id for s in sink.spans} == {root.trace_id}
    # The failed attempt: an exception event on its own span, and a failure event on the layer.
    assert ollama.status_code == 2
    ((name, attributes),) = ollama.events
    assert name == "exception"
    assert attributes["exception.type"] == "ConnectionError"
    assert ("arbiter.judge.attempt_failed", {"judge": "ollama", "outcome": "failed"}) in layers[
        "judge"
    ].events
    assert flash.events == []
    latency_layers = {p.attributes["layer"] for p in sink.metric("arbiter.layer.latency")}
    assert {"heuristics", "grounding", "judge"} <= latency_layers
    assert [(p.attributes, p.value) for p in sink.metric("arbiter.judge.outcome")] == [
        ({"source": "gemini_flash"}, 1.0)
    ]
    assert [p.value for p in sink.metric("arbiter.items")] == [1.0]
    assert [p.value for p in sink.metric("arbiter.escalations")] == [1.0]


async def test_run_eval_sends_its_span_and_harness_figures(
    receiver: tuple[OtlpReceiver, str],
) -> None:
    sink, url = receiver
    telemetry = Telemetry.from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": url})
    dataset = yes_no_dataset(40)
    report = await run_eval_async(
        PythonSystem(mostly_right),
        dataset,
        k=2,
        label_map={"yes": "yes", "*": "no"},
        telemetry=telemetry,
    )
    telemetry.shutdown()

    span = sink.span("arbiter.run_eval")
    assert span.attributes["dataset"] == dataset.name
    assert span.attributes["n_examples"] == 40
    figures = {p.attributes["metric"]: p for p in sink.metric("arbiter.harness.metric")}
    assert set(figures) == {"accuracy", "mapped_accuracy", "pass_hat_k", "error_rate"}
    assert {p.kind for p in figures.values()} == {"gauge"}
    assert figures["accuracy"].value == pytest.approx(report.strict.accuracy.estimate)
    assert figures["pass_hat_k"].value == pytest.approx(report.pass_hat_k.estimate)
    assert figures["error_rate"].value == 0.0
    assert figures["accuracy"].attributes["dataset"] == dataset.name
    assert figures["accuracy"].attributes["system"].startswith("python:")


def test_arbiter_run_exports_when_the_endpoint_is_set(
    receiver: tuple[OtlpReceiver, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    sink, url = receiver
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ARBITER_DB_URL", f"sqlite:///{tmp_path / 'store.db'}")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    data = tmp_path / "yes-no.jsonl"
    dump_dataset_jsonl(yes_no_dataset(20), data)
    target = "tests.helpers.systems:echo_label"
    code: Any = 0
    try:
        main(["run", "--dataset", str(data), "--target", target, "--quiet", "--json"])
    except SystemExit as exc:  # typer ends with SystemExit(0) on success
        code = exc.code
    assert not code
    assert json.loads(capsys.readouterr().out)["strict"]["accuracy"]["estimate"] == 1.0
    assert sink.span("arbiter.run_eval").attributes["n_examples"] == 20
    figures = {p.attributes["metric"]: p.value for p in sink.metric("arbiter.harness.metric")}
    assert figures == {"accuracy": 1.0, "pass_hat_k": 1.0, "error_rate": 0.0}


def test_nothing_listening_is_quiet_and_prompt(
    capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    closed = f"http://127.0.0.1:{free_port()}"
    started = time.monotonic()
    telemetry = Telemetry.from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": closed})
    with telemetry.span("arbiter.evaluate_item"):
        telemetry.record_item(escalated=False)
        telemetry.record_run_metric("accuracy", 0.5)
    telemetry.shutdown()
    elapsed = time.monotonic() - started

    out, err = capfd.readouterr()
    assert (out, err) == ("", "")
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    # The failures happened and were kept, at DEBUG, for whoever wants to see them.
    assert any("export" in r.getMessage().lower() for r in caplog.records)
    # The exporters' own default (10 s with retries, per signal) would take far longer.
    assert elapsed < 8.0


def test_without_the_endpoint_telemetry_is_disabled() -> None:
    assert not Telemetry.from_env({}).enabled
    assert not Telemetry.from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "  "}).enabled
    disabled = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318", "OTEL_SDK_DISABLED": "true"}
    assert not Telemetry.from_env(disabled).enabled


def test_missing_extra_warns_once_and_stays_disabled(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # A None entry in sys.modules makes the import fail as if the package were absent.
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.http.trace_exporter", None)
    telemetry = Telemetry.from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"})
    assert not telemetry.enabled
    (record,) = caplog.records
    assert record.levelno == logging.WARNING
    assert "arbiter[otel]" in record.getMessage()
    assert "\n" not in record.getMessage()


def test_shutdown_twice_is_harmless(receiver: tuple[OtlpReceiver, str]) -> None:
    _, url = receiver
    telemetry = Telemetry.from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": url + "/"})
    assert telemetry.enabled
    telemetry.shutdown()
    telemetry.shutdown()  # must not raise
    telemetry.record_item(escalated=True)  # nor must recording after shutdown
