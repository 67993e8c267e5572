"""OTLP/HTTP ingest: the spans and log records of recent traces, paired, imported and scored.

An instrumented app exports its spans (``POST /v1/traces``) and, with the older GenAI
instrumentations such as ``opentelemetry-instrumentation-openai-v2``, its chat messages
and tool calls as log records (``POST /v1/logs``), in separate requests, in any order,
and a long trace in several batches. :class:`TraceIngest` keeps what arrived of each
recent trace in a bounded buffer in the store (:mod:`arbiter.store.otlp_buffer_repository`),
so that any server process pairs any trace, and, whenever a trace gains spans or log
records, imports it again whole (OTLP GenAI, or OpenInference when its spans say so),
scores its runs online and stores them, replacing what the trace gave before. So a
run's tool calls appear once the log records that carry them arrive, whichever process
takes them, and a run whose agent span comes last is stored once, as a whole.

Bounds: :data:`MAX_TRACES` traces are buffered (the least recently touched go first),
each for :data:`MAX_AGE_S` seconds after it was last touched, with at most
:data:`MAX_TRACE_ITEMS` spans and as many log records. A trace whose spans carry no
GenAI (``gen_ai.*``) or OpenInference attribute is not an agent's and is not stored, nor
is one whose only GenAI spans are evaluations (Arbiter's own verdict events, when an
``arbiter`` process exports its telemetry to this server).
Log records that arrive after their trace left the buffer wait there for spans that
will not come, and expire.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from arbiter.contract import StoredTrajectory
from arbiter.errors import InputError
from arbiter.service.attestation import CONFIGURED, attest_trajectories, resolve_signer
from arbiter.service.safety_events import record_firewall_events
from arbiter.service.trajectories import AgentRunScoring, run_id_for, score_run
from arbiter.service.trust import evaluate_breaker
from arbiter.store import Store
from arbiter.store.otlp_buffer_repository import (
    PendingTrace,
    TraceArrivals,
    count_pending_traces,
    keep_if_current,
    mark_rejected,
    take_arrivals,
)
from arbiter.store.trajectory_repository import save_trajectories
from arbiter.telemetry_eval import EVALUATION_OPERATION
from arbiter.trajectories.formats import ImportedRun, TrajectoryFormat, TrajectoryFormatRegistry
from arbiter.trajectories.otlp import body_format, decode_otlp_body
from arbiter.trajectories.otlp_steps import operation
from arbiter.trajectories.spans import LogRecord, Rejected, Span, SpanEvent

__all__ = [
    "MAX_AGE_S",
    "MAX_MESSAGE_CHARS",
    "MAX_REASONS",
    "MAX_TRACES",
    "MAX_TRACE_ITEMS",
    "IngestReport",
    "TraceIngest",
    "is_otlp_media_type",
]

MAX_TRACES = 1_000
"""Most traces buffered at once."""
MAX_AGE_S = 120.0
"""Seconds a trace stays buffered after its last spans or log records arrived."""
MAX_TRACE_ITEMS = 20_000
"""Most spans (and, apart, log records) buffered for one trace."""
MAX_REASONS = 5
"""Reasons of rejection an export response lists (all are counted)."""
MAX_MESSAGE_CHARS = 2_000
"""Longest ``error_message`` of an export response."""


@dataclass
class IngestReport:
    """What one export request did."""

    spans: int = 0
    """Spans it carried."""
    logs: int = 0
    """Log records it carried."""
    stored: list[StoredTrajectory] = field(default_factory=list)
    """The runs stored (or stored again) because of it."""
    ignored_traces: int = 0
    """Traces it touched that hold no agent's spans."""
    rejected: int = 0
    """Spans (for ``/v1/traces``) or log records (for ``/v1/logs``) of the request that
    were rejected: malformed, or of a trace that could not be imported."""
    errors: list[str] = field(default_factory=list)
    """Why, one line a rejected span or trace."""

    @property
    def error_message(self) -> str:
        """The reasons in one bounded line, for the export response's ``partial_success``."""
        shown = "; ".join(self.errors[:MAX_REASONS])
        if len(self.errors) > MAX_REASONS:
            shown += f"; and {len(self.errors) - MAX_REASONS} more"
        return shown if len(shown) <= MAX_MESSAGE_CHARS else shown[: MAX_MESSAGE_CHARS - 1] + "…"


