"""Paged, filtered reads of runs and results, for the server and its pages.

A page is read under filters, with the total the filters match, so a run of 100,000
results opens as fast as one of 100: only the rows of the page are turned into results.
A page of results is read by key, from the nearer end of its group when asked for by
position (:func:`arbiter.store.result_pages.page_results`); filters by scorer test the
scores' JSON in SQL. Ownership narrows a listing through ``record_owners`` (a ``viewer``
of None sees everything).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import ColumnElement, String, and_, func, or_, select, text
from sqlalchemy.orm import Session

from arbiter.contract import Case, RunInfo, Verdict
from arbiter.store.jury_models import CritiqueRow, VerdictRow
from arbiter.store.jury_repository import _outcome
from arbiter.store.models import DatasetRow, ResultRow, RunRow
from arbiter.store.ownership_repository import owned_ids
from arbiter.store.repository import Store

__all__ = [
    "ResultFilter",
    "RunFilter",
    "StoredVerdict",
    "load_verdict",
    "page_runs",
    "page_verdicts",
    "run_headers",
    "scored_clause",
    "utc_run_info",
    "verdict_ids",
]


@dataclass(frozen=True)
class RunFilter:
    """Which runs a listing holds; every filter given must hold."""

    tags: Mapping[str, str] = field(default_factory=dict)
    """Tags the run carries, all of them (``k=v``)."""
    system: str | None = None
    """Text in the system's description (``python:pkg.mod:fn``, ``http:URL``), any case."""
    dataset: str | None = None
    """The dataset's name, exactly."""
    status: str | None = None
    """The run's status (``completed``, ``interrupted``, ...)."""
    viewer: str | None = None
    """Only runs this owner owns; None: every run."""


def _utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def utc_run_info(info: RunInfo) -> RunInfo:
    """``info`` with every time in UTC: SQLite hands back naive datetimes, written in UTC,
    and an answer of the API states its offset (RFC 3339)."""
    segments = [
        s.model_copy(
            update={
                "started_at": _utc(s.started_at),
                "ended_at": None if s.ended_at is None else _utc(s.ended_at),
            }
        )
        for s in info.segments
    ]
    finished = None if info.finished_at is None else _utc(info.finished_at)
    return info.model_copy(
        update={"created_at": _utc(info.created_at), "finished_at": finished, "segments": segments}
    )


def _system_text(system: Mapping[str, object]) -> str:
    target = system.get("target") or system.get("url") or system.get("field") or "?"
    return f"{system.get('kind')}:{target}"


def page_runs(
    store: Store, where: RunFilter, *, offset: int, limit: int
) -> tuple[list[RunInfo], int]:
    """One page of runs under ``where``, newest first, and how many runs match.

    Status is read as :meth:`Store.get_run` reports it (a ``running`` run nobody holds
    is ``interrupted``), so the status filter agrees with what the listing shows.
    """
    query = select(RunRow.id, RunRow.tags, RunRow.system, RunRow.status).order_by(
        RunRow.created_at.desc(), RunRow.id.desc()
    )
    if where.dataset is not None:
        query = query.join(DatasetRow, DatasetRow.content_hash == RunRow.dataset_hash).where(
            DatasetRow.name == where.dataset
        )
    if where.viewer is not None:
        query = query.where(RunRow.id.in_(owned_ids("run", where.viewer)))
    if where.status is not None:
        stored = ["running", "interrupted"] if where.status == "interrupted" else [where.status]
        query = query.where(RunRow.status.in_(stored))
    wanted_tags = dict(where.tags).items()
    needle = where.system.lower() if where.system else None
    with store.guard("list runs"), store.session() as session:
        ids = [
            run_id
            for run_id, tags, system, _ in session.execute(query).all()
            if wanted_tags <= (tags or {}).items()
            and (needle is None or needle in _system_text(system or {}).lower())
        ]
        if where.status is not None:  # the lease decides between running and interrupted
            infos = [utc_run_info(store._info(session, session.get_one(RunRow, i))) for i in ids]
            infos = [i for i in infos if i.status == where.status]
            return infos[offset : offset + limit], len(infos)
        page = [
            utc_run_info(store._info(session, session.get_one(RunRow, i)))
            for i in ids[offset : offset + limit]
        ]
        return page, len(ids)


