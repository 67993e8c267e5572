"""A breaker trip is an OpenTelemetry event, captured in-process by the SDK's exporter."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from arbiter.config import Settings
from arbiter.service.trust import evaluate_breaker
from arbiter.store import Store
from arbiter.telemetry import Telemetry
from arbiter.trust import TrustPolicy
from tests.trust.helpers import START, save, stored

POLICY = TrustPolicy(min_runs_proven=5, min_runs_trusted=10, breaker_mode="notify")
QUIET = Settings(_env_file=None, trust_webhook_urls="")  # type: ignore[call-arg]
NOW = START + timedelta(days=1)


def _captured() -> tuple[Telemetry, InMemorySpanExporter, TracerProvider]:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    return Telemetry(tracer_provider=provider), spans, provider


def _trip(store: Store, telemetry: Telemetry | None, owner: str | None = "key-a") -> None:
    records = [stored(i, "sliding", False) for i in range(6)]
    save(store, records, owner=owner)

    async def go() -> None:
        for record in records:
            await evaluate_breaker(
                store,
                [record],
                owner=owner,
                policy=POLICY,
                settings=QUIET,
                now=NOW,
                telemetry=telemetry,
            )

    asyncio.run(go())


def test_a_trip_is_an_event_on_a_breaker_span_of_its_own(store: Store) -> None:
    telemetry, spans, _ = _captured()
    _trip(store, telemetry)
    finished = [s for s in spans.get_finished_spans() if s.name == "arbiter.trust.breaker"]
    assert len(finished) == 1  # one trip for the streak, not one per bad run
    (event,) = finished[0].events
    assert event.name == "arbiter.trust.breaker_trip"
    attributes = dict(event.attributes or {})
    assert attributes["arbiter.agent"] == "sliding"
    assert attributes["arbiter.owner"] == "key-a"
    assert attributes["arbiter.trust_event.kind"] == "breaker_trip"
    assert attributes["arbiter.trust_event.severity"] == "danger"
    assert attributes["arbiter.trust.mode"] == "notify"
    assert attributes["arbiter.trust.state"] == "at_risk"
    assert "fell to at_risk" in str(attributes["arbiter.trust.reason"])
    assert attributes["arbiter.trust.runs"] == 6  # all six were stored before the first check
    assert isinstance(attributes["arbiter.trust_event.id"], int)


def test_without_telemetry_the_trip_lands_on_the_current_span(store: Store) -> None:
    _, spans, provider = _captured()
    with provider.get_tracer("ingest").start_as_current_span("POST /v1/trajectories"):
        _trip(store, None, owner=None)
    (request,) = spans.get_finished_spans()
    assert [e.name for e in request.events] == ["arbiter.trust.breaker_trip"]
    assert "arbiter.owner" not in dict(request.events[0].attributes or {})


def _check(store: Store, telemetry: Telemetry, record_index: int, passed: bool) -> None:
    record = stored(record_index, "sliding", passed)
    save(store, [record], owner="key-a")
    asyncio.run(
        evaluate_breaker(
            store,
            [record],
            owner="key-a",
            policy=POLICY,
            settings=QUIET,
            now=NOW,
            telemetry=telemetry,
        )
    )


def test_checks_off_the_edge_emit_no_event(store: Store) -> None:
    telemetry, spans, _ = _captured()
    for index in range(5):  # provisional, then judged healthy: no edge into at_risk
        _check(store, telemetry, 100 + index, True)
    assert spans.get_finished_spans() == ()
    _trip(store, telemetry)  # six failing runs take it to at_risk: the edge
    assert len(spans.get_finished_spans()) == 1
    spans.clear()
    _check(store, telemetry, 50, False)  # still at_risk: a check, not an edge
    assert spans.get_finished_spans() == ()
