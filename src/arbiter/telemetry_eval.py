"""Scorer verdicts as OpenTelemetry ``gen_ai.evaluation.result`` events.

Follows the GenAI semantic conventions (``model/gen-ai/events.yaml``, status
*development*): the result of an evaluation is an **event**, which in OpenTelemetry is
a *log record* carrying an ``event_name`` (emitted through a logger provider), not a
span event. One event per score, with

- ``gen_ai.evaluation.name`` (required): the score's name;
- ``gen_ai.evaluation.score.value``: its value, when it has a finite one;
- ``gen_ai.evaluation.score.label``: its band (``healthy`` / ``review`` / ``danger``)
  when banded, else ``pass`` / ``fail``, else ``abstain`` (errored scores included);
- ``gen_ai.evaluation.explanation``: its explanation (or error), on one line, bounded
  to :data:`MAX_EXPLANATION_CHARS`;
- ``error.type``: the exception type of an errored score;
- ``gen_ai.response.id``: when the caller gives one;
- ``arbiter.score.passed``: Arbiter's own verdict, when it has one.

The convention says the event SHOULD be parented to the span being evaluated: when
the scored trace's span is known, each record carries that trace id and span id. The
scoring itself is an ``evaluation`` span (``gen_ai.operation.name = "evaluation"``,
the value proposed for evaluation spans in the GenAI conventions' open
proposal, not yet in the registry) with a span link to the scored span; when
no span of it is known, the records are parented to the ``evaluation`` span instead.
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Link, NonRecordingSpan, SpanContext, SpanKind, TraceFlags

from arbiter.contract import Score
from arbiter.telemetry import Attributes, Telemetry

if TYPE_CHECKING:
    from opentelemetry._logs import LoggerProvider

__all__ = [
    "EVALUATION_EVENT",
    "EVALUATION_OPERATION",
    "MAX_EXPLANATION_CHARS",
    "emit_evaluation_results",
    "evaluation_attributes",
    "score_label",
]

EVALUATION_EVENT = "gen_ai.evaluation.result"
"""The event name the convention prescribes."""
EVALUATION_OPERATION = "evaluation"
"""``gen_ai.operation.name`` and name of the span the scoring runs in."""
MAX_EXPLANATION_CHARS = 1_000
"""Characters kept of an explanation (it may quote untrusted text)."""

NAME = "gen_ai.evaluation.name"
SCORE_VALUE = "gen_ai.evaluation.score.value"
SCORE_LABEL = "gen_ai.evaluation.score.label"
EXPLANATION = "gen_ai.evaluation.explanation"
RESPONSE_ID = "gen_ai.response.id"
ERROR_TYPE = "error.type"
OPERATION_NAME = "gen_ai.operation.name"
PASSED = "arbiter.score.passed"

_SCOPE = "arbiter"
_HEX = re.compile(r"[0-9a-f]+", re.IGNORECASE)

_log = logging.getLogger(__name__)


def score_label(score: Score) -> str:
    """The event's label: the band, else ``pass`` / ``fail``, else ``abstain``."""
    if score.band is not None:
        return score.band
    if score.passed is None:
        return "abstain"
    return "pass" if score.passed else "fail"


def evaluation_attributes(
    score: Score, *, response_id: str | None = None, max_chars: int = MAX_EXPLANATION_CHARS
) -> dict[str, str | float | bool]:
    """The attributes of one score's ``gen_ai.evaluation.result`` event.

    Examples:
        >>> evaluation_attributes(Score(name="completed", value=1.0, passed=True))
        {'gen_ai.evaluation.name': 'completed', 'gen_ai.evaluation.score.label': 'pass', \
'gen_ai.evaluation.score.value': 1.0, 'arbiter.score.passed': True}
    """
    attributes: dict[str, str | float | bool] = {NAME: score.name, SCORE_LABEL: score_label(score)}
    if score.value is not None and math.isfinite(score.value):
        attributes[SCORE_VALUE] = float(score.value)
    if score.passed is not None:
        attributes[PASSED] = score.passed
    explanation = score.error or score.explanation
    if explanation:
        attributes[EXPLANATION] = _bounded(explanation, max_chars)
    if score.error:
        kind = score.error.partition(":")[0].strip()
        attributes[ERROR_TYPE] = kind if kind.isidentifier() else "_OTHER"
    if response_id:
        attributes[RESPONSE_ID] = response_id
    return attributes