def run_headers(
    store: Store, *, viewer: str | None, after: str | None, limit: int
) -> list[tuple[str, dict[str, Any]]]:
    """(id, config) of at most ``limit`` runs ``viewer`` may see, newest first, starting
    after the run ``after`` (None: from the newest): a keyset read, as cheap far down the
    list as at its top. A run ``after`` that does not exist reads as the end.
    """
    query = select(RunRow.id, RunRow.config).order_by(RunRow.created_at.desc(), RunRow.id.desc())
    if viewer is not None:
        query = query.where(RunRow.id.in_(owned_ids("run", viewer)))
    with store.guard("list runs"), store.session() as session:
        if after is not None:
            moment = session.scalar(select(RunRow.created_at).where(RunRow.id == after))
            if moment is None:
                return []
            query = query.where(
                or_(
                    RunRow.created_at < moment,
                    and_(RunRow.created_at == moment, RunRow.id < after),
                )
            )
        rows = session.execute(query.limit(limit)).all()
    return [(run_id, config or {}) for run_id, config in rows]


@dataclass(frozen=True)
class ResultFilter:
    """Which results of a run a page holds, and in what order."""

    failing: bool = False
    """Only failed results (a failed call or a failed gating scorer; with ``scorer``,
    those where that scorer failed). An abstention is not a failure."""
    scorer: str | None = None
    """Only results scored by this scorer (its name in the run)."""
    failures_first: bool = False
    """Failures, then abstentions, then passes; else by example and repetition."""


def _failed() -> ColumnElement[bool]:
    # Rows of schema 1 (before scorers) have no ``passed``: their ``correct`` decides.
    return or_(
        ResultRow.passed.is_(False),
        and_(ResultRow.passed.is_(None), ResultRow.scores.is_(None), ResultRow.correct.is_(False)),
    )


_SQLITE_SCORED = (
    "EXISTS (SELECT 1 FROM json_each(results.scores) AS score"
    " WHERE json_extract(score.value, '$.name') = :scorer{failing})"
)


def _sqlite_scored(scorer: str, failing: bool) -> ColumnElement[bool]:
    """SQLite's JSON1 test that a row holds ``scorer``'s score (failed, with ``failing``).

    A stored score leaves out ``passed`` when it is None (an abstention), so only a
    JSON ``false`` (read as 0) is a failure, as in :func:`_scored_ids`.
    """
    failed = " AND json_extract(score.value, '$.passed') = 0" if failing else ""
    clause = text(_SQLITE_SCORED.format(failing=failed)).bindparams(scorer=scorer)
    return cast("ColumnElement[bool]", clause)


def _scored_ids(
    store: Store, run_id: str, scorer: str, failing: bool, order: list[Any]
) -> list[int]:
    """The ids of the run's results scored (and, with ``failing``, failed) by ``scorer``,
    read in Python: the portable way, for databases other than SQLite and PostgreSQL.

    Only the two columns needed are read.
    """
    query = select(ResultRow.id, ResultRow.scores).where(ResultRow.run_id == run_id)
    with store.guard(f"read the results of run {run_id}"), store.session() as session:
        rows = session.execute(query.order_by(*order)).all()
    ids = []
    for row_id, scores in rows:
        for score in scores or ():
            if isinstance(score, dict) and score.get("name") == scorer:
                if not failing or score.get("passed") is False:
                    ids.append(row_id)
                break
    return ids


_POSTGRES_FIRST_SCORE = (
    "(SELECT CASE WHEN json_typeof(score.value -> 'passed') = 'boolean'"
    " THEN score.value ->> 'passed' ELSE '' END"
    " FROM json_array_elements(CASE WHEN json_typeof(results.scores) = 'array'"
    " THEN results.scores ELSE '[]'::json END) WITH ORDINALITY AS score(value, n)"
    " WHERE json_typeof(score.value) = 'object'"
    " AND json_typeof(score.value -> 'name') = 'string'"
    " AND score.value ->> 'name' = :scorer ORDER BY score.n LIMIT 1)"
)


