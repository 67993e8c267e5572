"""docs/grafana/arbiter.json queries only what Arbiter really exports.

One real session exports over OTLP/HTTP protobuf to a receiver in the test (decoding
with opentelemetry-proto, as a collector does): an offline run, online classifier items
through a judge chain whose first judge fails, and agent runs through the deterministic
trajectory scorers and a judge panel of fake models reached through the provider
registry. Then every metric each Prometheus panel queries must be among the exported
ones (named as Prometheus stores OTLP metrics: dots to underscores, the unit's suffix,
``_total`` for counters, ``_bucket`` / ``_sum`` / ``_count`` for histograms), with every
label it groups or filters by among that metric's attributes; and every span, status and
attribute a Tempo panel selects must be on an exported span or its events.
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="needs opentelemetry-sdk (arbiter[otel])")
pytest.importorskip("opentelemetry.proto", reason="needs opentelemetry-proto (arbiter[otlp])")

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from arbiter.contract import Trajectory
from arbiter.contract.trajectory import AgentIdentity, ToolCall
from arbiter.harness.runner import run_eval_async
from arbiter.online.build import TracedJudge
from arbiter.online.config import JudgePanelConfig, OnlineConfig
from arbiter.online.grounding import GroundingConfig
from arbiter.online.judge_chain import JudgeChain
from arbiter.online.pipeline import OnlinePipeline
from arbiter.online.rules import HeuristicRules
from arbiter.service.online_agents import TrajectoryScorers, trajectory_item
from arbiter.service.online_judges import online_pipeline
from arbiter.systems.python import PythonSystem
from arbiter.telemetry import Telemetry
from tests.helpers.data import yes_no_dataset
from tests.helpers.systems import mostly_right
from tests.integration.serving import serve_asgi
from tests.judges.conftest import FakeJudgeModel, answer
from tests.service.test_online_agents import finished
from tests.service.test_online_judges import models
from tests.test_telemetry import SILENT_CONTRADICTION, _attributes, _Judge

DASHBOARD = Path(__file__).resolve().parents[1] / "docs" / "grafana" / "arbiter.json"
UNIT_SUFFIXES = {"": "", "ms": "milliseconds", "s": "seconds"}
"""Units Arbiter's instruments use, as the Prometheus OTLP translation suffixes them."""


@dataclass
class Exported:
    """What the receiver decoded: series names with their labels, and spans."""

    series: dict[str, set[str]] = field(default_factory=dict)
    spans: list[dict[str, Any]] = field(default_factory=list)

    def add_metric(self, metric: Any) -> None:
        kind = metric.WhichOneof("data")
        data = getattr(metric, kind)
        assert metric.unit in UNIT_SUFFIXES, f"{metric.name}: unit {metric.unit!r} has no suffix"
        base = metric.name.replace(".", "_")
        suffix = UNIT_SUFFIXES[metric.unit]
        if suffix and not base.endswith(suffix):
            base = f"{base}_{suffix}"
        if kind == "histogram":
            names = [f"{base}_bucket", f"{base}_sum", f"{base}_count"]
        elif kind == "sum" and data.is_monotonic:
            names = [f"{base}_total"]
        else:
            names = [base]
        labels = {
            key.replace(".", "_") for p in data.data_points for key in _attributes(p.attributes)
        }
        for name in names:
            extra = {"le"} if name.endswith("_bucket") else set()
            self.series.setdefault(name, set()).update(labels | extra)


def _receiver(exported: Exported) -> Starlette:
    async def body(request: Request) -> bytes:
        raw = await request.body()
        return gzip.decompress(raw) if request.headers.get("content-encoding") == "gzip" else raw

    async def traces(request: Request) -> Response:
        message = ExportTraceServiceRequest.FromString(await body(request))
        for resource in message.resource_spans:
            for scope in resource.scope_spans:
                for span in scope.spans:
                    exported.spans.append(
                        {
                            "name": span.name,
                            "error": span.status.code == 2,
                            "attributes": _attributes(span.attributes),
                            "events": [_attributes(e.attributes) for e in span.events],
                        }
                    )
        return Response(b"", media_type="application/x-protobuf")

    async def metrics(request: Request) -> Response:
        message = ExportMetricsServiceRequest.FromString(await body(request))
        for resource in message.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    exported.add_metric(metric)
        return Response(b"", media_type="application/x-protobuf")

    async def logs(request: Request) -> Response:  # the evaluation events: not queried
        await request.body()
        return Response(b"", media_type="application/x-protobuf")

    return Starlette(
        routes=[
            Route("/v1/traces", traces, methods=["POST"]),
            Route("/v1/metrics", metrics, methods=["POST"]),
            Route("/v1/logs", logs, methods=["POST"]),
        ]
    )


