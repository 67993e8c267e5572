"""Reading and writing the trust loop's records through a :class:`~arbiter.store.Store`.

Events, their notes, freezes, votes and deliveries are appended; the breaker's memory is
one row per agent, replaced. Reads take a ``viewer``: an owner id sees what concerns
its own agents, None sees everything. The evidence of trust is read from the stored
runs' tables (one row per run, the named scores' verdicts beside it).
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, Table, and_, bindparam, func, select
from sqlalchemy.exc import IntegrityError

from arbiter.contract.trust import (
    BreakerMemory,
    EventNote,
    Freeze,
    RunEvidence,
    Severity,
    TrustEvent,
    TrustEventKind,
    TrustState,
    Vote,
    VoteValue,
    WebhookDelivery,
)
from arbiter.errors import StoreError
from arbiter.store.ownership_models import RecordOwnerRow
from arbiter.store.repository import Store
from arbiter.store.trajectory_models import TrajectoryRow, TrajectoryScoreRow
from arbiter.store.trust_models import (
    BreakerStateRow,
    FreezeRow,
    TrustEventNoteRow,
    TrustEventRow,
    VoteRow,
    WebhookDeliveryRow,
)
from arbiter.store.trust_summary import AgentSummary, ensure_summaries, summary_in

__all__ = [
    "AgentKey",
    "add_event_note",
    "add_freeze",
    "add_vote",
    "agent_window",
    "append_event",
    "backtest_rows",
    "breaker_inputs",
    "count_unacked",
    "get_event",
    "latest_freeze",
    "list_deliveries",
    "list_events",
    "list_freezes",
    "list_votes",
    "load_breaker",
    "owner_key",
    "record_delivery",
    "save_breaker",
    "scorer_facts",
    "standing_freezes",
    "trust_evidence",
    "window_evidence",
]

AgentKey = tuple[str | None, str]
"""An agent as trust sees it: (owner, name)."""

_EVENTS: Table = TrustEventRow.__table__  # type: ignore[assignment]
_OWNED_RUN = "trajectory"


def owner_key(owner: str | None) -> str:
    """The stored form of an owner: its id, or the empty string for nobody."""
    return owner or ""


def _owner(key: str) -> str | None:
    return key or None


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _notes(store: Store, ids: Collection[int]) -> dict[tuple[int, str], EventNote]:
    if not ids:
        return {}
    query = select(TrustEventNoteRow).where(TrustEventNoteRow.event_id.in_(list(ids)))
    with store.guard("read trust event notes"), store.session() as session:
        rows = session.scalars(query).all()
    return {
        (r.event_id, r.action): EventNote(by=r.by, note=r.note, at=_aware(r.created_at))
        for r in rows
    }


def _event(row: TrustEventRow, notes: Mapping[tuple[int, str], EventNote]) -> TrustEvent:
    return TrustEvent(
        id=row.id,
        created_at=_aware(row.created_at),
        kind=row.kind,
        severity=row.severity,
        agent=row.agent,
        owner=_owner(row.owner_key),
        record_kind=row.record_kind,
        record_id=row.record_id,
        message=row.message,
        details=dict(row.details or {}),
        acked=notes.get((row.id, "ack")),
        resolved=notes.get((row.id, "resolve")),
    )


def append_event(
    store: Store,
    *,
    kind: TrustEventKind,
    severity: Severity,
    agent: str,
    owner: str | None,
    message: str,
    record_kind: str | None = None,
    record_id: str | None = None,
    details: Mapping[str, Any] | None = None,
    now: datetime | None = None,
) -> TrustEvent:
    """Append one event and return it as stored."""
    row = TrustEventRow(
        created_at=now or datetime.now(UTC),
        kind=kind,
        severity=severity,
        owner_key=owner_key(owner),
        agent=agent,
        record_kind=record_kind,
        record_id=record_id,
        message=message,
        details=dict(details or {}),
    )
    with store.guard("record a trust event"), store.session() as session, session.begin():
        session.add(row)
        session.flush()
        event = _event(row, {})
    return event


def _visible(viewer: str | None) -> ColumnElement[bool] | None:
    return None if viewer is None else TrustEventRow.owner_key == owner_key(viewer)


def list_events(
    store: Store,
    *,
    viewer: str | None = None,
    agent: str | None = None,
    kind: str | None = None,
    unacked: bool = False,
    before: int | None = None,
    limit: int = 50,
) -> list[TrustEvent]:
    """Events newest first; ``before`` an event id continues a listing after it."""
    conditions = [
        c
        for c in (
            _visible(viewer),
            None if agent is None else TrustEventRow.agent == agent,
            None if kind is None else TrustEventRow.kind == kind,
            None if before is None else TrustEventRow.id < before,
        )
        if c is not None
    ]
    if unacked:
        acked = select(TrustEventNoteRow.event_id).where(TrustEventNoteRow.action == "ack")
        conditions.append(TrustEventRow.id.not_in(acked))
    query = select(TrustEventRow).where(*conditions).order_by(TrustEventRow.id.desc()).limit(limit)
    with store.guard("list trust events"), store.session() as session:
        rows = list(session.scalars(query).all())
        session.expunge_all()
    notes = _notes(store, [r.id for r in rows])
    return [_event(r, notes) for r in rows]


def count_unacked(store: Store, *, viewer: str | None = None) -> int:
    """Events nobody has acknowledged yet."""
    acked = select(TrustEventNoteRow.event_id).where(TrustEventNoteRow.action == "ack")
    conditions: list[ColumnElement[bool]] = [TrustEventRow.id.not_in(acked)]
    if (visible := _visible(viewer)) is not None:
        conditions.append(visible)
    query = select(func.count()).select_from(TrustEventRow).where(*conditions)
    with store.guard("count trust events"), store.session() as session:
        return int(session.scalar(query) or 0)


def get_event(store: Store, event_id: int, *, viewer: str | None = None) -> TrustEvent | None:
    """One event, if ``viewer`` may see it."""
    query = select(TrustEventRow).where(
        TrustEventRow.id == event_id, *[c for c in (_visible(viewer),) if c is not None]
    )
    with store.guard("read a trust event"), store.session() as session:
        row = session.scalar(query)
        if row is not None:
            session.expunge(row)
    return None if row is None else _event(row, _notes(store, [row.id]))


def add_event_note(
    store: Store,
    event_id: int,
    action: str,
    *,
    by: str,
    note: str = "",
    viewer: str | None = None,
    now: datetime | None = None,
) -> TrustEvent:
    """Acknowledge (``ack``) or resolve (``resolve``) an event, once each.

    Raises:
        StoreError: No such event ``viewer`` may see, or it already has that note.
    """
    if get_event(store, event_id, viewer=viewer) is None:
        raise StoreError(f"no trust event {event_id}")
    row = TrustEventNoteRow(
        event_id=event_id, action=action, by=by, note=note, created_at=now or datetime.now(UTC)
    )
    word = "acknowledged" if action == "ack" else "resolved"
    with store.guard("note a trust event"):
        try:
            with store.session() as session, session.begin():
                session.add(row)
        except IntegrityError:
            raise StoreError(f"trust event {event_id} is already {word}") from None
    found = get_event(store, event_id, viewer=viewer)
    assert found is not None
    return found


def load_breaker(store: Store, owner: str | None, agent: str) -> BreakerMemory:
    """What the breaker remembers of an agent (nothing yet: a fresh memory)."""
    with store.guard("read the breaker's memory"), store.engine.connect() as connection:
        return _breaker_in(connection, owner, agent)


def _breaker_in(connection: Connection, owner: str | None, agent: str) -> BreakerMemory:
    values = {"owner_key": owner_key(owner), "agent": agent}
    row = connection.execute(_breaker_query(), values).first()
    if row is None:
        return BreakerMemory()
    return BreakerMemory(in_at_risk=bool(row[0]), trips=int(row[1]))


def breaker_inputs(
    store: Store, owner: str | None, agent: str
) -> tuple[AgentSummary | None, BreakerMemory]:
    """The agent's trust summary and what the breaker remembers of it, read on one
    connection (the breaker's reads on the ingest path)."""
    ensure_summaries(store)
    with store.guard("read the breaker's inputs"), store.engine.connect() as connection:
        summary = summary_in(connection, agent=agent, owner=owner)
        return summary, _breaker_in(connection, owner, agent)


def save_breaker(
    store: Store,
    owner: str | None,
    agent: str,
    memory: BreakerMemory,
    state: TrustState,
    *,
    now: datetime | None = None,
) -> None:
    """Replace what the breaker remembers of an agent."""
    with store.guard("keep the breaker's memory"), store.session() as session, session.begin():
        row = session.get(BreakerStateRow, (owner_key(owner), agent))
        if row is None:
            row = BreakerStateRow(owner_key=owner_key(owner), agent=agent)
            session.add(row)
        row.in_at_risk, row.trips, row.state = memory.in_at_risk, memory.trips, state
        row.updated_at = now or datetime.now(UTC)


def _freeze(row: FreezeRow) -> Freeze:
    return Freeze(
        agent=row.agent,
        owner=_owner(row.owner_key),
        frozen=row.frozen,
        by=row.by,
        reason=row.reason,
        at=_aware(row.created_at),
    )


def add_freeze(store: Store, freeze: Freeze) -> None:
    """Append a freeze or an unfreeze."""
    row = FreezeRow(
        owner_key=owner_key(freeze.owner),
        agent=freeze.agent,
        frozen=freeze.frozen,
        by=freeze.by,
        reason=freeze.reason,
        created_at=freeze.at,
    )
    with store.guard("record a freeze"), store.session() as session, session.begin():
        session.add(row)


def latest_freeze(store: Store, owner: str | None, agent: str) -> Freeze | None:
    """The agent's latest freeze or unfreeze (its standing), if any."""
    query = (
        select(FreezeRow)
        .where(FreezeRow.owner_key == owner_key(owner), FreezeRow.agent == agent)
        .order_by(FreezeRow.id.desc())
        .limit(1)
    )
    with store.guard("read a freeze"), store.session() as session:
        row = session.scalar(query)
        return None if row is None else _freeze(row)


def standing_freezes(store: Store) -> dict[AgentKey, Freeze]:
    """Every agent's latest freeze or unfreeze, by (owner, agent): one read for a fleet."""
    query = select(FreezeRow).order_by(FreezeRow.id)
    with store.guard("read freezes"), store.session() as session:
        return {(_owner(r.owner_key), r.agent): _freeze(r) for r in session.scalars(query).all()}


def list_freezes(store: Store, owner: str | None, agent: str) -> list[Freeze]:
    """An agent's freezes and unfreezes, oldest first."""
    query = (
        select(FreezeRow)
        .where(FreezeRow.owner_key == owner_key(owner), FreezeRow.agent == agent)
        .order_by(FreezeRow.id)
    )
    with store.guard("read freezes"), store.session() as session:
        return [_freeze(r) for r in session.scalars(query).all()]


def add_vote(
    store: Store,
    *,
    run_id: str,
    agent: str,
    owner: str | None,
    vote: VoteValue,
    reason: str,
    verdict_seen: bool | None,
    now: datetime | None = None,
) -> Vote:
    """Append a vote and return it."""
    row = VoteRow(
        owner_key=owner_key(owner),
        run_id=run_id,
        agent=agent,
        vote=vote,
        reason=reason,
        verdict_seen=verdict_seen,
        created_at=now or datetime.now(UTC),
    )
    with store.guard("record a vote"), store.session() as session, session.begin():
        session.add(row)
        session.flush()
        return _vote(row)


def _vote(row: VoteRow) -> Vote:
    return Vote(
        id=row.id,
        run_id=row.run_id,
        agent=row.agent,
        owner=_owner(row.owner_key),
        vote=row.vote,
        reason=row.reason,
        verdict_seen=row.verdict_seen,
        created_at=_aware(row.created_at),
    )


def list_votes(store: Store, *, viewer: str | None = None, agent: str | None = None) -> list[Vote]:
    """Votes, oldest first."""
    conditions = []
    if viewer is not None:
        conditions.append(VoteRow.owner_key == owner_key(viewer))
    if agent is not None:
        conditions.append(VoteRow.agent == agent)
    query = select(VoteRow).where(*conditions).order_by(VoteRow.id)
    with store.guard("read votes"), store.session() as session:
        return [_vote(r) for r in session.scalars(query).all()]


def record_delivery(store: Store, delivery: WebhookDelivery) -> None:
    """Append one webhook delivery."""
    row = WebhookDeliveryRow(**delivery.model_dump())
    with store.guard("record a webhook delivery"), store.session() as session, session.begin():
        session.add(row)


def list_deliveries(store: Store, event_id: int | None = None) -> list[WebhookDelivery]:
    """Webhook deliveries (of one event), oldest first."""
    query = select(WebhookDeliveryRow).order_by(WebhookDeliveryRow.id)
    if event_id is not None:
        query = query.where(WebhookDeliveryRow.event_id == event_id)
    with store.guard("read webhook deliveries"), store.session() as session:
        return [
            WebhookDelivery(
                event_id=r.event_id,
                url=r.url,
                delivered=r.delivered,
                attempts=r.attempts,
                error=r.error,
                created_at=_aware(r.created_at),
            )
            for r in session.scalars(query).all()
        ]


def trust_evidence(
    store: Store,
    *,
    names: Collection[str],
    viewer: str | None = None,
    agent: str | None = None,
    owner: str | bool | None = False,
    since: datetime | None = None,
    window: int | None = None,
    count_abstained: bool = True,
) -> dict[AgentKey, list[RunEvidence]]:
    """Stored runs' evidence, grouped by (owner, agent).

    Args:
        store: The store.
        names: The scorers whose verdicts each run's evidence carries.
        viewer: Only runs this owner owns; None: all runs.
        agent: Only this agent's runs.
        owner: Only runs of this owner (None: runs nobody owns); False: any owner.
        since: Only runs stored at or after this time.
        window: Only the newest this many evaluated runs of each agent (and owner) are
            read; the runs left out as abstentions are still counted (as evidence
            without a verdict).
        count_abstained: With ``window``, also count the abstentions (the breaker,
            whose decision does not depend on them, skips it).
    """
    owners = RecordOwnerRow.__table__.alias("owners")
    runs: Table = TrajectoryRow.__table__  # type: ignore[assignment]
    scores: Table = TrajectoryScoreRow.__table__  # type: ignore[assignment]
    joined = runs.outerjoin(
        owners, and_(owners.c.kind == _OWNED_RUN, owners.c.record_id == runs.c.id)
    )
    conditions: list[ColumnElement[bool]] = []
    if viewer is not None:
        conditions.append(owners.c.owner == viewer)
    if owner is not False:
        conditions.append(owners.c.owner.is_(None) if owner is None else owners.c.owner == owner)
    if agent is not None:
        conditions.append(runs.c.agent == agent)
    if since is not None:
        conditions.append(runs.c.created_at >= since)
    columns = (
        runs.c.seq,
        runs.c.id,
        runs.c.agent,
        runs.c.created_at,
        runs.c.passed,
        owners.c.owner,
    )
    abstained: list[tuple[str | None, str, int]] = []
    if window is None:
        query: Any = select(*columns).select_from(joined).where(*conditions)
        chosen = None
    elif agent is not None and owner is not False:
        # One agent of one owner (the breaker on ingest): its newest runs by index.
        decided = [*conditions, runs.c.passed.is_not(None)]
        query = (
            select(*columns)
            .select_from(joined)
            .where(*decided)
            .order_by(runs.c.seq.desc())
            .limit(window)
        )
        chosen = (
            select(runs.c.seq)
            .select_from(joined)
            .where(*decided)
            .order_by(runs.c.seq.desc())
            .limit(window)
        )
    else:
        ranked = (
            select(
                *columns,
                func.row_number()
                .over(partition_by=(runs.c.agent, owners.c.owner), order_by=runs.c.seq.desc())
                .label("rank"),
            )
            .select_from(joined)
            .where(*conditions, runs.c.passed.is_not(None))
            .subquery()
        )
        chosen = select(ranked.c.seq).where(ranked.c.rank <= window)
        query = select(
            ranked.c.seq,
            ranked.c.id,
            ranked.c.agent,
            ranked.c.created_at,
            ranked.c.passed,
            ranked.c.owner,
        ).where(ranked.c.rank <= window)
    dims: dict[int, list[tuple[str, bool | None]]] = defaultdict(list)
    with store.guard("read the evidence of trust"), store.session() as session:
        rows = session.execute(query).all()
        if window is not None and count_abstained:
            counted = (
                select(owners.c.owner, runs.c.agent, func.count())
                .select_from(joined)
                .where(*conditions, runs.c.passed.is_(None))
                .group_by(owners.c.owner, runs.c.agent)
            )
            abstained = [(o, a, int(n)) for o, a, n in session.execute(counted)]
        wanted = list(names)
        if wanted and rows:
            score_query = select(scores.c.trajectory_seq, scores.c.name, scores.c.passed).where(
                scores.c.name.in_(wanted)
            )
            if chosen is not None:
                score_query = score_query.where(scores.c.trajectory_seq.in_(chosen))
            if agent is not None:
                score_query = score_query.where(scores.c.agent == agent)
            for seq, name, passed in session.execute(score_query):
                dims[seq].append((name, passed))
    grouped: dict[AgentKey, list[RunEvidence]] = defaultdict(list)
    for seq, run_id, name, at, passed, run_owner in rows:
        moment = at if at.tzinfo is not None else at.replace(tzinfo=UTC)
        grouped[(run_owner, name)].append(
            RunEvidence(run_id, moment, passed, tuple(dims.get(seq, ())))
        )
    for run_owner, name, count in abstained:
        grouped[(run_owner, name)].extend(
            RunEvidence(f"abstained-{i}", START_OF_TIME, None) for i in range(count)
        )
    return dict(grouped)


@functools.cache
def _window_query(nobody: bool) -> Any:
    """The newest evaluated runs of one agent of one owner (``nobody``: of no owner), each
    beside the named scores' verdicts (one row per score, or one without); built once,
    bound on each call."""
    owners = RecordOwnerRow.__table__.alias("owners")
    runs: Table = TrajectoryRow.__table__  # type: ignore[assignment]
    scores: Table = TrajectoryScoreRow.__table__  # type: ignore[assignment]
    joined = runs.outerjoin(
        owners, and_(owners.c.kind == _OWNED_RUN, owners.c.record_id == runs.c.id)
    )
    newest = (
        select(runs.c.seq, runs.c.id, runs.c.created_at, runs.c.passed)
        .select_from(joined)
        .where(
            runs.c.agent == bindparam("agent"),
            owners.c.owner.is_(None) if nobody else owners.c.owner == bindparam("owner"),
            runs.c.passed.is_not(None),
        )
        .order_by(runs.c.seq.desc())
        .limit(bindparam("newest"))
        .subquery("newest")
    )
    return select(
        newest.c.seq,
        newest.c.id,
        newest.c.created_at,
        newest.c.passed,
        scores.c.name,
        scores.c.passed,
    ).select_from(
        newest.outerjoin(
            scores,
            and_(
                scores.c.trajectory_seq == newest.c.seq,
                scores.c.name.in_(bindparam("names", expanding=True)),
            ),
        )
    )


WindowRow = tuple[int, str, datetime, bool, str | None, bool | None]
"""One run of a window beside one of its named scores: seq, id, time (as stored: naive
on SQLite), verdict, and the score's name and verdict (None, None: no named score)."""


def agent_window(
    store: Store, *, agent: str, owner: str | None, names: Collection[str], size: int
) -> list[WindowRow]:
    """One agent's (of one owner) newest ``size`` evaluated runs, each beside the verdicts
    of its scorers ``names``: the runs :func:`trust_evidence` gives for one agent with a
    window (abstentions not counted), read by one prepared statement (the breaker's read
    on the ingest path)."""
    values: dict[str, object] = {"agent": agent, "newest": size, "names": list(names) or [""]}
    if owner is not None:
        values["owner"] = owner
    with store.guard("read the evidence of trust"), store.engine.connect() as connection:
        found = connection.execute(_window_query(owner is None), values)
        return [tuple(row) for row in found]


def window_evidence(rows: Iterable[WindowRow]) -> list[RunEvidence]:
    """The rows of :func:`agent_window` as evidence, one per run."""
    runs: dict[int, tuple[str, datetime, bool]] = {}
    dims: dict[int, list[tuple[str, bool | None]]] = defaultdict(list)
    for seq, run_id, at, passed, name, verdict in rows:
        runs[seq] = (run_id, _aware(at), passed)
        if name is not None:
            dims[seq].append((name, verdict))
    return [
        RunEvidence(run_id, at, passed, tuple(dims.get(seq, ())))
        for seq, (run_id, at, passed) in runs.items()
    ]


@functools.cache
def _breaker_query() -> Any:
    table: Table = BreakerStateRow.__table__  # type: ignore[assignment]
    return select(table.c.in_at_risk, table.c.trips).where(
        table.c.owner_key == bindparam("owner_key"), table.c.agent == bindparam("agent")
    )


START_OF_TIME = datetime(1970, 1, 1, tzinfo=UTC)
"""The time given to abstentions counted but not read (they carry no weight)."""


def backtest_rows(
    store: Store,
    *,
    viewer: str | None = None,
    agent: str | None = None,
    since: datetime | None = None,
    limit: int = 100_000,
) -> tuple[
    list[tuple[int, str, str, str | None, datetime, bool | None, str | None]],
    dict[int, list[tuple[str, bool | None, str | None, float | None]]],
]:
    """The newest ``limit`` runs (seq, id, agent, owner, time, verdict, band) and each
    run's scores (name, verdict, band, value), for a backtest."""
    owners = RecordOwnerRow.__table__.alias("owners")
    runs: Table = TrajectoryRow.__table__  # type: ignore[assignment]
    scores: Table = TrajectoryScoreRow.__table__  # type: ignore[assignment]
    query = (
        select(
            runs.c.seq,
            runs.c.id,
            runs.c.agent,
            owners.c.owner,
            runs.c.created_at,
            runs.c.passed,
            runs.c.band,
        )
        .select_from(
            runs.outerjoin(
                owners, and_(owners.c.kind == _OWNED_RUN, owners.c.record_id == runs.c.id)
            )
        )
        .order_by(runs.c.seq.desc())
        .limit(limit)
    )
    if viewer is not None:
        query = query.where(owners.c.owner == viewer)
    if agent is not None:
        query = query.where(runs.c.agent == agent)
    if since is not None:
        query = query.where(runs.c.created_at >= since)
    found: dict[int, list[tuple[str, bool | None, str | None, float | None]]] = defaultdict(list)
    with store.guard("read runs for a backtest"), store.session() as session:
        rows = [
            (seq, rid, name, owner, _aware(at), passed, band)
            for seq, rid, name, owner, at, passed, band in session.execute(query)
        ]
        if rows:
            low = rows[-1][0]
            score_query = select(
                scores.c.trajectory_seq,
                scores.c.name,
                scores.c.passed,
                scores.c.band,
                scores.c.value,
            ).where(scores.c.trajectory_seq >= low)
            if agent is not None:
                score_query = score_query.where(scores.c.agent == agent)
            wanted = {r[0] for r in rows}
            for seq, name, passed, band, value in session.execute(score_query):
                if seq in wanted:
                    found[seq].append((name, passed, band, value))
    return rows, dict(found)


def scorer_facts(store: Store, names: Collection[str]) -> dict[str, tuple[str | None, bool]]:
    """Per scorer name, its metric key (for a threshold-bearing scorer) and whether a
    model gave it, read from one stored score of each."""
    scores: Table = TrajectoryScoreRow.__table__  # type: ignore[assignment]
    runs: Table = TrajectoryRow.__table__  # type: ignore[assignment]
    facts: dict[str, tuple[str | None, bool]] = {}
    with store.guard("read scorer facts"), store.session() as session:
        for name in names:
            document = session.scalar(
                select(runs.c.record)
                .join(scores, scores.c.trajectory_seq == runs.c.seq)
                .where(scores.c.name == name)
                .order_by(runs.c.seq.desc())
                .limit(1)
            )
            key: str | None = None
            judged = False
            for score in (document or {}).get("scores", []):
                if isinstance(score, dict) and score.get("name") == name:
                    metadata = score.get("metadata") or {}
                    found = metadata.get("threshold_key") if isinstance(metadata, dict) else None
                    key = found if isinstance(found, str) else None
                    judged = score.get("model") is not None
                    break
            facts[name] = (key, judged)
    return facts
