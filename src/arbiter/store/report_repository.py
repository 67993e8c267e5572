"""Read and write the kept reports of runs and the index of stored datasets' examples.

See :mod:`arbiter.store.report_models`. Both are caches: a kept report is used only
while the run is in the state it was computed in (same results done, same status),
and an example index is written once per dataset hash (datasets never change).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError
from sqlalchemy import bindparam, delete, insert, select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from arbiter.contract import Example, Report
from arbiter.store.failures_repository import OutcomeCounts
from arbiter.store.models import DatasetRow, RunRow
from arbiter.store.ownership_repository import owned_ids
from arbiter.store.report_models import DatasetExampleRow, RunReportRow
from arbiter.store.repository import Store

__all__ = ["KeptReport", "examples_by_id", "index_examples", "keep_report", "kept_reports"]

_CHUNK = 2_000


@dataclass(frozen=True)
class KeptReport:
    """A run's report as computed when the run had ``n_done`` results in ``status``."""

    run_id: str
    """The run."""
    n_done: int
    """Results the run had."""
    status: str
    """Its status then."""
    report: Report
    """The report."""
    binary_scorers: list[str]
    """Scorers whose every value was 0 or 1."""
    counts: OutcomeCounts | None = None
    """The results that failed, were undecided and passed, in that state."""


def kept_reports(store: Store, run_ids: Collection[str]) -> dict[str, KeptReport]:
    """The kept report of each of ``run_ids`` that has one (in whatever state it was)."""
    if not run_ids:
        return {}
    with store.guard("read kept reports"), store.session() as session:
        rows = session.scalars(
            select(RunReportRow).where(RunReportRow.run_id.in_(list(run_ids)))
        ).all()
    kept = {}
    for row in rows:
        try:
            report = Report.model_validate(row.report)
        except ValidationError:  # kept by another version: recompute it
            continue
        counts = None
        if row.n_failed is not None and row.n_undecided is not None and row.n_passed is not None:
            counts = OutcomeCounts(row.n_failed, row.n_undecided, row.n_passed)
        kept[row.run_id] = KeptReport(
            row.run_id, row.n_done, row.status, report, list(row.binary_scorers), counts
        )
    return kept


def keep_report(
    store: Store,
    run_id: str,
    *,
    n_done: int,
    status: str,
    report: Report,
    binary_scorers: Collection[str],
    counts: OutcomeCounts,
) -> None:
    """Keep ``report`` (and the outcome counts) as the run's in its state (``n_done``,
    ``status``)."""
    row = {
        "run_id": run_id,
        "n_done": n_done,
        "status": status,
        "report": report.model_dump(mode="json"),
        "binary_scorers": sorted(binary_scorers),
        "computed_at": datetime.now(UTC),
        "n_failed": counts.failed,
        "n_undecided": counts.undecided,
        "n_passed": counts.passed,
    }
    with store.guard(f"keep the report of run {run_id}"):
        try:
            with store.session() as session, session.begin():
                session.execute(delete(RunReportRow).where(RunReportRow.run_id == run_id))
                session.execute(insert(RunReportRow), [row])
        except IntegrityError:  # another request kept the same report first
            return


def index_examples(store: Store, dataset_hash: str) -> None:
    """Index the examples of the dataset stored under ``dataset_hash`` by id, once."""
    action = f"index the examples of dataset {dataset_hash[:12]}"
    with store.guard(action), store.session() as session:
        indexed = session.scalar(
            select(DatasetExampleRow.position)
            .where(DatasetExampleRow.dataset_hash == dataset_hash)
            .limit(1)
        )
        if indexed is not None:
            return
        examples = session.scalar(
            select(DatasetRow.examples).where(DatasetRow.content_hash == dataset_hash)
        )
    if not examples:
        return
    rows = [
        {"dataset_hash": dataset_hash, "example_id": e["id"], "position": i, "example": e}
        for i, e in enumerate(examples)
    ]
    with store.guard(action):
        try:
            with store.session() as session, session.begin():
                for start in range(0, len(rows), _CHUNK):
                    session.execute(insert(DatasetExampleRow), rows[start : start + _CHUNK])
        except IntegrityError:  # indexed by another request meanwhile
            return


def examples_by_id(store: Store, dataset_hash: str, ids: Sequence[str]) -> dict[str, Example]:
    """The examples of the dataset stored under ``dataset_hash`` with these ids.

    Read from the index (:func:`index_examples`); ids it lacks (a dataset not indexed
    yet) are picked out of the stored dataset without validating the rest of it.
    """
    wanted = list(dict.fromkeys(ids))
    if not wanted:
        return {}
    with store.guard("read examples"), store.session() as session:
        rows = session.execute(
            select(DatasetExampleRow.example_id, DatasetExampleRow.example).where(
                DatasetExampleRow.dataset_hash == dataset_hash,
                DatasetExampleRow.example_id.in_(wanted),
            )
        ).all()
        found = {example_id: Example.model_validate(data) for example_id, data in rows}
        missing = [i for i in wanted if i not in found]
        if missing:
            for data in _pick(session, dataset_hash, missing):
                found[data["id"]] = Example.model_validate(data)
    return found


_JSON_EACH = text(
    "SELECT e.value FROM datasets, json_each(datasets.examples) AS e "
    "WHERE datasets.content_hash = :hash AND json_extract(e.value, '$.id') IN :ids"
).bindparams(bindparam("ids", expanding=True))


def _pick(session: Session, dataset_hash: str, ids: Sequence[str]) -> list[dict[str, Any]]:
    """The examples with these ids out of the stored dataset's JSON document.

    SQLite picks them in SQL (``json_each``), without handing the whole document to
    Python; other databases read the document and pick here.
    """
    if session.get_bind().dialect.name == "sqlite":
        values = session.execute(_JSON_EACH, {"hash": dataset_hash, "ids": list(ids)}).scalars()
        return [json.loads(v) for v in values]
    wanted = set(ids)
    raw = session.scalar(select(DatasetRow.examples).where(DatasetRow.content_hash == dataset_hash))
    return [d for d in raw or () if isinstance(d, dict) and d.get("id") in wanted]


def sibling_runs(
    store: Store, run_id: str, dataset_hash: str, *, viewer: str | None, limit: int
) -> list[tuple[str, str | None]]:
    """Other runs of the same dataset, newest first, as (id, name): what a run's page
    offers to compare with, read without counting anyone's results."""
    query = (
        select(RunRow.id, RunRow.name)
        .where(RunRow.dataset_hash == dataset_hash, RunRow.id != run_id)
        .order_by(RunRow.created_at.desc(), RunRow.id.desc())
        .limit(limit)
    )
    if viewer is not None:
        query = query.where(RunRow.id.in_(owned_ids("run", viewer)))
    with store.guard("list runs"), store.session() as session:
        return [(row_id, name) for row_id, name in session.execute(query).all()]