class TraceIngest:
    """Pairs spans and log records per trace, and stores each trace's scored runs.

    Args:
        store: Where the runs go, and the buffer of recent traces (shared by every
            server process over the same store).
        scoring: The online scoring of agent runs (built once).
        max_traces: Most traces buffered.
        max_age_s: Seconds a trace stays buffered after it was last touched.
        clock: Seconds, wall time, the same in every process over the store (tests pass
            their own).
        formats: The trajectory formats whose span readers import a trace (the one that
            claims its spans most); None: the built-in ones and the installed plugins'.
    """

    def __init__(
        self,
        store: Store,
        scoring: AgentRunScoring,
        *,
        max_traces: int = MAX_TRACES,
        max_age_s: float = MAX_AGE_S,
        clock: Callable[[], float] = time.time,
        formats: TrajectoryFormatRegistry | None = None,
    ) -> None:
        self.store, self.scoring = store, scoring
        self.formats = formats or TrajectoryFormatRegistry.default()
        self.max_traces, self.max_age_s, self._clock = max_traces, max_age_s, clock

    @property
    def buffered(self) -> int:
        """Traces in the buffer now (those every process over the store sees)."""
        return count_pending_traces(self.store)

    async def export(
        self,
        body: bytes,
        content_type: str,
        *,
        content_encoding: str | None = None,
        kind: Literal["traces", "logs"] = "traces",
        owner: str | None = None,
    ) -> IngestReport:
        """Take one ``POST /v1/traces`` or ``POST /v1/logs`` body.

        Args:
            body: The request body, as the exporter sent it.
            content_type: ``application/x-protobuf`` or ``application/json``.
            content_encoding: ``gzip`` or None.
            kind: Which endpoint it came to.
            owner: The key that sent it; traces of different keys never mix.

        One bad trace does not fail the others: a malformed span, or a trace that breaks
        the conventions, is rejected with every span of its trace (counted in
        :attr:`IngestReport.rejected`, its reason in :attr:`IngestReport.errors`), and
        the rest of the request is imported; a trace once rejected stays so while it is
        buffered. What the OTLP receiver answers is then a partial success.

        Raises:
            InputError: The body is not an export request at all (its encoding, its
                framing, its structure above the spans).
            StoreUnavailable: The database refused the write.
        """
        refused: list[Rejected] = []
        spans, logs = decode_otlp_body(
            body, content_type, content_encoding=content_encoding, kind=kind, rejected=refused
        )
        report = IngestReport(spans=len(spans), logs=len(logs))
        report.rejected = len(refused)
        report.errors.extend(r.reason for r in refused)
        broken = {r.trace_id: r.reason for r in refused if r.trace_id is not None}
        carried = Counter(
            [s.trace_id for s in spans] if kind == "traces" else [r.trace_id for r in logs]
        )
        arrivals = _Arrivals(spans, logs, broken if kind == "traces" else {})
        pending = take_arrivals(
            self.store,
            arrivals.batches,
            owner=owner,
            now=self._clock(),
            max_age_s=self.max_age_s,
            max_traces=self.max_traces,
            max_items=MAX_TRACE_ITEMS,
        )
        snapshots = []
        for trace_id in arrivals.batches:
            trace = pending.get(trace_id)
            if trace is None:
                continue  # left the buffer at once (a request touching more than it holds)
            if trace.rejected_before is not None:
                report.errors.append(f"trace {trace_id}: rejected before: {trace.rejected_before}")
            if trace.rejected_before is not None or trace_id in arrivals.broken:
                report.rejected += carried[trace_id]
                continue
            if not trace.spans:
                continue  # log records waiting for their spans
            found = arrivals.spans_of(trace_id, trace)
            reader = self._span_format(found)
            if reader is None:
                report.ignored_traces += 1
                continue
            try:
                runs = self._runs(reader, found, arrivals.logs_of(trace_id, trace), content_type)
            except InputError as exc:
                mark_rejected(self.store, trace_id, str(exc), owner=owner)
                report.rejected += carried[trace_id]
                report.errors.append(str(exc))
                continue
            snapshots.append((trace_id, trace.token, runs))
        records: list[tuple[str, tuple[int, int], list[StoredTrajectory]]] = []
        for trace_id, token, runs in snapshots:
            scored = [await self._score(run, owner) for run in runs]
            records.append((trace_id, token, scored))
        self._save(records, owner, report)
        await evaluate_breaker(self.store, report.stored, owner=owner)  # never raises
        return report

    def _span_format(self, spans: list[Span]) -> TrajectoryFormat | None:
        """The format whose span reader takes a trace: None when no format claims it as
        an agent's (Arbiter's own verdict events, sent back to it, are no run)."""
        return self.formats.span_format([s for s in spans if operation(s) != EVALUATION_OPERATION])

    @staticmethod
    def _runs(
        reader: TrajectoryFormat, spans: list[Span], logs: list[LogRecord], content_type: str
    ) -> list[ImportedRun]:
        assert reader.spans is not None  # span_format() returns span formats only
        trajectories = reader.spans.read(spans, logs, body_format(content_type))
        return [
            ImportedRun(t, None, t.id or "trace", 0, source_format=reader.name)
            for t in trajectories
        ]

    async def _score(self, run: ImportedRun, owner: str | None) -> StoredTrajectory:
        assert run.trajectory is not None
        run_id = run_id_for(run.trajectory, owner=owner)
        return await score_run(run, scoring=self.scoring, owner=owner, run_id=run_id)

    def _save(
        self,
        scored: list[tuple[str, tuple[int, int], list[StoredTrajectory]]],
        owner: str | None,
        report: IngestReport,
    ) -> None:
        """Store what is still current: a trace that a later request touched while this
        one was scoring is left to that request, which holds more of it."""
        runs = {trace_id: runs for trace_id, _, runs in scored}

        def save(current: list[str], superseded: set[str]) -> None:
            records = [run for trace_id in current for run in runs[trace_id]]
            if not records and not superseded:
                return
            signer = resolve_signer(CONFIGURED)  # a key that cannot be read fails first
            save_trajectories(self.store, records, owner=owner, superseded=superseded)
            attest_trajectories(self.store, records, signer=signer)  # when a key is configured
            record_firewall_events(self.store, records, owner=owner)  # never raises
            report.stored.extend(records)

        tokens = {trace_id: (token, [run.id for run in runs]) for trace_id, token, runs in scored}
        keep_if_current(self.store, tokens, save, owner=owner)


