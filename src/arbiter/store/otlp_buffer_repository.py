"""The OTLP ingest's buffer in the store: recent traces' spans and log records, bounded.

The service layer (:mod:`arbiter.service.trace_ingest`) hands each request's items here
as opaque payloads, keyed per trace; :func:`take_arrivals` adds them and gives back all
that the touched traces hold, and :func:`keep_if_current` stores a trace's runs only if
no later request touched the trace meanwhile. Every server process reads the same rows,
so any of them pairs any trace.

Bounds, in SQL: a trace untouched for ``max_age_s`` starts again empty when it is
touched, and is deleted at the end of any request after; past ``max_traces`` the least
recently touched go; a trace keeps at most ``max_items`` spans and as many log records
(a span sent again replaces its payload, a log record sent again is ignored).

Two processes taking batches of one trace at once: on PostgreSQL each transaction makes
or locks the trace's row (``INSERT ... ON CONFLICT DO NOTHING``, then
``SELECT ... FOR UPDATE``, each in key order, so no two wait on each other), and
deletes expired and evicted rows last, skipping those another transaction holds
(``SKIP LOCKED``), so that nothing waits on a lock it takes while it waits itself;
:func:`keep_if_current` holds the rows while the runs are written, so an import made
from fewer items never lands after one made from more. SQLite has one writer at a time
and serves one process (``arbiter serve`` refuses more over it), whose check and write
run without a pause between them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sqlalchemy import Connection, Table, bindparam, delete, func, select, update
from sqlalchemy.dialects import postgresql, sqlite

from arbiter.store.otlp_buffer_models import OtlpItemRow, OtlpTraceRow
from arbiter.store.repository import Store

__all__ = [
    "PendingTrace",
    "TraceArrivals",
    "count_pending_traces",
    "keep_if_current",
    "mark_rejected",
    "take_arrivals",
]

_TRACES: Table = OtlpTraceRow.__table__  # type: ignore[assignment]
_ITEMS: Table = OtlpItemRow.__table__  # type: ignore[assignment]
_SPAN, _LOG = "s", "l"
_CHUNK = 500  # ids per IN (...) list, well inside every driver's parameter limit

# The statements of the ingest's hot path, built once (building one costs about what
# running it on SQLite does).
_STALE = (
    select(_TRACES.c.id)
    .where(_TRACES.c.touched <= bindparam("deadline"))
    .with_for_update(skip_locked=True)
)
_LOCK = (
    select(
        _TRACES.c.id, _TRACES.c.trace_id, _TRACES.c.version, _TRACES.c.rejected, _TRACES.c.touched
    )
    .where(_TRACES.c.owner == bindparam("who"), _TRACES.c.trace_id.in_(bindparam("keys")))
    .order_by(_TRACES.c.trace_id)
    .with_for_update()
)
_TOKENS = select(_TRACES.c.id, _TRACES.c.trace_id, _TRACES.c.version, _TRACES.c.stored).where(
    _TRACES.c.owner == bindparam("who"), _TRACES.c.trace_id.in_(bindparam("keys"))
)
_TOKENS_LOCKED = _TOKENS.order_by(_TRACES.c.trace_id).with_for_update()
_HELD = (
    select(_ITEMS.c.trace_ref, _ITEMS.c.kind, _ITEMS.c.item_key, _ITEMS.c.payload)
    .where(_ITEMS.c.trace_ref.in_(bindparam("refs")))
    .order_by(_ITEMS.c.id)
)
_COUNT = select(func.count()).select_from(_TRACES)
_OLDEST = (
    select(_TRACES.c.id)
    .order_by(_TRACES.c.touched, _TRACES.c.id)
    .limit(bindparam("n"))
    .with_for_update(skip_locked=True)
)
_DROP_ITEMS = delete(_ITEMS).where(_ITEMS.c.trace_ref.in_(bindparam("refs")))
_DROP_TRACES = delete(_TRACES).where(_TRACES.c.id.in_(bindparam("refs")))
_ADD_ITEMS = _ITEMS.insert()
_REPLACE_SPAN = (
    update(_ITEMS)
    .where(
        _ITEMS.c.trace_ref == bindparam("ref"),
        _ITEMS.c.kind == _SPAN,
        _ITEMS.c.item_key == bindparam("k"),
    )
    .values(payload=bindparam("p"))
)
_TOUCH = (
    update(_TRACES)
    .where(_TRACES.c.id == bindparam("ref"))
    .values(touched=bindparam("t"), version=bindparam("v"), rejected=bindparam("r"))
)
_RESET = (
    update(_TRACES)
    .where(_TRACES.c.id == bindparam("ref"))
    .values(touched=bindparam("t"), version=bindparam("v"), rejected=bindparam("r"), stored=[])
)
_RECORD_STORED = (
    update(_TRACES).where(_TRACES.c.id == bindparam("ref")).values(stored=bindparam("ids"))
)
# A new trace's row, born touched once; the rows it returns are those it made.
_INSERTS = {
    name: dialect.insert(_TRACES)
    .on_conflict_do_nothing()
    .returning(_TRACES.c.id, _TRACES.c.trace_id)
    for name, dialect in (("postgresql", postgresql), ("sqlite", sqlite))
}


@dataclass(frozen=True, slots=True)
class _Row:
    """A touched trace's row as the request found it."""

    id: int
    trace_id: str
    version: int = 0
    """0: the request made it."""
    rejected: str | None = None
    expired: bool = False
    """Untouched for the age bound: it starts again empty, as a new trace would."""


