"""The stored copies a page or endpoint shows beside a signed record, read as stored.

Some columns repeat what a signed record holds, so pages can filter, count and open
fast: a run's kept report and outcome counts, its headline ``summary``, the index of its
dataset's examples by id, a stored agent run's verdict and band columns and its
per-scorer rows. Verifying a signature compares each of them with the record it
repeats (see :mod:`arbiter.service.verification`); these functions read them raw,
without validating or trusting them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from arbiter.store.models import DatasetRow, RunRow
from arbiter.store.report_models import DatasetExampleRow, RunReportRow
from arbiter.store.repository import Store
from arbiter.store.trajectory_models import TrajectoryRow, TrajectoryScoreRow

__all__ = [
    "KeptReportRow",
    "StoredTrajectoryColumns",
    "dataset_index",
    "kept_report_row",
    "run_summary_column",
    "trajectory_columns",
]


@dataclass(frozen=True)
class KeptReportRow:
    """A run's kept report as stored (``run_reports``)."""

    n_done: int
    """Results the run had when it was computed."""
    status: str
    """The run's status then."""
    report: Any
    """The report, as stored JSON."""
    binary_scorers: list[str]
    """Scorers it found 0/1-valued."""
    counts: tuple[int | None, int | None, int | None]
    """Failed, undecided and passed results (None: not kept)."""


def kept_report_row(store: Store, run_id: str) -> KeptReportRow | None:
    """The kept report of ``run_id`` as stored, or None when none is kept."""
    with store.guard("read a kept report"), store.session() as session:
        row = session.get(RunReportRow, run_id)
        if row is None:
            return None
        return KeptReportRow(
            n_done=row.n_done,
            status=row.status,
            report=row.report,
            binary_scorers=list(row.binary_scorers or []),
            counts=(row.n_failed, row.n_undecided, row.n_passed),
        )


def run_summary_column(store: Store, run_id: str) -> Any:
    """The ``summary`` column of a run as stored (None when not kept)."""
    with store.guard("read a run's summary"), store.session() as session:
        return session.scalar(select(RunRow.summary).where(RunRow.id == run_id))


def dataset_index(store: Store, dataset_hash: str) -> tuple[list[Any], list[tuple[str, int, Any]]]:
    """The stored dataset's examples as stored JSON, and its index rows as
    ``(example_id, position, example)`` by position (empty while not indexed)."""
    with store.guard("read a dataset's index"), store.session() as session:
        examples = session.scalar(
            select(DatasetRow.examples).where(DatasetRow.content_hash == dataset_hash)
        )
        rows = session.execute(
            select(
                DatasetExampleRow.example_id,
                DatasetExampleRow.position,
                DatasetExampleRow.example,
            )
            .where(DatasetExampleRow.dataset_hash == dataset_hash)
            .order_by(DatasetExampleRow.position)
        ).all()
    return list(examples or []), [(str(i), int(p), e) for i, p, e in rows]


@dataclass(frozen=True)
class StoredTrajectoryColumns:
    """A stored agent run's columns and its per-scorer rows, as stored."""

    columns: dict[str, Any]
    """The ``trajectories`` columns other than the record itself."""
    scores: list[dict[str, Any]]
    """Its ``trajectory_scores`` rows, in the order written."""


_RUN_COLUMNS = (
    "kind",
    "agent",
    "agent_class",
    "source_format",
    "trace_id",
    "trajectory_hash",
    "status",
    "passed",
    "band",
    "cost_usd",
    "duration_ms",
    "created_at",
)
_SCORE_COLUMNS = ("agent", "name", "passed", "band", "errored", "value")


def trajectory_columns(store: Store, run_id: str) -> StoredTrajectoryColumns | None:
    """The columns of the stored agent run ``run_id``, or None when it is not stored."""
    with store.guard("read an agent run's columns"), store.session() as session:
        row = session.scalar(select(TrajectoryRow).where(TrajectoryRow.id == run_id))
        if row is None:
            return None
        scores = session.scalars(
            select(TrajectoryScoreRow)
            .where(TrajectoryScoreRow.trajectory_seq == row.seq)
            .order_by(TrajectoryScoreRow.id)
        ).all()
        return StoredTrajectoryColumns(
            columns={name: getattr(row, name) for name in _RUN_COLUMNS},
            scores=[{name: getattr(s, name) for name in _SCORE_COLUMNS} for s in scores],
        )