class _Arrivals:
    """One request's spans and log records per trace, serialised for the buffer; the
    decoded ones kept at hand, so a trace it made is imported without reading back."""

    def __init__(
        self, spans: Sequence[Span], logs: Iterable[LogRecord], broken: dict[str, str]
    ) -> None:
        self.broken = broken
        self.batches: dict[str, TraceArrivals] = {}
        self._spans: dict[tuple[str, str], Span] = {}
        self._logs: dict[tuple[str, str], LogRecord] = {}
        for span in spans:
            batch = self._batch(span.trace_id)
            key = (span.trace_id, span.span_id)
            if span.span_id in batch.spans or len(batch.spans) < MAX_TRACE_ITEMS:
                batch.spans[span.span_id] = ""  # its place; the last copy's payload below
                self._spans[key] = span
        for log in logs:
            if log.trace_id is None:
                continue  # nothing to pair it with
            batch = self._batch(log.trace_id)
            digest = _log_key(log)
            if digest not in batch.logs and len(batch.logs) < MAX_TRACE_ITEMS:
                batch.logs[digest] = _log_text(log)  # an exporter's retry sends a batch twice
                self._logs[(log.trace_id, digest)] = log
        for (trace_id, span_id), span in self._spans.items():
            self.batches[trace_id].spans[span_id] = _span_text(span)

    def _batch(self, trace_id: str) -> TraceArrivals:
        batch = self.batches.get(trace_id)
        if batch is None:
            batch = self.batches[trace_id] = TraceArrivals(reject=self.broken.get(trace_id))
        return batch

    def spans_of(self, trace_id: str, trace: PendingTrace) -> list[Span]:
        """Every span the trace holds, in arrival order."""
        return [
            self._spans[(trace_id, key)] if text is None else _span_of(text)
            for key, text in trace.spans
        ]

    def logs_of(self, trace_id: str, trace: PendingTrace) -> list[LogRecord]:
        """Every log record the trace holds, in arrival order."""
        return [
            self._logs[(trace_id, key)] if text is None else _log_of(text)
            for key, text in trace.logs
        ]


# The buffer's payloads: JSON arrays of a span's (or a log record's) fields, ASCII
# (escaped), so any text column holds them; attribute values are plain JSON values.


def _span_text(span: Span) -> str:
    events = [[e.name, e.time_ns, e.attributes] for e in span.events]
    fields = [span.trace_id, span.span_id, span.parent_span_id, span.name, span.kind,
              span.start_ns, span.end_ns, span.attributes, events, span.status_code,
              span.status_message, span.resource, span.scope]  # fmt: skip
    return json.dumps(fields, separators=(",", ":"))


def _span_of(text: str) -> Span:
    (
        trace,
        span,
        parent,
        name,
        kind,
        start,
        end,
        attributes,
        events,
        code,
        message,
        resource,
        scope,
    ) = json.loads(text)
    return Span(
        trace, span, parent, name, kind, start, end, attributes,
        tuple(SpanEvent(*event) for event in events), code, message, resource, scope,
    )  # fmt: skip


def _log_text(log: LogRecord) -> str:
    fields: list[Any] = [log.trace_id, log.span_id, log.time_ns, log.event_name,
                         log.attributes, log.body]  # fmt: skip
    return json.dumps(fields, separators=(",", ":"))


def _log_of(text: str) -> LogRecord:
    return LogRecord(*json.loads(text))


def _log_key(log: LogRecord) -> str:
    """What tells two log records of a trace apart (a retried batch sends the same again)."""
    key = (log.span_id, log.time_ns, log.event_name, repr(log.body)[:200])
    return hashlib.blake2b(
        repr(key).encode("utf-8", "backslashreplace"), digest_size=16
    ).hexdigest()


def is_otlp_media_type(content_type: str | None) -> bool:
    """Whether a ``Content-Type`` is one of the two the OTLP/HTTP exporters send."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    return media in ("application/x-protobuf", "application/protobuf", "application/json")