T = TypeVar("T")


@dataclass
class TraceArrivals:
    """What one request brought of one trace, each item once, in arrival order."""

    spans: dict[str, str] = field(default_factory=dict)
    """Span id -> payload (a span sent twice in the request: its last payload)."""
    logs: dict[str, str] = field(default_factory=dict)
    """Log record key -> payload (the first of the request's copies)."""
    reject: str | None = None
    """Why the trace is to be rejected from now on (a malformed span of it); None: no."""


@dataclass(frozen=True, slots=True)
class PendingTrace:
    """A touched trace as the buffer holds it after the request's items were added."""

    token: tuple[int, int]
    """Its row and version: :func:`keep_if_current` stores runs only while unchanged."""
    rejected_before: str | None
    """Why an earlier request rejected it; None when none did."""
    spans: list[tuple[str, str | None]]
    """Every span it holds, in arrival order: (span id, payload), the payload None when
    it is the request's own (the caller has it). Empty when the trace is rejected."""
    logs: list[tuple[str, str | None]]
    """Every log record it holds, likewise (empty when it holds no span or is rejected)."""


def _owner(owner: str | None) -> str:
    return owner or ""


def _chunks(items: Sequence[T]) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]


def _drop_items(c: Connection, ids: Sequence[int]) -> None:
    for chunk in _chunks(ids):
        c.execute(_DROP_ITEMS, {"refs": list(chunk)})


def _delete_traces(c: Connection, ids: Sequence[int]) -> None:
    _drop_items(c, ids)
    for chunk in _chunks(ids):
        c.execute(_DROP_TRACES, {"refs": list(chunk)})


