"""``arbiter gate-check`` exports each stored decision as a span to a real OTLP/HTTP receiver."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from arbiter.service.grounding_gate import list_gate_decisions
from arbiter.store import Store
from tests.conftest import Result
from tests.helpers.otlp_receiver import serve_otlp_receiver

REQUEST = {
    "id": "turn-1",
    "question": "Which vehicle costs us the most?",
    "answer": "T-118 costs the most: the finance_ledger database shows $18,400 in invoices.",
    "scope": {"databases": ["fleet_ops"], "description": "Fleet maintenance."},
}


def test_each_decision_reaches_the_collector_as_its_span(
    cli: Callable[..., Result], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "requests.jsonl"
    path.write_text(json.dumps(REQUEST) + "\n", "utf-8")
    with serve_otlp_receiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.base_url)
        result = cli("gate-check", str(path), "--mode", "enforce")
        exports = receiver.received("traces")
    assert result.code == 0, result.err
    spans = []
    for export in exports:
        request = ExportTraceServiceRequest.FromString(export.body)
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                spans += [s for s in scope.spans if s.name == "arbiter.grounding_gate"]
    (span,) = spans
    attributes = {a.key: a.value for a in span.attributes}
    (stored,) = list_gate_decisions(Store(f"sqlite:///{tmp_path / 'store.db'}"))
    assert attributes["arbiter.gate.decision_id"].string_value == stored.id
    assert attributes["arbiter.gate.action"].string_value == "deliver_annotated"
    assert attributes["arbiter.gate.judge"].string_value == "unknown"
    assert attributes["arbiter.gate.judge_calls"].int_value == 1
    assert attributes["arbiter.gate.judge_cost_usd"].double_value == 0.0
