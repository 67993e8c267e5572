"""Tables that keep a run's pages fast on large runs: its report, and examples by id.

A report is recomputed from every stored result (seconds on 100,000 of them), so the
one computed for a run in a given state (results done, status) is kept and used until
the run moves on. A dataset is one JSON document; the examples a page of results shows
are read from an index of its examples by id instead of parsing the whole document.
Both are caches: deleting their rows loses nothing.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, DateTime, ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from arbiter.store.models import Base

__all__ = ["DatasetExampleRow", "RunReportRow"]


class RunReportRow(Base):
    """The report of a run as it stood with ``n_done`` results in status ``status``."""

    __tablename__ = "run_reports"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id"), primary_key=True)
    n_done: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(20))
    report: Mapped[dict[str, Any]] = mapped_column(JSON)
    binary_scorers: Mapped[list[str]] = mapped_column(JSON)
    computed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    n_failed: Mapped[int | None] = mapped_column(Integer, nullable=True)
    n_undecided: Mapped[int | None] = mapped_column(Integer, nullable=True)
    n_passed: Mapped[int | None] = mapped_column(Integer, nullable=True)


class DatasetExampleRow(Base):
    """One example of a stored dataset, by the dataset's hash and the example's id."""

    __tablename__ = "dataset_examples"

    dataset_hash: Mapped[str] = mapped_column(ForeignKey("datasets.content_hash"), primary_key=True)
    example_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    position: Mapped[int] = mapped_column(Integer)
    example: Mapped[dict[str, Any]] = mapped_column(JSON)