def take_arrivals(
    store: Store,
    arrivals: Mapping[str, TraceArrivals],
    *,
    owner: str | None,
    now: float,
    max_age_s: float,
    max_traces: int,
    max_items: int,
) -> dict[str, PendingTrace]:
    """Add one request's spans and log records to their traces; what the traces hold.

    Args:
        store: The store.
        arrivals: Trace id -> what the request brought of it.
        owner: The key that sent them; traces of different keys never mix.
        now: The ingest clock's seconds, the traces' touched time.
        max_age_s: A trace untouched for this long is dropped first.
        max_traces: Most traces kept (across keys); the least recently touched go.
        max_items: Most spans, and apart log records, one trace keeps.

    Returns:
        Trace id -> the trace, for each touched trace still buffered.

    Raises:
        StoreUnavailable: The database refused the write.
    """
    if not arrivals:
        return {}
    who = _owner(owner)
    keys = sorted(arrivals)  # one lock order for every process
    deadline = now - max_age_s
    with store.guard("buffer OTLP spans and log records"), store.engine.begin() as c:
        insert = _INSERTS["postgresql" if c.dialect.name == "postgresql" else "sqlite"]
        found: dict[str, _Row] = {}
        for chunk in _chunks(keys):
            rows: list[dict[str, Any]] = [
                {"owner": who, "trace_id": key, "touched": now, "version": 1,
                 "rejected": arrivals[key].reject, "stored": []}
                for key in chunk
            ]  # fmt: skip
            found |= {row.trace_id: _Row(row.id, row.trace_id) for row in c.execute(insert, rows)}
        older = [key for key in keys if key not in found]  # the rows made before: locked
        for chunk in _chunks(older):
            for row in c.execute(_LOCK, {"who": who, "keys": list(chunk)}).all():
                expired = row.touched <= deadline
                rejected = None if expired else row.rejected
                found[row.trace_id] = _Row(row.id, row.trace_id, row.version, rejected, expired)
        _drop_items(c, [row.id for row in found.values() if row.expired])
        taken = _add_items(c, arrivals, found, now=now, max_items=max_items)
        # Last, so that no lock taken here is waited on while this request waits for one:
        # the traces untouched for the age bound, then past the count bound the oldest
        # (only a new trace can take the buffer past it), neither waiting (SKIP LOCKED).
        _delete_traces(c, c.scalars(_STALE, {"deadline": deadline}).all())
        fresh = any(row.version == 0 for row in found.values())
        evicted = _evict(c, max_traces) if fresh else set()
        return {key: pending for key, pending in taken.items() if pending.token[0] not in evicted}


_Held = dict[int, tuple[dict[str, str | None], dict[str, str | None]]]


def _held(c: Connection, refs: Sequence[int]) -> _Held:
    """Each trace's items, in arrival order: (spans, log records), key -> payload."""
    held: _Held = {ref: ({}, {}) for ref in refs}
    for chunk in _chunks(refs):
        for ref, kind, key, payload in c.execute(_HELD, {"refs": list(chunk)}).all():
            held[ref][0 if kind == _SPAN else 1][key] = payload
    return held


def _add_items(
    c: Connection,
    arrivals: Mapping[str, TraceArrivals],
    found: Mapping[str, _Row],
    *,
    now: float,
    max_items: int,
) -> dict[str, PendingTrace]:
    """Insert the new items (within the bounds), replace resent spans, touch the traces."""
    # What the traces that earlier requests made hold (read once: the rows are locked, so
    # the items inserted below follow them in id order, as a second read would give).
    older = [
        row.id
        for row in found.values()
        if row.version > 0 and row.rejected is None and not row.expired
    ]
    held = _held(c, older)
    inserts: list[dict[str, Any]] = []
    replaced: list[dict[str, Any]] = []
    touches: list[dict[str, Any]] = []
    resets: list[dict[str, Any]] = []
    taken: dict[str, PendingTrace] = {}
    for key, came in arrivals.items():
        row = found[key]
        reject = row.rejected or came.reject
        spans, logs = held.get(row.id, ({}, {}))
        if reject is None:
            for span_id, payload in came.spans.items():
                if span_id in spans:
                    replaced.append({"ref": row.id, "k": span_id, "p": payload})
                elif len(spans) >= max_items:
                    continue
                else:
                    inserts.append(_item(row.id, _SPAN, span_id, payload))
                spans[span_id] = None  # the request's own payload
            for log_key, payload in came.logs.items():
                if log_key not in logs and len(logs) < max_items:
                    inserts.append(_item(row.id, _LOG, log_key, payload))
                    logs[log_key] = None
        if row.version > 0:  # a new row was written touched, with its rejection
            touch = {"ref": row.id, "t": now, "v": row.version + 1, "r": reject}
            (resets if row.expired else touches).append(touch)
        taken[key] = PendingTrace(
            (row.id, row.version + 1),
            row.rejected,
            list(spans.items()) if reject is None else [],
            list(logs.items()) if reject is None and spans else [],
        )
    if inserts:
        c.execute(_ADD_ITEMS, inserts)
    if replaced:
        c.execute(_REPLACE_SPAN, replaced)
    if touches:
        c.execute(_TOUCH, touches)
    if resets:  # its earlier runs stay stored, as those of a trace that left the buffer
        c.execute(_RESET, resets)
    return taken


