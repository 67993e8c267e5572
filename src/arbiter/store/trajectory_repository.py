"""Writing and reading stored agent runs through a :class:`~arbiter.store.Store`.

A run is saved with its score set in one transaction (:func:`save_trajectories`);
saving a run under an id that exists replaces it, so a trace whose spans arrive in
several exports is re-scored as it grows without being counted twice. Every read takes
a ``viewer``: an owner id sees the runs it owns (see
:mod:`~arbiter.store.ownership_repository`), None sees all of them.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError
from sqlalchemy import ColumnElement, Table, and_, case, delete, func, select
from sqlalchemy.orm import Session

from arbiter.contract import StoredTrajectory
from arbiter.errors import StoreError
from arbiter.store.ownership_models import RecordOwnerRow
from arbiter.store.ownership_repository import owned_ids
from arbiter.store.repository import Store
from arbiter.store.trajectory_models import TrajectoryRow, TrajectoryScoreRow
from arbiter.store.trust_summary import RunFacts, ensure_summaries, micros_of, update_summaries
from arbiter.store.types import storable
from arbiter.validation import describe_validation_error

__all__ = [
    "KIND",
    "AgentTotals",
    "ScoreTally",
    "agent_totals",
    "get_trajectory",
    "list_trajectories",
    "recent_outcomes",
    "recent_timeline",
    "save_trajectories",
    "score_tallies",
]

KIND = "trajectory"
"""The ownership kind of a stored run."""

_RUNS: Table = TrajectoryRow.__table__  # type: ignore[assignment]
_SCORES: Table = TrajectoryScoreRow.__table__  # type: ignore[assignment]
_OWNERS: Table = RecordOwnerRow.__table__  # type: ignore[assignment]


@dataclass(frozen=True)
class AgentTotals:
    """How many runs of one agent (of one kind) are stored, and how they fared."""

    agent: str
    """The agent's name."""
    kind: str
    """``trajectory`` or ``flow``."""
    runs: int
    """Runs stored."""
    passed: int
    """Runs whose verdict passed."""
    failed: int
    """Runs whose verdict failed (the rest were not evaluated)."""
    first_at: datetime
    """When the first was stored."""
    last_at: datetime
    """When the latest was stored."""


@dataclass(frozen=True)
class ScoreTally:
    """How often one scorer gave one outcome over an agent's runs."""

    name: str
    """The scorer."""
    passed: bool | None
    """The outcome: pass, fail, or None (abstained or errored)."""
    band: str | None
    """The band, for banded scorers."""
    errored: bool
    """Whether the scorer raised."""
    count: int
    """How many runs got it."""


def _aware(moment: datetime) -> datetime:
    # SQLite hands back naive datetimes for timezone-aware columns; they were written in UTC.
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _visible(viewer: str | None) -> ColumnElement[bool] | None:
    return None if viewer is None else TrajectoryRow.id.in_(owned_ids(KIND, viewer))


def _kind(kind: str | None) -> ColumnElement[bool] | None:
    return None if kind is None else TrajectoryRow.kind == kind


def _only(*conditions: ColumnElement[bool] | None) -> list[ColumnElement[bool]]:
    return [condition for condition in conditions if condition is not None]


def save_trajectories(
    store: Store,
    records: Sequence[StoredTrajectory],
    *,
    owner: str | None = None,
    superseded: Collection[str] = (),
) -> None:
    """Store runs with their score sets in one transaction, replacing any of the same id.

    The same transaction records their owner (a run keeps its first owner) and keeps the
    trust summaries of the agents whose runs it adds or removes
    (:mod:`~arbiter.store.trust_summary`).

    Args:
        store: The store.
        records: The scored runs.
        owner: The key that made them (recorded as their owner); None: nobody owns them.
        superseded: Ids of earlier runs these replace (removed in the same transaction).

    Raises:
        StoreUnavailable: The database refused the write.
    """
    replaced = {record.id for record in records} | set(superseded)
    with store.guard("store agent runs"), store.session() as session, session.begin():
        ensure_summaries(store, session)
        removed = _delete(session, replaced) if replaced else {}
        owners = _owners(session, [record.id for record in records], owner)
        scores: list[dict[str, Any]] = []
        added: dict[tuple[str, str], list[RunFacts]] = defaultdict(list)
        for record in records:
            # Through JSON text, so that NaN and infinities become null (PostgreSQL's
            # JSON rejects NaN).
            document = json.loads(record.model_dump_json())
            row = {
                "id": record.id,
                "schema_version": record.schema_version,
                "created_at": record.created_at,
                "kind": record.kind,
                "agent": record.agent,
                "agent_class": record.agent_class,
                "source_format": record.source_format,
                "trace_id": record.trace_id,
                "trajectory_hash": record.trajectory_hash,
                "status": record.status,
                "passed": record.passed,
                "band": record.band,
                "cost_usd": record.cost_usd,
                "duration_ms": record.duration_ms,
                "record": document,
            }
            number, stored_at = session.execute(
                _RUNS.insert().returning(_RUNS.c.seq, _RUNS.c.created_at), row
            ).one()
            verdicts = [
                {
                    "trajectory_seq": number,
                    "agent": record.agent,
                    "name": score.name,
                    "passed": score.passed if score.error is None else None,
                    "band": score.band,
                    "errored": score.error is not None,
                    "value": score.value if _finite(score.value) else None,
                }
                for score in record.scores
            ]
            scores += verdicts
            added[(owners.get(record.id, ""), storable(record.agent))].append(
                RunFacts(
                    number,
                    micros_of(stored_at),
                    record.passed,
                    tuple((storable(v["name"]), v["passed"]) for v in verdicts),
                )
            )
        if scores:
            # Core, not the ORM's bulk insert: one executemany, not a batch per key set.
            session.execute(_SCORES.insert(), scores)
        update_summaries(session, removed, added)


