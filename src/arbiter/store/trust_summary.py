"""The per-agent summary trust reads in place of every stored run.

One row per agent and owner (:class:`~arbiter.store.trust_models.TrustAgentSummaryRow`):
how many runs it has, how many were evaluated and how many abstained, and its newest
``SUMMARY_RUNS`` evaluated runs (by ``seq``, the order the rows path uses) as packed
columns: time, verdict, and for every scorer name the verdicts it gave. Conduct depends
on the policy (its window, half-life and trust-critical names) and on "now", so the
summary keeps what conduct is computed from, not conduct: the status computed from it
is the status computed from the rows, to the bit, for any policy whose window is at
most ``SUMMARY_RUNS`` (a larger window reads the rows).

It is kept by :func:`~arbiter.store.trajectory_repository.save_trajectories` in the
transaction that stores (and replaces) the runs. A store made before the summaries
existed has none: they are built from its rows on first use (a write or a read), once.
"""

from __future__ import annotations

import functools
import weakref
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Connection, Table, and_, bindparam, func, select, text
from sqlalchemy.orm import Session

from arbiter.store.ownership_models import RecordOwnerRow
from arbiter.store.repository import Store
from arbiter.store.trajectory_models import TrajectoryRow, TrajectoryScoreRow
from arbiter.store.trust_models import TrustAgentSummaryRow, TrustSummaryStateRow

__all__ = [
    "SUMMARY_RUNS",
    "AgentSummary",
    "RunFacts",
    "agent_summaries",
    "agent_summary",
    "build_summaries",
    "ensure_summaries",
    "micros_of",
    "run_ids",
    "summary_in",
    "update_summaries",
]

SUMMARY_RUNS = 1_000
"""The newest evaluated runs each summary keeps: a policy's window up to this size is
read from the summary alone."""

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_OWNED_RUN = "trajectory"
_BUILT = "built"
_RUNS: Table = TrajectoryRow.__table__  # type: ignore[assignment]
_SCORES: Table = TrajectoryScoreRow.__table__  # type: ignore[assignment]
_OWNERS: Table = RecordOwnerRow.__table__  # type: ignore[assignment]
_SUMMARIES: Table = TrustAgentSummaryRow.__table__  # type: ignore[assignment]
_STATE: Table = TrustSummaryStateRow.__table__  # type: ignore[assignment]
_SUMMARY_LOCK = 0x7472757374  # "trust": the advisory lock of the summaries' writers

AgentKey = tuple[str, str]
"""(owner key, agent): the owner's id or the empty string for nobody."""

_BUILT_STORES: weakref.WeakSet[Store] = weakref.WeakSet()
"""Stores seen with their summaries built (the mark is never taken back)."""


def micros_of(moment: datetime) -> int:
    """Microseconds since the epoch of a stored time (naive on SQLite: UTC)."""
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return (aware - _EPOCH) // timedelta(microseconds=1)


@dataclass(frozen=True)
class RunFacts:
    """What the summary keeps of one stored run."""

    seq: int
    micros: int
    passed: bool | None
    verdicts: tuple[tuple[str, bool | None], ...] = ()
    """(scorer name, verdict) of each of its scores (None: abstained or errored)."""