def _postgres_scored(scorer: str, failing: bool) -> ColumnElement[bool]:
    """PostgreSQL's test that a row's first score named ``scorer`` exists (and, with
    ``failing``, failed: a JSON ``false``), as :func:`_scored_ids` tests it."""
    test = " = 'false'" if failing else " IS NOT NULL"
    clause = text(_POSTGRES_FIRST_SCORE + test).bindparams(scorer=scorer)
    return cast("ColumnElement[bool]", clause)


def scored_clause(store: Store, run_id: str, where: ResultFilter) -> ColumnElement[bool] | None:
    """The SQL test of ``where``'s scorer filter on the store's database (None without a
    scorer filter): over the scores' JSON on SQLite and PostgreSQL, else the ids
    :func:`_scored_ids` picks in Python."""
    if where.scorer is None:
        return None
    dialect = store.engine.dialect.name
    if dialect == "sqlite":
        return _sqlite_scored(where.scorer, where.failing)
    if dialect == "postgresql":
        return _postgres_scored(where.scorer, where.failing)
    order = [ResultRow.example_id, ResultRow.repetition]
    return ResultRow.id.in_(_scored_ids(store, run_id, where.scorer, where.failing, order))


@dataclass(frozen=True)
class StoredVerdict:
    """One stored jury verdict with the case it judged."""

    id: int
    """The verdict's id."""
    run_id: str
    """The jury run it belongs to."""
    case: Case
    """The judged case (task, context, output)."""
    verdict: Verdict
    """The verdict, its critiques in roster order."""
    created_at: datetime
    """When it was stored."""


def _stored_verdict(session: Session, row: VerdictRow) -> StoredVerdict:
    critiques = session.scalars(
        select(CritiqueRow)
        .where(CritiqueRow.run_id == row.run_id, CritiqueRow.case_id == row.case_id)
        .order_by(CritiqueRow.position)
    ).all()
    outcomes = [_outcome(c) for c in critiques]
    return StoredVerdict(
        id=row.id,
        run_id=row.run_id,
        case=Case.model_validate(row.case_data),
        verdict=Verdict.model_validate({**row.verdict, "critiques": outcomes}),
        created_at=_utc(row.created_at),
    )


def load_verdict(store: Store, verdict_id: int) -> StoredVerdict | None:
    """The verdict stored under ``verdict_id``, or None."""
    with store.guard("read a verdict"), store.session() as session:
        row = session.get(VerdictRow, verdict_id)
        return None if row is None else _stored_verdict(session, row)


def verdict_ids(store: Store, run_id: str) -> dict[str, int]:
    """The id of each verdict of a jury run, by case id."""
    with store.guard("read verdicts"), store.session() as session:
        rows = session.execute(
            select(VerdictRow.case_id, VerdictRow.id).where(VerdictRow.run_id == run_id)
        ).all()
        return {case_id: verdict_id for case_id, verdict_id in rows}


def page_verdicts(
    store: Store, *, viewer: str | None, offset: int, limit: int
) -> tuple[list[StoredVerdict], int]:
    """One page of verdicts, newest first, and how many ``viewer`` may see."""
    condition: ColumnElement[bool] | None = None
    if viewer is not None:
        condition = func.cast(VerdictRow.id, String).in_(owned_ids("verdict", viewer))
    query = select(VerdictRow)
    count = select(func.count()).select_from(VerdictRow)
    if condition is not None:
        query, count = query.where(condition), count.where(condition)
    with store.guard("list verdicts"), store.session() as session:
        total = int(session.scalar(count) or 0)
        rows = session.scalars(
            query.order_by(VerdictRow.created_at.desc(), VerdictRow.id.desc())
            .offset(offset)
            .limit(limit)
        ).all()
        return [_stored_verdict(session, row) for row in rows], total
