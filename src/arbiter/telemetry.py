"""OpenTelemetry for Arbiter: one ``Telemetry`` object, passed in, never global.

``Telemetry.disabled()`` costs next to nothing and is the default everywhere. A real
one owns its own tracer and meter providers (no process-wide SDK set-up), so tests and
services can run several side by side.

Instruments:

- span ``arbiter.evaluate_item`` with a child span per layer ``arbiter.layer.<name>``
  (judge attempts are child spans too; failures are recorded as span events);
- histogram ``arbiter.layer.latency`` (ms, attribute ``layer``, ``status``);
- counter ``arbiter.judge.outcome`` (attribute ``source``);
- counters ``arbiter.items`` and ``arbiter.escalations``;
- gauge-like histogram ``arbiter.harness.metric`` for offline run figures.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.trace import Span, Status, StatusCode

__all__ = ["Telemetry"]

Attributes = Mapping[str, str | int | float | bool]


class Telemetry:
    """Tracer and meters of one Arbiter component.

    Args:
        tracer_provider: Where spans go; a no-op provider when None.
        meter_provider: Where metrics go; a no-op provider when None.
    """

    def __init__(
        self,
        *,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
    ) -> None:
        self.enabled = tracer_provider is not None or meter_provider is not None
        self._tracer_provider = tracer_provider or trace.NoOpTracerProvider()
        self._meter_provider = meter_provider or metrics.NoOpMeterProvider()
        self._tracer = self._tracer_provider.get_tracer("arbiter")
        meter = self._meter_provider.get_meter("arbiter")
        self._layer_latency = meter.create_histogram(
            "arbiter.layer.latency", unit="ms", description="Latency of one online layer"
        )
        self._judge_outcome = meter.create_counter(
            "arbiter.judge.outcome", description="Judge-chain resolutions by source"
        )
        self._items = meter.create_counter("arbiter.items", description="Items evaluated online")
        self._escalations = meter.create_counter(
            "arbiter.escalations", description="Items escalated to the expensive layers"
        )
        self._harness = meter.create_histogram(
            "arbiter.harness.metric", description="Figures of offline runs (accuracy, ...)"
        )

    @classmethod
    def disabled(cls) -> Telemetry:
        """Telemetry that records nothing."""
        return cls()

    @contextmanager
    def span(self, name: str, attributes: Attributes | None = None) -> Iterator[Span]:
        """A span (child of the current one); an exception is recorded, then re-raised."""
        with self._tracer.start_as_current_span(
            name,
            attributes=dict(attributes or {}),
            record_exception=True,
            set_status_on_exception=True,
        ) as span:
            yield span

    @staticmethod
    def event(span: Span, name: str, attributes: Attributes | None = None) -> None:
        """Add an event (e.g. a failed judge attempt) to a span."""
        span.add_event(name, attributes=dict(attributes or {}))

    @staticmethod
    def fail(span: Span, message: str) -> None:
        """Mark a span as failed without an exception object."""
        span.set_status(Status(StatusCode.ERROR, message))

    def record_layer(self, layer: str, latency_ms: float, status: str) -> None:
        """One layer's latency and status."""
        self._layer_latency.record(latency_ms, {"layer": layer, "status": status})

    def record_judge(self, source: str) -> None:
        """Which source resolved a judge-chain call."""
        self._judge_outcome.add(1, {"source": source})

    def record_item(self, *, escalated: bool) -> None:
        """One item evaluated, escalated or not."""
        self._items.add(1)
        if escalated:
            self._escalations.add(1)

    def record_run_metric(
        self, name: str, value: float, attributes: Attributes | None = None
    ) -> None:
        """One figure of an offline run (accuracy, pass^k, ...)."""
        self._harness.record(value, {"metric": name, **dict(attributes or {})})

    def shutdown(self) -> None:
        """Flush and close the providers this object owns."""
        for provider in (self._tracer_provider, self._meter_provider):
            close: Any = getattr(provider, "shutdown", None)
            if callable(close):
                close()
