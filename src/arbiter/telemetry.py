"""OpenTelemetry for Arbiter: one ``Telemetry`` object, passed in, never global.

``Telemetry.disabled()`` costs next to nothing and is the default everywhere. A real
one owns its own tracer, meter and logger providers (no process-wide SDK set-up), so tests and
services can run several side by side.

Instruments:

- span ``arbiter.evaluate_item`` with a child span per layer ``arbiter.layer.<name>``
  (judge attempts are child spans too; failures are recorded as span events);
- histogram ``arbiter.layer.latency`` (ms, attribute ``layer``, ``status``);
- histogram ``arbiter.evaluation.latency`` (ms): one online item, end to end;
- counter ``arbiter.judge.outcome`` (attribute ``source``): judge-chain resolutions;
- counter ``arbiter.judge.errors`` (attributes ``judge``, ``exception.type``): judge-chain
  attempts that raised (the message is on the attempt's span, as its exception event);
- counters ``arbiter.items`` and ``arbiter.escalations`` (attribute ``trigger``:
  ``anomalous``, ``flagged`` or ``sampled``);
- counter ``arbiter.judge.items`` (attribute ``trigger``): items a judge panel ruled on;
  over ``arbiter.items``, the share of traffic that reached the judges;
- counter ``arbiter.judge.rulings`` (attributes ``judge``, ``verdict``): one per judge
  per item, ``unknown`` included;
- counters ``arbiter.judge.tokens`` (attribute ``direction``: ``input`` / ``output``)
  and ``arbiter.judge.cost_usd`` (priced calls only) of the judge panels' calls;
- counter ``arbiter.trajectory.verdicts`` (attributes ``agent``, ``scorer``, ``band``,
  ``outcome``): the verdicts of the online trajectory scorers;
- gauge ``arbiter.harness.metric`` for offline run figures (attribute ``metric``,
  ``dataset``, ``system``);
- log-record events ``gen_ai.evaluation.result``, one per scorer verdict
  (:mod:`arbiter.telemetry_eval`), through the logger provider.

``Telemetry.from_env()`` exports all three over OTLP/HTTP when
``OTEL_EXPORTER_OTLP_ENDPOINT`` is set. The SDK and the exporter are the optional extra
``arbiter[otel]``, imported only then. Export is bounded (short timeouts) and quiet: an
unreachable collector never slows the program down much and never prints; the
exporters' complaints are demoted to DEBUG log records, so ``logging`` at DEBUG still
shows them.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from opentelemetry import metrics, trace
from opentelemetry.trace import Span, Status, StatusCode

if TYPE_CHECKING:
    from opentelemetry._logs import LoggerProvider

__all__ = ["Telemetry"]

Attributes = Mapping[str, str | int | float | bool]

ENDPOINT_VARIABLE = "OTEL_EXPORTER_OTLP_ENDPOINT"
"""The variable that switches export on (the name every OTel SDK reads)."""

_log = logging.getLogger(__name__)

# Loggers through which the OTLP/HTTP exporters report failed exports (connection
# refused, timeouts, retries). Filters on a logger do not see its children's records,
# so each is named.
_EXPORTER_LOGGERS = (
    "opentelemetry.exporter.otlp.proto.http",
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.exporter.otlp.proto.http.metric_exporter",
    "opentelemetry.exporter.otlp.proto.http._log_exporter",
    "opentelemetry.exporter.otlp.proto.http._common",
    "opentelemetry.exporter.otlp.common.http",
)


class _DemoteToDebug(logging.Filter):
    """Rewrites a record's level to DEBUG: kept for whoever logs at DEBUG, shown to no one else.

    Handlers compare the record's level after the logger's filters ran, so a demoted
    record passes the usual WARNING handlers (and logging's last-resort stderr handler) by.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        record.levelno = logging.DEBUG
        record.levelname = "DEBUG"
        return True


def _quiet_exporter_logs() -> None:
    for name in _EXPORTER_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, _DemoteToDebug) for f in logger.filters):
            logger.addFilter(_DemoteToDebug())


def _positive_ms(environ: Mapping[str, str], name: str, default: float) -> float:
    try:
        value = float(environ.get(name, "") or default)
    except ValueError:
        return default
    return value if value > 0 else default