def _owners(session: Session, ids: Sequence[str], owner: str | None) -> dict[str, str]:
    """The owner key of each run to store: the owner its id already has (a record keeps
    its first owner), else ``owner``, recorded here; runs nobody owns are left out."""
    known: dict[str, str] = {}
    wanted = list(dict.fromkeys(ids))
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        query = select(RecordOwnerRow.record_id, RecordOwnerRow.owner).where(
            RecordOwnerRow.kind == KIND, RecordOwnerRow.record_id.in_(chunk)
        )
        known.update((record_id, found) for record_id, found in session.execute(query))
    if owner is not None:
        now = datetime.now(UTC)
        fresh = [i for i in wanted if i not in known]
        if fresh:
            session.execute(
                _OWNERS.insert(),
                [{"kind": KIND, "record_id": i, "owner": owner, "created_at": now} for i in fresh],
            )
            known.update((i, owner) for i in fresh)
    return known


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def _delete(
    session: Session, ids: Collection[str]
) -> dict[tuple[str, str], list[tuple[int, bool | None]]]:
    """Remove the runs of these ids and their scores (one look-up when none is stored);
    the removed runs (seq, verdict) by (owner key, agent)."""
    found = session.execute(
        select(TrajectoryRow.seq, TrajectoryRow.agent, RecordOwnerRow.owner, TrajectoryRow.passed)
        .outerjoin(
            RecordOwnerRow,
            and_(RecordOwnerRow.kind == KIND, RecordOwnerRow.record_id == TrajectoryRow.id),
        )
        .where(TrajectoryRow.id.in_(ids))
    ).all()
    removed: dict[tuple[str, str], list[tuple[int, bool | None]]] = defaultdict(list)
    for seq, agent, run_owner, passed in found:
        removed[(run_owner or "", agent)].append((seq, passed))
    seqs = [seq for seq, *_rest in found]
    if seqs:
        session.execute(
            delete(TrajectoryScoreRow).where(TrajectoryScoreRow.trajectory_seq.in_(seqs))
        )
        session.execute(delete(TrajectoryRow).where(TrajectoryRow.seq.in_(seqs)))
    return removed


def _record(document: dict[str, Any], run_id: str) -> StoredTrajectory:
    try:
        return StoredTrajectory.model_validate(document)
    except ValidationError as exc:
        reason = describe_validation_error(exc, StoredTrajectory)
        raise StoreError(f"stored agent run {run_id} is invalid: {reason}") from None


def get_trajectory(
    store: Store, run_id: str, *, viewer: str | None = None
) -> StoredTrajectory | None:
    """The stored run of id ``run_id``, or None when there is none ``viewer`` may see.

    Raises:
        StoreError: The stored run no longer validates.
    """
    query = select(TrajectoryRow.record).where(TrajectoryRow.id == run_id, *_only(_visible(viewer)))
    with store.guard("read an agent run"), store.session() as session:
        document = session.scalar(query)
    return None if document is None else _record(document, run_id)