@dataclass
class AgentSummary:
    """One agent's (of one owner) summary: counts and its newest evaluated runs."""

    owner: str | None
    agent: str
    runs: int = 0
    evaluated: int = 0
    abstained: int = 0
    names: list[str] = field(default_factory=list)
    seqs: NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))
    """The kept runs' seqs, ascending (oldest first)."""
    micros: NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))
    passes: NDArray[np.uint8] = field(default_factory=lambda: np.zeros(0, np.uint8))
    dim_decided: NDArray[np.uint32] = field(default_factory=lambda: np.zeros((0, 0), np.uint32))
    """Per kept run (rows) and name (columns), how many of its scores of that name decided."""
    dim_passed: NDArray[np.uint32] = field(default_factory=lambda: np.zeros((0, 0), np.uint32))
    """The same, how many passed."""

    def covers(self, window: int) -> bool:
        """Whether the newest ``window`` evaluated runs are all kept."""
        return len(self.seqs) >= min(window, self.evaluated)

    def columns(
        self, window: int, critical: Collection[str]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """Time (seconds), pass, critical passes and critical verdicts of the newest
        ``window`` evaluated runs, oldest first: what ``columns_of`` gives for them."""
        low = max(0, len(self.seqs) - window)
        wanted = [i for i, name in enumerate(self.names) if name in critical]
        times = self.micros[low:] / 1e6
        passes = self.passes[low:].astype(np.float64)
        decided = self.dim_decided[low:, wanted].sum(axis=1).astype(np.float64)
        passed = self.dim_passed[low:, wanted].sum(axis=1).astype(np.float64)
        return times, passes, passed, decided

    def newest_at(self, window: int) -> datetime | None:
        """The newest time among the newest ``window`` evaluated runs."""
        low = max(0, len(self.seqs) - window)
        if low >= len(self.micros):
            return None
        return _EPOCH + timedelta(microseconds=int(self.micros[low:].max()))

    def window_seqs(self, window: int) -> list[int]:
        """The seqs of the newest ``window`` evaluated runs."""
        return [int(s) for s in self.seqs[max(0, len(self.seqs) - window) :]]


def _owner(key: str) -> str | None:
    return key or None


def _decode(row: Any) -> AgentSummary:
    names = list(row["names"] or [])
    seqs = np.frombuffer(row["seqs"], np.int64)
    shape = (len(seqs), len(names))
    return AgentSummary(
        owner=_owner(row["owner_key"]),
        agent=row["agent"],
        runs=int(row["runs"]),
        evaluated=int(row["evaluated"]),
        abstained=int(row["abstained"]),
        names=names,
        seqs=seqs,
        micros=np.frombuffer(row["micros"], np.int64),
        passes=np.frombuffer(row["passes"], np.uint8),
        dim_decided=np.frombuffer(row["dim_decided"], np.uint32).reshape(shape),
        dim_passed=np.frombuffer(row["dim_passed"], np.uint32).reshape(shape),
    )


def _encode(summary: AgentSummary) -> dict[str, Any]:
    return {
        "owner_key": summary.owner or "",
        "agent": summary.agent,
        "runs": summary.runs,
        "evaluated": summary.evaluated,
        "abstained": summary.abstained,
        "names": list(summary.names),
        "seqs": np.ascontiguousarray(summary.seqs, np.int64).tobytes(),
        "micros": np.ascontiguousarray(summary.micros, np.int64).tobytes(),
        "passes": np.ascontiguousarray(summary.passes, np.uint8).tobytes(),
        "dim_decided": np.ascontiguousarray(summary.dim_decided, np.uint32).tobytes(),
        "dim_passed": np.ascontiguousarray(summary.dim_passed, np.uint32).tobytes(),
    }


def _window_of(summary: AgentSummary, runs: Sequence[RunFacts]) -> None:
    """Set the kept runs of ``summary`` to the evaluated ``runs`` (at most the newest
    ``SUMMARY_RUNS`` by seq), its names to those their scores name."""
    kept = sorted((r for r in runs if r.passed is not None), key=lambda r: r.seq)
    kept = kept[-SUMMARY_RUNS:]
    names = sorted({name for r in kept for name, verdict in r.verdicts if verdict is not None})
    column = {name: i for i, name in enumerate(names)}
    decided = np.zeros((len(kept), len(names)), np.uint32)
    passed = np.zeros((len(kept), len(names)), np.uint32)
    for index, run in enumerate(kept):
        for name, verdict in run.verdicts:
            if verdict is not None:
                decided[index, column[name]] += 1
                if verdict:
                    passed[index, column[name]] += 1
    summary.names = names
    summary.seqs = np.fromiter((r.seq for r in kept), np.int64, len(kept))
    summary.micros = np.fromiter((r.micros for r in kept), np.int64, len(kept))
    summary.passes = np.fromiter((1 if r.passed else 0 for r in kept), np.uint8, len(kept))
    summary.dim_decided, summary.dim_passed = decided, passed


def _merge(summary: AgentSummary, removed: Collection[int], added: Sequence[RunFacts]) -> bool:
    """Drop the kept runs of seqs ``removed`` and keep the evaluated ``added`` (newer
    than every stored run). False when a removal left a gap only the rows can fill
    (the summary then keeps runs it no longer should: the caller reads the rows)."""
    keep = ~np.isin(summary.seqs, np.fromiter(removed, np.int64, len(removed)))
    names = summary.names
    decided, passed = summary.dim_decided[keep], summary.dim_passed[keep]
    seqs, micros, passes = summary.seqs[keep], summary.micros[keep], summary.passes[keep]
    if len(seqs) < len(summary.seqs) and summary.evaluated > len(seqs):
        return False
    fresh = sorted((r for r in added if r.passed is not None), key=lambda r: r.seq)
    if fresh:
        more = sorted({n for r in fresh for n, v in r.verdicts if v is not None} - set(names))
        if more:
            names = [*names, *more]
            pad = np.zeros((len(seqs), len(more)), np.uint32)
            decided, passed = np.hstack([decided, pad]), np.hstack([passed, pad])
        column = {name: i for i, name in enumerate(names)}
        new_decided = np.zeros((len(fresh), len(names)), np.uint32)
        new_passed = np.zeros((len(fresh), len(names)), np.uint32)
        for index, run in enumerate(fresh):
            for name, verdict in run.verdicts:
                if verdict is not None:
                    new_decided[index, column[name]] += 1
                    if verdict:
                        new_passed[index, column[name]] += 1
        count = len(fresh)
        seqs = np.concatenate([seqs, np.fromiter((r.seq for r in fresh), np.int64, count)])
        micros = np.concatenate([micros, np.fromiter((r.micros for r in fresh), np.int64, count)])
        passes = np.concatenate(
            [passes, np.fromiter((1 if r.passed else 0 for r in fresh), np.uint8, count)]
        )
        decided = np.vstack([decided, new_decided])
        passed = np.vstack([passed, new_passed])
        order = np.argsort(seqs, kind="stable")[-SUMMARY_RUNS:]
        seqs, micros, passes = seqs[order], micros[order], passes[order]
        decided, passed = decided[order], passed[order]
    used = decided.sum(axis=0) > 0 if len(names) else np.zeros(0, bool)
    if not used.all():
        names = [name for name, on in zip(names, used.tolist(), strict=True) if on]
        decided, passed = decided[:, used], passed[:, used]
    summary.names, summary.seqs, summary.micros, summary.passes = names, seqs, micros, passes
    summary.dim_decided, summary.dim_passed = decided, passed
    summary.evaluated += len(fresh)
    return True


def _joined() -> Any:
    return _RUNS.outerjoin(
        _OWNERS, and_(_OWNERS.c.kind == _OWNED_RUN, _OWNERS.c.record_id == _RUNS.c.id)
    )


def _read_windows(
    connection: Connection | Session, key: AgentKey | None
) -> dict[AgentKey, list[RunFacts]]:
    """The newest ``SUMMARY_RUNS`` evaluated runs of each agent (of ``key`` only, when
    given) read from the rows, with every score's verdict."""
    owner = func.coalesce(_OWNERS.c.owner, "")
    conditions: list[Any] = [_RUNS.c.passed.is_not(None)]
    if key is not None:
        conditions += [owner == key[0], _RUNS.c.agent == key[1]]
    ranked = (
        select(
            _RUNS.c.seq,
            _RUNS.c.agent,
            owner.label("owner_key"),
            _RUNS.c.created_at,
            _RUNS.c.passed,
            func.row_number()
            .over(partition_by=(_RUNS.c.agent, owner), order_by=_RUNS.c.seq.desc())
            .label("rank"),
        )
        .select_from(_joined())
        .where(*conditions)
        .subquery()
    )
    chosen = select(ranked.c.seq, ranked.c.agent, ranked.c.owner_key).where(
        ranked.c.rank <= SUMMARY_RUNS
    )
    query = select(
        ranked.c.seq, ranked.c.agent, ranked.c.owner_key, ranked.c.created_at, ranked.c.passed
    ).where(ranked.c.rank <= SUMMARY_RUNS)
    verdicts: dict[int, list[tuple[str, bool | None]]] = defaultdict(list)
    rows = connection.execute(query).all()
    if rows:
        scores = select(_SCORES.c.trajectory_seq, _SCORES.c.name, _SCORES.c.passed)
        if key is not None:
            scores = scores.where(
                _SCORES.c.agent == key[1],
                _SCORES.c.trajectory_seq.in_(select(chosen.subquery().c.seq)),
            )
        wanted = {row[0] for row in rows}
        for seq, name, passed in connection.execute(scores):
            if seq in wanted:
                verdicts[seq].append((name, passed))
    found: dict[AgentKey, list[RunFacts]] = defaultdict(list)
    for seq, agent, owner_key, at, passed in rows:
        found[(owner_key, agent)].append(
            RunFacts(seq, micros_of(at), passed, tuple(verdicts.get(seq, ())))
        )
    return found


def _read_counts(
    connection: Connection | Session, key: AgentKey | None
) -> dict[AgentKey, tuple[int, int, int]]:
    owner = func.coalesce(_OWNERS.c.owner, "")
    evaluated = func.count(_RUNS.c.passed)
    query = (
        select(owner, _RUNS.c.agent, func.count(), evaluated)
        .select_from(_joined())
        .group_by(owner, _RUNS.c.agent)
    )
    if key is not None:
        query = query.where(owner == key[0], _RUNS.c.agent == key[1])
    return {(o, a): (int(n), int(e), int(n) - int(e)) for o, a, n, e in connection.execute(query)}


def build_summaries(session: Session) -> int:
    """Build every agent's summary from the stored rows (in the caller's transaction),
    replacing any, and mark the store as summarised. Returns the agents summarised."""
    counts = _read_counts(session, None)
    windows = _read_windows(session, None)
    session.execute(_SUMMARIES.delete())
    rows = []
    for (owner_key, agent), (runs, evaluated, abstained) in counts.items():
        summary = AgentSummary(_owner(owner_key), agent, runs, evaluated, abstained)
        _window_of(summary, windows.get((owner_key, agent), []))
        rows.append(_encode(summary))
    if rows:
        session.execute(_SUMMARIES.insert(), rows)
    session.execute(_STATE.delete().where(_STATE.c.key == _BUILT))
    session.execute(
        _STATE.insert(),
        {"key": _BUILT, "built_at": datetime.now(UTC), "runs": sum(c[0] for c in counts.values())},
    )
    return len(rows)


def _serialise(session: Session) -> None:
    """On PostgreSQL, hold the summaries' advisory lock until the transaction ends.

    Server processes over one store (``serve --workers N``) save runs at once: without
    it two could both build the summaries of a store made before them, or both insert
    the first summary of one agent, and one would fail on the primary key. SQLite
    serialises writers by itself. The lock is taken again by the same transaction at
    no cost."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _SUMMARY_LOCK})


def _is_built(connection: Connection | Session) -> bool:
    return (
        connection.execute(select(_STATE.c.key).where(_STATE.c.key == _BUILT)).first() is not None
    )


def ensure_summaries(store: Store, session: Session | None = None) -> None:
    """Build the summaries once if the store has none yet (a store made before them):
    in ``session``'s transaction when given, else in a transaction of its own."""
    if store in _BUILT_STORES:
        return
    if session is not None:
        _serialise(session)
        if not _is_built(session):
            build_summaries(session)
        _BUILT_STORES.add(store)
        return
    with store.guard("build the trust summaries"), store.session() as own, own.begin():
        _serialise(own)
        if not _is_built(own):
            build_summaries(own)
    _BUILT_STORES.add(store)


def update_summaries(
    session: Session,
    removed: Mapping[AgentKey, Sequence[tuple[int, bool | None]]],
    added: Mapping[AgentKey, Sequence[RunFacts]],
) -> None:
    """Keep the summaries of the agents whose runs were ``removed`` (seq, verdict) and
    ``added`` in the caller's transaction, after the rows were written: counts change
    by what moved, the kept runs by what was dropped and added; an agent whose kept
    runs lost one that older runs must replace is read again from its rows."""
    _serialise(session)
    for key in sorted(set(removed) | set(added)):
        gone, fresh = removed.get(key, ()), added.get(key, ())
        row = (
            session.execute(
                select(_SUMMARIES)
                .where(_SUMMARIES.c.owner_key == key[0], _SUMMARIES.c.agent == key[1])
                .with_for_update()
            )
            .mappings()
            .first()
        )
        exists = row is not None
        summary = _decode(row) if row is not None else AgentSummary(_owner(key[0]), key[1])
        summary.runs -= len(gone)
        summary.evaluated -= sum(1 for _seq, passed in gone if passed is not None)
        summary.abstained -= sum(1 for _seq, passed in gone if passed is None)
        kept = _merge(summary, [seq for seq, _passed in gone], fresh)
        if not kept:
            summary.evaluated += sum(1 for r in fresh if r.passed is not None)
            _window_of(summary, _read_windows(session, key).get(key, []))
        summary.runs += len(fresh)
        summary.abstained += sum(1 for r in fresh if r.passed is None)
        values = _encode(summary)
        if summary.runs <= 0:
            if exists:
                session.execute(_delete_summary(key))
        elif exists:
            session.execute(
                _SUMMARIES.update().where(
                    _SUMMARIES.c.owner_key == key[0], _SUMMARIES.c.agent == key[1]
                ),
                values,
            )
        else:
            session.execute(_SUMMARIES.insert(), values)


def _delete_summary(key: AgentKey) -> Any:
    return _SUMMARIES.delete().where(_SUMMARIES.c.owner_key == key[0], _SUMMARIES.c.agent == key[1])


def agent_summaries(
    store: Store,
    *,
    viewer: str | None = None,
    agent: str | None = None,
    owner: str | bool | None = False,
) -> dict[tuple[str | None, str], AgentSummary]:
    """The summaries of the agents ``viewer`` may see (its own; None: every owner's),
    of the name ``agent`` and the ``owner`` (None: nobody; False: any) when given."""
    ensure_summaries(store)
    query = select(_SUMMARIES)
    if viewer is not None:
        query = query.where(_SUMMARIES.c.owner_key == viewer)
    if owner is not False:
        query = query.where(_SUMMARIES.c.owner_key == (owner or ""))
    if agent is not None:
        query = query.where(_SUMMARIES.c.agent == agent)
    with store.guard("read the trust summaries"), store.engine.connect() as connection:
        rows = connection.execute(query).mappings().all()
    found = (_decode(row) for row in rows)
    return {(s.owner, s.agent): s for s in found if s.runs > 0}


@functools.cache
def _summary_query() -> Any:
    return select(_SUMMARIES).where(
        _SUMMARIES.c.owner_key == bindparam("owner_key"), _SUMMARIES.c.agent == bindparam("agent")
    )


def agent_summary(store: Store, *, agent: str, owner: str | None) -> AgentSummary | None:
    """One agent's (of ``owner``) summary, by one prepared statement (the breaker's read
    on the ingest path); None when it has no stored run."""
    ensure_summaries(store)
    with store.guard("read a trust summary"), store.engine.connect() as connection:
        return summary_in(connection, agent=agent, owner=owner)


def summary_in(connection: Connection, *, agent: str, owner: str | None) -> AgentSummary | None:
    """:func:`agent_summary` on an open connection (the store's summaries built)."""
    values = {"owner_key": owner or "", "agent": agent}
    row = connection.execute(_summary_query(), values).mappings().first()
    if row is None or int(row["runs"]) <= 0:
        return None
    return _decode(row)


def run_ids(store: Store, seqs: Iterable[int]) -> list[str]:
    """The ids of the stored runs of these seqs."""
    wanted = list(seqs)
    if not wanted:
        return []
    with store.guard("read run ids"), store.engine.connect() as connection:
        return [
            str(rid)
            for (rid,) in connection.execute(select(_RUNS.c.id).where(_RUNS.c.seq.in_(wanted)))
        ]