class Telemetry:
    """Tracer, meters and event logger of one Arbiter component.

    Args:
        tracer_provider: Where spans go; a no-op provider when None.
        meter_provider: Where metrics go; a no-op provider when None.
        logger_provider: Where log-record events go (the evaluation results); none
            are emitted when None.
    """

    def __init__(
        self,
        *,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
        logger_provider: LoggerProvider | None = None,
    ) -> None:
        self.enabled = (
            tracer_provider is not None or meter_provider is not None or logger_provider is not None
        )
        self._closed = False
        self._logger_provider = logger_provider
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
        self._evaluation_latency = meter.create_histogram(
            "arbiter.evaluation.latency", unit="ms", description="Latency of one online item"
        )
        self._judge_errors = meter.create_counter(
            "arbiter.judge.errors", description="Judge-chain attempts that raised"
        )
        self._items = meter.create_counter("arbiter.items", description="Items evaluated online")
        self._escalations = meter.create_counter(
            "arbiter.escalations", description="Items escalated to the expensive layers"
        )
        self._judged = meter.create_counter(
            "arbiter.judge.items", description="Items a judge panel ruled on"
        )
        self._rulings = meter.create_counter(
            "arbiter.judge.rulings", description="Judge rulings, by judge and verdict"
        )
        self._judge_tokens = meter.create_counter(
            "arbiter.judge.tokens", description="Tokens of judge-panel calls"
        )
        self._judge_cost = meter.create_counter(
            "arbiter.judge.cost_usd", description="Cost in USD of priced judge-panel calls"
        )
        self._verdicts = meter.create_counter(
            "arbiter.trajectory.verdicts", description="Verdicts of online trajectory scorers"
        )
        self._harness = meter.create_gauge(
            "arbiter.harness.metric", description="Figures of offline runs (accuracy, ...)"
        )

    @classmethod
    def disabled(cls) -> Telemetry:
        """Telemetry that records nothing."""
        return cls()

    @classmethod
    def from_env(
        cls,
        environ: Mapping[str, str] | None = None,
        *,
        service_name: str = "arbiter",
        export_timeout: float = 2.0,
    ) -> Telemetry:
        """OTLP/HTTP export when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set, else :meth:`disabled`.

        Spans go to ``{endpoint}/v1/traces`` and log-record events to
        ``{endpoint}/v1/logs`` through batching processors, metrics to
        ``{endpoint}/v1/metrics`` every ``OTEL_METRIC_EXPORT_INTERVAL`` ms (default
        60,000) and at :meth:`shutdown`. ``OTEL_SERVICE_NAME`` overrides
        ``service_name``, ``OTEL_EXPORTER_OTLP_HEADERS`` adds headers and
        ``OTEL_SDK_DISABLED=true`` turns export off, as in every OTel SDK. Without the
        ``arbiter[otel]`` extra, one warning is logged and telemetry stays disabled.

        Args:
            environ: Variables to read; the process environment when None.
            service_name: The ``service.name`` resource attribute.
            export_timeout: Seconds one export may take, retries included; kept short
                so that an absent collector costs little at shutdown.

        Returns:
            A Telemetry that owns its providers; call :meth:`shutdown` to flush.

        Examples:
            >>> telemetry = Telemetry.from_env({})
            >>> telemetry.enabled
            False
        """
        env = os.environ if environ is None else environ
        endpoint = env.get(ENDPOINT_VARIABLE, "").strip().rstrip("/")
        if not endpoint or env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
            return cls.disabled()
        try:
            from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
                OTLPMetricExporter,
            )
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk._logs import LoggerProvider as SdkLoggerProvider
            from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
            from opentelemetry.sdk.metrics import MeterProvider
            from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
            from opentelemetry.util.re import parse_env_headers
        except ImportError as exc:
            _log.warning(
                "%s is set but OpenTelemetry export needs the 'otel' extra "
                "(pip install 'arbiter[otel]'; missing: %s); telemetry stays off",
                ENDPOINT_VARIABLE,
                exc.name or exc,
            )
            return cls.disabled()
        _quiet_exporter_logs()
        headers = dict(parse_env_headers(env.get("OTEL_EXPORTER_OTLP_HEADERS", ""), liberal=True))
        resource = Resource.create(
            {"service.name": env.get("OTEL_SERVICE_NAME", "").strip() or service_name}
        )
        tracer_provider = TracerProvider(resource=resource)
        tracer_provider.add_span_processor(
            BatchSpanProcessor(
                OTLPSpanExporter(
                    endpoint=f"{endpoint}/v1/traces", headers=headers, timeout=export_timeout
                ),
                export_timeout_millis=export_timeout * 1000,
            )
        )
        reader = PeriodicExportingMetricReader(
            OTLPMetricExporter(
                endpoint=f"{endpoint}/v1/metrics", headers=headers, timeout=export_timeout
            ),
            export_interval_millis=_positive_ms(env, "OTEL_METRIC_EXPORT_INTERVAL", 60_000),
            export_timeout_millis=export_timeout * 1000,
        )
        meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
        logger_provider = SdkLoggerProvider(resource=resource)
        logger_provider.add_log_record_processor(
            BatchLogRecordProcessor(
                OTLPLogExporter(
                    endpoint=f"{endpoint}/v1/logs", headers=headers, timeout=export_timeout
                ),
                export_timeout_millis=export_timeout * 1000,
            )
        )
        return cls(
            tracer_provider=tracer_provider,
            meter_provider=meter_provider,
            logger_provider=logger_provider,
        )

    @property
    def tracer_provider(self) -> trace.TracerProvider:
        """Where spans go (a no-op provider when tracing is off)."""
        return self._tracer_provider

    @property
    def logger_provider(self) -> LoggerProvider | None:
        """Where log-record events go; None when they go nowhere."""
        return self._logger_provider

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

    def record_judge_error(self, judge: str, exception_type: str) -> None:
        """A judge-chain attempt that raised ``exception_type``."""
        self._judge_errors.add(1, {"judge": judge, "exception.type": exception_type})

    def record_item(
        self, *, escalated: bool, latency_ms: float | None = None, trigger: str | None = None
    ) -> None:
        """One item evaluated: escalated or not (and why), and how long it took."""
        self._items.add(1)
        if escalated:
            self._escalations.add(1, {"trigger": trigger} if trigger else None)
        if latency_ms is not None:
            self._evaluation_latency.record(latency_ms)

    def record_judged(
        self,
        *,
        trigger: str,
        rulings: Mapping[str, str],
        input_tokens: int = 0,
        output_tokens: int = 0,
        cost_usd: float | None = None,
    ) -> None:
        """One item a judge panel ruled on: why, each judge's verdict, what it cost.

        Args:
            trigger: Why the item reached the judges (``anomalous``, ``flagged``, ``sampled``).
            rulings: Each judge's verdict (``pass``, ``fail``, ``unknown``).
            input_tokens: Prompt tokens of its calls.
            output_tokens: Completion tokens of its calls.
            cost_usd: Their cost, when every call was priced.
        """
        self._judged.add(1, {"trigger": trigger})
        for judge, verdict in rulings.items():
            self._rulings.add(1, {"judge": judge, "verdict": verdict})
        self._judge_tokens.add(input_tokens, {"direction": "input"})
        self._judge_tokens.add(output_tokens, {"direction": "output"})
        if cost_usd is not None:
            self._judge_cost.add(cost_usd)

    def record_verdict(self, *, agent: str, scorer: str, band: str, outcome: str) -> None:
        """One verdict of a trajectory scorer on an agent's run.

        Args:
            agent: The agent's name.
            scorer: The scorer's name.
            band: ``healthy``, ``review``, ``danger``, or ``none`` when not banded.
            outcome: ``pass``, ``fail`` or ``abstain``.
        """
        attributes = {"agent": agent, "scorer": scorer, "band": band, "outcome": outcome}
        self._verdicts.add(1, attributes)

    def record_run_metric(
        self, name: str, value: float, attributes: Attributes | None = None
    ) -> None:
        """One figure of an offline run (accuracy, pass^k, ...)."""
        self._harness.set(value, {"metric": name, **dict(attributes or {})})

    def flush(self, timeout_millis: int = 5_000) -> None:
        """Export what is buffered now, without closing (for long-lived services)."""
        for provider in self._providers():
            force_flush: Any = getattr(provider, "force_flush", None)
            if callable(force_flush):
                force_flush(timeout_millis)

    def shutdown(self) -> None:
        """Flush and close the providers this object owns; later calls do nothing."""
        if self._closed:
            return
        self._closed = True
        for provider in self._providers():
            close: Any = getattr(provider, "shutdown", None)
            if callable(close):
                close()

    def _providers(self) -> tuple[object, ...]:
        return (self._tracer_provider, self._meter_provider, self._logger_provider)