def list_trajectories(
    store: Store,
    *,
    agent: str | None = None,
    kind: str | None = None,
    band: str | None = None,
    viewer: str | None = None,
    offset: int = 0,
    limit: int = 50,
) -> tuple[list[StoredTrajectory], int]:
    """Stored runs, newest first, and how many match in all.

    Args:
        store: The store.
        agent: Only this agent's runs.
        kind: Only runs of this kind (``trajectory`` or ``flow``).
        band: Only runs in this band (``healthy``, ``review``, ``danger``), or
            ``none`` for those not evaluated.
        viewer: Whose runs may be seen; None: all.
        offset: Runs to skip.
        limit: Most runs returned.
    """
    conditions = _only(
        _visible(viewer),
        None if agent is None else TrajectoryRow.agent == agent,
        _kind(kind),
    )
    if band == "none":
        conditions.append(TrajectoryRow.band.is_(None))
    elif band is not None:
        conditions.append(TrajectoryRow.band == band)
    page = (
        select(TrajectoryRow.id, TrajectoryRow.record)
        .where(*conditions)
        .order_by(TrajectoryRow.seq.desc())
        .offset(offset)
        .limit(limit)
    )
    count = select(func.count()).select_from(TrajectoryRow).where(*conditions)
    with store.guard("list agent runs"), store.session() as session:
        rows = session.execute(page).all()
        total = int(session.scalar(count) or 0)
    return [_record(document, run_id) for run_id, document in rows], total


def agent_totals(store: Store, *, viewer: str | None = None) -> list[AgentTotals]:
    """Per agent and kind, its runs and how they fared, in name order."""
    query = (
        select(
            TrajectoryRow.agent,
            TrajectoryRow.kind,
            func.count(),
            func.sum(case((TrajectoryRow.passed.is_(True), 1), else_=0)),
            func.sum(case((TrajectoryRow.passed.is_(False), 1), else_=0)),
            func.min(TrajectoryRow.created_at),
            func.max(TrajectoryRow.created_at),
        )
        .where(*_only(_visible(viewer)))
        .group_by(TrajectoryRow.agent, TrajectoryRow.kind)
        .order_by(TrajectoryRow.agent, TrajectoryRow.kind)
    )
    with store.guard("count agent runs"), store.session() as session:
        rows = session.execute(query).all()
    return [
        AgentTotals(
            agent=agent,
            kind=kind,
            runs=int(runs),
            passed=int(passed or 0),
            failed=int(failed or 0),
            first_at=_aware(first),
            last_at=_aware(last),
        )
        for agent, kind, runs, passed, failed, first, last in rows
    ]


def recent_outcomes(
    store: Store,
    agent: str,
    *,
    kind: str | None = None,
    viewer: str | None = None,
    limit: int = 60,
) -> list[tuple[bool | None, datetime]]:
    """The verdicts of an agent's latest runs and when they were stored, newest first."""
    query = (
        select(TrajectoryRow.passed, TrajectoryRow.created_at)
        .where(TrajectoryRow.agent == agent, *_only(_visible(viewer), _kind(kind)))
        .order_by(TrajectoryRow.seq.desc())
        .limit(limit)
    )
    with store.guard("read an agent's runs"), store.session() as session:
        rows = session.execute(query).all()
    return [(passed, _aware(at)) for passed, at in rows]


def score_tallies(
    store: Store, agent: str, *, kind: str | None = None, viewer: str | None = None
) -> list[ScoreTally]:
    """Per scorer and outcome, how many of an agent's runs got it."""
    query = (
        select(
            TrajectoryScoreRow.name,
            TrajectoryScoreRow.passed,
            TrajectoryScoreRow.band,
            TrajectoryScoreRow.errored,
            func.count(),
        )
        .join(TrajectoryRow, TrajectoryRow.seq == TrajectoryScoreRow.trajectory_seq)
        .where(TrajectoryScoreRow.agent == agent, *_only(_visible(viewer), _kind(kind)))
        .group_by(
            TrajectoryScoreRow.name,
            TrajectoryScoreRow.passed,
            TrajectoryScoreRow.band,
            TrajectoryScoreRow.errored,
        )
        .order_by(TrajectoryScoreRow.name)
    )
    with store.guard("count an agent's scores"), store.session() as session:
        rows = session.execute(query).all()
    return [
        ScoreTally(name=name, passed=passed, band=band, errored=bool(errored), count=int(count))
        for name, passed, band, errored, count in rows
    ]


def recent_timeline(
    store: Store, *, viewer: str | None = None, limit: int = 20_000
) -> list[tuple[str, datetime, bool | None, float | None]]:
    """The newest ``limit`` stored runs of every agent ``viewer`` may see, newest first:
    (agent, when, verdict, cost in USD). Read-only; for charts of the fleet over time."""
    query = (
        select(TrajectoryRow.agent, TrajectoryRow.created_at, TrajectoryRow.passed)
        .add_columns(TrajectoryRow.cost_usd)
        .where(*_only(_visible(viewer)))
        .order_by(TrajectoryRow.seq.desc())
        .limit(limit)
    )
    with store.guard("read the fleet's runs"), store.session() as session:
        rows = session.execute(query).all()
    return [
        (agent, _aware(at), passed, cost if cost is not None and math.isfinite(cost) else None)
        for agent, at, passed, cost in rows
    ]