def emit_evaluation_results(
    scores: Sequence[Score],
    *,
    trace_id: str | None,
    span_id: str | None,
    telemetry: Telemetry | None = None,
    tracer_provider: trace.TracerProvider | None = None,
    logger_provider: LoggerProvider | None = None,
    response_id: str | None = None,
    attributes: Attributes | None = None,
    max_explanation_chars: int = MAX_EXPLANATION_CHARS,
) -> int:
    """Emit one ``gen_ai.evaluation.result`` event per score, in an ``evaluation`` span.

    Never raises: a failure is logged at DEBUG and the events emitted so far stand.
    Nothing is done when telemetry is off (no provider given, or a disabled
    ``telemetry``) or there is no score.

    Args:
        scores: The verdicts, each one event.
        trace_id: The scored trace, 32 hex digits (``Trajectory.source.trace_id``).
        span_id: The scored span, 16 hex digits (the trajectory's own span).
        telemetry: Where spans and events go, unless a provider below is given.
        tracer_provider: Where the ``evaluation`` span goes (overrides ``telemetry``'s).
        logger_provider: Where the events go (overrides ``telemetry``'s); none are
            emitted without one.
        response_id: The evaluated completion's id (``gen_ai.response.id``), which the
            convention asks for when the span is not known.
        attributes: More attributes of the ``evaluation`` span (the agent's name, ...).
        max_explanation_chars: Characters kept of each explanation.

    Returns:
        How many events were emitted.
    """
    if not scores:
        return 0
    if tracer_provider is None and logger_provider is None:
        if telemetry is None or not telemetry.enabled:
            return 0
        tracer_provider = telemetry.tracer_provider
        logger_provider = telemetry.logger_provider
    emitted = 0
    try:
        scored = _span_context(trace_id, span_id)
        tracer = (tracer_provider or trace.NoOpTracerProvider()).get_tracer(_SCOPE)
        logger = logger_provider.get_logger(_SCOPE) if logger_provider is not None else None
        span_attributes: dict[str, str | int | float | bool] = {
            OPERATION_NAME: EVALUATION_OPERATION,
            "arbiter.evaluation.count": len(scores),
        }
        if scored is None and trace_id:
            span_attributes["arbiter.evaluated.trace_id"] = trace_id[:64]
        span_attributes.update(attributes or {})
        links = [Link(scored)] if scored is not None else []
        with tracer.start_as_current_span(
            EVALUATION_OPERATION,
            kind=SpanKind.INTERNAL,
            attributes=span_attributes,
            links=links,
        ) as span:
            if logger is None:
                return 0
            from opentelemetry._logs import LogRecord, SeverityNumber

            parent = (
                trace.set_span_in_context(NonRecordingSpan(scored))
                if scored is not None
                else otel_context.get_current()
            )
            for score in scores:
                event = evaluation_attributes(
                    score, response_id=response_id, max_chars=max_explanation_chars
                )
                logger.emit(
                    LogRecord(
                        timestamp=time.time_ns(),
                        context=parent,
                        severity_number=SeverityNumber.INFO,
                        event_name=EVALUATION_EVENT,
                        attributes=event,
                    )
                )
                emitted += 1
            span.set_attribute("arbiter.evaluation.emitted", emitted)
    except Exception as exc:  # telemetry must never break the scoring it reports
        _log.debug("evaluation events not emitted: %s: %s", type(exc).__name__, exc)
    return emitted


def _span_context(trace_id: str | None, span_id: str | None) -> SpanContext | None:
    """The scored span as a remote span context; None unless both ids are valid hex."""
    if not trace_id or not span_id or len(trace_id) != 32 or len(span_id) != 16:
        return None
    if not (_HEX.fullmatch(trace_id) and _HEX.fullmatch(span_id)):
        return None
    context = SpanContext(
        trace_id=int(trace_id, 16),
        span_id=int(span_id, 16),
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )
    return context if context.is_valid else None


def _bounded(text: str, limit: int) -> str:
    """One line of at most ``limit`` characters, in time linear in ``limit``."""
    # Look at a prefix only: a megabyte explanation costs what a short one does.
    head = " ".join(text[: limit * 2 + 1].split())
    if len(head) <= limit and len(text) <= limit * 2 + 1:
        return head
    return head[: max(limit - 1, 0)] + "…"