def _item(ref: int, kind: str, key: str, payload: str) -> dict[str, Any]:
    return {"trace_ref": ref, "kind": kind, "item_key": key, "payload": payload}


def _evict(c: Connection, max_traces: int) -> set[int]:
    """Drop the least recently touched traces past ``max_traces``; their row ids."""
    count = c.scalar(_COUNT) or 0
    if count <= max_traces:
        return set()
    oldest = c.scalars(_OLDEST, {"n": count - max_traces}).all()
    _delete_traces(c, oldest)
    return set(oldest)


def mark_rejected(store: Store, trace_id: str, reason: str, *, owner: str | None) -> None:
    """Reject a buffered trace from now on: it could not be imported (``reason``).

    Raises:
        StoreUnavailable: The database refused the write.
    """
    with store.guard("reject a buffered trace"), store.engine.begin() as c:
        c.execute(
            update(_TRACES)
            .where(_TRACES.c.owner == _owner(owner), _TRACES.c.trace_id == trace_id)
            .values(rejected=reason)
        )


def keep_if_current(
    store: Store,
    runs: Mapping[str, tuple[tuple[int, int], Sequence[str]]],
    save: Callable[[list[str], set[str]], None],
    *,
    owner: str | None,
) -> None:
    """Store the runs of the traces no later request touched, replacing their earlier ones.

    Args:
        store: The store.
        runs: Trace id -> (its :attr:`PendingTrace.token`, the ids of the runs it gave).
        save: Writes the runs: called once, with the traces still current (in the order
            of ``runs``) and the ids of the runs they gave before and no longer give,
            unless no trace is current. Its write is the caller's; its exceptions pass.
        owner: The key the traces are buffered under.

    A trace touched by a later request is left to that request, which holds more of it.

    Raises:
        StoreUnavailable: The database refused the write.
    """
    if not runs:
        return
    action = "store the runs of buffered traces"
    if store.engine.dialect.name != "sqlite":
        # The rows stay locked while ``save`` writes, so no other process moves them on.
        with store.guard(action), store.engine.begin() as c:
            rows = _tokens(c, _owner(owner), sorted(runs), lock=True)
            current, superseded = _current(runs, rows)
            if current:
                save(current, superseded)
                _record_stored(c, runs, rows, current)
        return
    # SQLite: ``save`` writes on another connection, which a held write lock would block;
    # one process serves a SQLite store and nothing runs between the check and the write.
    with store.guard(action), store.engine.connect() as c:
        rows = _tokens(c, _owner(owner), sorted(runs), lock=False)
    current, superseded = _current(runs, rows)
    if not current:
        return
    save(current, superseded)
    with store.guard(action), store.engine.begin() as c:
        _record_stored(c, runs, rows, current)


def _tokens(c: Connection, who: str, keys: Sequence[str], *, lock: bool) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    for chunk in _chunks(keys):
        found = c.execute(_TOKENS_LOCKED if lock else _TOKENS, {"who": who, "keys": list(chunk)})
        rows |= {row.trace_id: row for row in found.all()}
    return rows


def _current(
    runs: Mapping[str, tuple[tuple[int, int], Sequence[str]]], rows: Mapping[str, Any]
) -> tuple[list[str], set[str]]:
    """The traces still as their import saw them, and the runs they no longer give."""
    current = [
        key
        for key, (token, _) in runs.items()
        if key in rows and token == (rows[key].id, rows[key].version)
    ]
    superseded: set[str] = set()
    for key in current:
        superseded |= set(rows[key].stored or ()) - set(runs[key][1])
    return current, superseded


def _record_stored(
    c: Connection,
    runs: Mapping[str, tuple[tuple[int, int], Sequence[str]]],
    rows: Mapping[str, Any],
    current: Sequence[str],
) -> None:
    stored = [{"ref": rows[key].id, "ids": list(runs[key][1])} for key in current]
    c.execute(_RECORD_STORED, stored)


def count_pending_traces(store: Store) -> int:
    """How many traces the buffer holds now (across keys)."""
    with store.guard("count buffered traces"), store.engine.connect() as c:
        return c.scalar(_COUNT) or 0
