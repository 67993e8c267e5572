"""OTLP/HTTP ingest: the spans and log records of recent traces, paired, imported and scored.

An instrumented app exports its spans (``POST /v1/traces``) and, with the older GenAI
instrumentations such as ``opentelemetry-instrumentation-openai-v2``, its chat messages
and tool calls as log records (``POST /v1/logs``), in separate requests, in any order,
and a long trace in several batches. :class:`TraceIngest` keeps what arrived of each
recent trace in a bounded buffer and, whenever a trace gains spans or log records,
imports it again whole (OTLP GenAI, or OpenInference when its spans say so), scores its
runs online and stores them, replacing what the trace gave before. So a run's tool
calls appear once the log records that carry them arrive, and a run whose agent span
comes last is stored once, as a whole.

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

import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from arbiter.contract import StoredTrajectory
from arbiter.errors import InputError
from arbiter.service.attestation import CONFIGURED, attest_trajectories, resolve_signer
from arbiter.service.safety_events import record_firewall_events
from arbiter.service.trajectories import AgentRunScoring, run_id_for, score_run
from arbiter.service.trust import evaluate_breaker
from arbiter.store import Store
from arbiter.store.trajectory_repository import save_trajectories
from arbiter.telemetry_eval import EVALUATION_OPERATION
from arbiter.trajectories.formats import ImportedRun, TrajectoryFormat, TrajectoryFormatRegistry
from arbiter.trajectories.otlp import body_format, decode_otlp_body
from arbiter.trajectories.otlp_steps import operation
from arbiter.trajectories.spans import LogRecord, Rejected, Span

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


@dataclass
class _Trace:
    spans: dict[str, Span] = field(default_factory=dict)
    logs: list[LogRecord] = field(default_factory=list)
    log_keys: set[tuple[str | None, int | None, str | None, str]] = field(default_factory=set)
    stored: set[str] = field(default_factory=set)
    version: int = 0
    touched: float = 0.0
    rejected: str | None = None  # why the trace cannot be imported; its later items too


class TraceIngest:
    """Pairs spans and log records per trace, and stores each trace's scored runs.

    Args:
        store: Where the runs go.
        scoring: The online scoring of agent runs (built once).
        max_traces: Most traces buffered.
        max_age_s: Seconds a trace stays buffered after it was last touched.
        clock: Seconds, monotonic (tests pass their own).
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
        clock: Callable[[], float] = time.monotonic,
        formats: TrajectoryFormatRegistry | None = None,
    ) -> None:
        self.store, self.scoring = store, scoring
        self.formats = formats or TrajectoryFormatRegistry.default()
        self.max_traces, self.max_age_s, self._clock = max_traces, max_age_s, clock
        self._traces: OrderedDict[tuple[str | None, str], _Trace] = OrderedDict()

    @property
    def buffered(self) -> int:
        """Traces in the buffer now."""
        return len(self._traces)

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
        self._expire()
        touched = self._take(owner, spans, logs)
        snapshots = []
        for key in touched:
            trace = self._traces[key]
            if kind == "traces" and key[1] in broken and trace.rejected is None:
                trace.rejected = broken[key[1]]  # a trace missing a span would import wrong
            elif trace.rejected is not None:
                report.errors.append(f"trace {key[1]}: rejected before: {trace.rejected}")
            if trace.rejected is not None:
                report.rejected += carried[key[1]]
                continue
            if not trace.spans:
                continue  # log records waiting for their spans
            found = list(trace.spans.values())
            reader = self._span_format(found)
            if reader is None:
                report.ignored_traces += 1
                continue
            try:
                runs = self._runs(reader, found, trace.logs, content_type)
            except InputError as exc:
                trace.rejected = str(exc)
                report.rejected += carried[key[1]]
                report.errors.append(str(exc))
                continue
            snapshots.append((key, trace.version, runs))
        records: list[tuple[tuple[str | None, str], int, list[StoredTrajectory]]] = []
        for key, version, runs in snapshots:
            scored = [await self._score(run, owner) for run in runs]
            records.append((key, version, scored))
        self._save(records, owner, report)
        await evaluate_breaker(self.store, report.stored, owner=owner)  # never raises
        return report

    def _take(
        self, owner: str | None, spans: Sequence[Span], logs: Iterable[LogRecord]
    ) -> list[tuple[str | None, str]]:
        """Buffer the request's spans and log records; the traces they touched, in order."""
        now = self._clock()
        touched: dict[tuple[str | None, str], None] = {}
        for span in spans:
            trace = self._entry((owner, span.trace_id), now, touched)
            if span.span_id in trace.spans or len(trace.spans) < MAX_TRACE_ITEMS:
                trace.spans[span.span_id] = span
        for log in logs:
            if log.trace_id is None:
                continue  # nothing to pair it with
            trace = self._entry((owner, log.trace_id), now, touched)
            key = (log.span_id, log.time_ns, log.event_name, repr(log.body)[:200])
            if key not in trace.log_keys and len(trace.logs) < MAX_TRACE_ITEMS:
                trace.log_keys.add(key)  # an exporter's retry sends a batch twice
                trace.logs.append(log)
        return list(touched)

    def _entry(
        self, key: tuple[str | None, str], now: float, touched: dict[tuple[str | None, str], None]
    ) -> _Trace:
        trace = self._traces.get(key)
        if trace is None:
            trace = self._traces[key] = _Trace()
            while len(self._traces) > self.max_traces:
                self._traces.popitem(last=False)
        if key not in touched:
            trace.version += 1
            touched[key] = None
        trace.touched = now
        self._traces.move_to_end(key)
        return trace

    def _expire(self) -> None:
        deadline = self._clock() - self.max_age_s
        while self._traces:
            key, trace = next(iter(self._traces.items()))
            if trace.touched > deadline:
                break
            del self._traces[key]

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
        scored: list[tuple[tuple[str | None, str], int, list[StoredTrajectory]]],
        owner: str | None,
        report: IngestReport,
    ) -> None:
        """Store what is still current: a trace that a later request touched while this
        one was scoring is left to that request, which holds more of it."""
        records: list[StoredTrajectory] = []
        superseded: set[str] = set()
        current = []
        for key, version, runs in scored:
            trace = self._traces.get(key)
            if trace is None or trace.version != version:
                continue
            ids = {run.id for run in runs}
            superseded |= trace.stored - ids
            records.extend(runs)
            current.append((trace, ids))
        if not records and not superseded:
            return
        signer = resolve_signer(CONFIGURED)  # a key that cannot be read fails before the write
        save_trajectories(self.store, records, owner=owner, superseded=superseded)
        attest_trajectories(self.store, records, signer=signer)  # when a key is configured
        record_firewall_events(self.store, records, owner=owner)  # never raises: observe only
        for trace, ids in current:
            trace.stored = ids
        report.stored.extend(records)


def is_otlp_media_type(content_type: str | None) -> bool:
    """Whether a ``Content-Type`` is one of the two the OTLP/HTTP exporters send."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    return media in ("application/x-protobuf", "application/protobuf", "application/json")