async def _real_session(telemetry: Telemetry) -> None:
    """An offline run, classifier items through a judge chain, agent runs through judges."""
    await run_eval_async(
        PythonSystem(mostly_right),
        yes_no_dataset(20),
        k=1,
        label_map={"yes": "yes", "*": "no"},
        telemetry=telemetry,
    )
    judges = [
        _Judge("ollama", error="connection refused"),
        _Judge("gemini_flash", label="critical"),
    ]
    chain = JudgeChain(
        [TracedJudge(judge, telemetry) for judge in judges],
        vocabulary=["nominal", "degraded", "critical"],
    )
    classifier = OnlinePipeline(grounding=GroundingConfig(), judge_chain=chain, telemetry=telemetry)
    for number in range(3):
        await classifier.evaluate({**SILENT_CONTRADICTION, "id": f"evt-{number}"})
    context = models(alpha=FakeJudgeModel("alpha", reply=answer("fail", quotes=("25.0",))))
    config = OnlineConfig(
        rules=HeuristicRules(rules=[]),
        grounding=None,
        sample_rate=0.5,
        judge_panel=JudgePanelConfig(
            judges=["answer_groundedness"], panel=[{"provider": "alpha", "model": "m"}]
        ),
    )
    agents = online_pipeline(
        config,
        telemetry=telemetry,
        context=context,
        scorers=TrajectoryScorers(scorers=[finished()]),
    )
    for number, status in enumerate(["completed", "error", "completed", "completed"]):
        run = Trajectory(
            id=f"run-{number}",
            agent=AgentIdentity(name="support"),
            steps=[ToolCall(name="get_order", arguments={"id": "1"}, result={"total": 25.0})],
            final_answer="The order cost 25.0 USD.",
            status=status,  # type: ignore[arg-type]
        )
        await agents.evaluate(trajectory_item(run, input={"question": "What did it cost?"}))
    await agents.aclose()


@pytest.fixture(scope="module")
def exported() -> Exported:
    import asyncio

    found = Exported()
    with serve_asgi(_receiver(found)) as url:
        telemetry = Telemetry.from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": url})
        asyncio.run(_real_session(telemetry))
        telemetry.shutdown()
    return found


def _targets(kind: str) -> list[tuple[str, str]]:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return [
        (panel["title"], target[kind])
        for panel in dashboard["panels"]
        for target in panel.get("targets", [])
        if kind in target
    ]


PROMQL = _targets("expr")
TRACEQL = _targets("query")
_METRIC = re.compile(r"\b(arbiter_[a-z0-9_]+)\b(\{[^}]*\})?")
_MATCHER = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)")
_BY = re.compile(r"\bby\s*\(([^)]*)\)")


def test_the_dashboard_has_every_panel_the_issue_asks_for() -> None:
    titles = {title for title, _ in PROMQL + TRACEQL}
    for wanted in (
        "Judge outcome rate (by source)",
        "% scored by a judge (vs fallback)",
        "Per-layer latency (p95)",
        "Evaluation throughput",
        "Evaluation latency (p50 / p95 / p99)",
        "Judge-chain errors (exception events)",
        "Offline run metrics over time",
        "Trajectory verdicts (by agent and band)",
        "Share of items that reached the judge panels",
    ):
        assert wanted in titles


@pytest.mark.parametrize(("title", "expr"), PROMQL, ids=[f"{t}:{e[:40]}" for t, e in PROMQL])
def test_every_metric_and_label_a_prometheus_panel_queries_is_exported(
    exported: Exported, title: str, expr: str
) -> None:
    used = _METRIC.findall(expr)
    assert used, f"{title}: no arbiter metric in {expr!r}"
    for name, matchers in used:
        assert name in exported.series, f"{title}: {name} is not exported"
        for label in _MATCHER.findall(matchers):
            assert label in exported.series[name], f"{title}: {name} has no label {label!r}"
    labels = {label.strip() for group in _BY.findall(expr) for label in group.split(",")}
    for label in labels - {""}:
        assert any(label in exported.series[name] for name, _ in used), (
            f"{title}: no metric of {expr!r} has the label {label!r}"
        )


@pytest.mark.parametrize(("title", "query"), TRACEQL, ids=[t for t, _ in TRACEQL])
def test_every_span_and_attribute_a_tempo_panel_selects_is_exported(
    exported: Exported, title: str, query: str
) -> None:
    names = re.findall(r'\bname\s*(=~|=)\s*"([^"]+)"', query)
    assert names, f"{title}: no span name in {query!r}"
    spans = exported.spans
    for op, value in names:
        pattern = re.compile(value if op == "=~" else re.escape(value))
        spans = [s for s in spans if pattern.fullmatch(s["name"])]
    if re.search(r"\bstatus\s*=\s*error\b", query):
        spans = [s for s in spans if s["error"]]
    assert spans, f"{title}: no exported span matches {query!r}"
    (selected,) = re.findall(r"select\(([^)]*)\)", query)
    for item in (part.strip() for part in selected.split(",")):
        scope, _, key = item.partition(".")
        if scope == "span":
            assert any(key in s["attributes"] for s in spans), f"{title}: no span has {key}"
        else:
            assert scope == "event", item
            assert any(key in e for s in spans for e in s["events"]), f"{title}: no event {key}"


def test_the_judge_chain_error_columns_hold_the_exception(exported: Exported) -> None:
    failed = [s for s in exported.spans if s["name"] == "arbiter.judge.ollama" and s["error"]]
    assert failed
    events = [e for s in failed for e in s["events"]]
    assert {e["exception.type"] for e in events} == {"ConnectionError"}
    assert {e["exception.message"] for e in events} == {"connection refused"}
