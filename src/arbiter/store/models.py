"""Tables of the run store (SQLAlchemy 2, portable: SQLite and PostgreSQL)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    String,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from arbiter.store.types import UntrustedString, UntrustedText

__all__ = [
    "MAX_ID_CHARS",
    "MAX_NAME_CHARS",
    "MAX_VERSION_CHARS",
    "SCHEMA_VERSION",
    "Base",
    "DatasetRow",
    "ResultRow",
    "RunLeaseRow",
    "RunRow",
    "RunSegmentRow",
]

MAX_ID_CHARS = 200
"""Longest example id the results table keeps (PostgreSQL enforces it; SQLite does not,
so the store checks it before writing anything, on every database alike)."""
MAX_NAME_CHARS = 200
"""Longest run or dataset name the store keeps."""
MAX_VERSION_CHARS = 100
"""Longest dataset version the store keeps."""

SCHEMA_VERSION = 2
"""Version of the stored tables; written into every run row.

2 (0.3): results gain ``output``, ``passed`` and ``scores``; runs gain ``name``,
``tags`` and ``summary``. Columns are only ever added, nullable, so a store of an older
version is upgraded in place when opened (see ``Store``)."""


class Base(DeclarativeBase):
    """Declarative base of the store's tables."""


class DatasetRow(Base):
    """A dataset, stored once per content hash so a run can be resumed without its file."""

    __tablename__ = "datasets"

    content_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(MAX_NAME_CHARS))
    version: Mapped[str] = mapped_column(String(MAX_VERSION_CHARS))
    n_examples: Mapped[int] = mapped_column(Integer)
    examples: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class RunRow(Base):
    """One evaluation run: what ran, against what, how, and how far it got."""

    __tablename__ = "runs"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    schema_version: Mapped[int] = mapped_column(Integer, default=SCHEMA_VERSION)
    dataset_hash: Mapped[str] = mapped_column(ForeignKey("datasets.content_hash"), index=True)
    system: Mapped[dict[str, Any]] = mapped_column(JSON)
    config: Mapped[dict[str, Any]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(20))
    n_pairs: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    elapsed_seconds: Mapped[float] = mapped_column(Float, default=0.0)
    name: Mapped[str | None] = mapped_column(UntrustedString(MAX_NAME_CHARS), nullable=True)
    tags: Mapped[dict[str, str] | None] = mapped_column(JSON, nullable=True)
    summary: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)


class ResultRow(Base):
    """The outcome of one (example, repetition) pair, written the moment it completes."""

    __tablename__ = "results"
    __table_args__ = (UniqueConstraint("run_id", "example_id", "repetition"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id"), index=True)
    example_id: Mapped[str] = mapped_column(String(MAX_ID_CHARS))
    repetition: Mapped[int] = mapped_column(Integer)
    label: Mapped[str | None] = mapped_column(UntrustedText, nullable=True)
    confidence: Mapped[float | None] = mapped_column(Float, nullable=True)
    prediction_id: Mapped[str | None] = mapped_column(UntrustedText, nullable=True)
    raw_output: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    correct: Mapped[bool] = mapped_column(Boolean)
    passed: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    output: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    scores: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON, nullable=True)
    error_type: Mapped[str | None] = mapped_column(String(100), nullable=True)
    error_message: Mapped[str | None] = mapped_column(UntrustedText, nullable=True)
    latency_ms: Mapped[float] = mapped_column(Float)
    attempts: Mapped[int] = mapped_column(Integer)
    completed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class RunSegmentRow(Base):
    """One stretch of a run's execution: its first start or a resume.

    A segment killed before it could end keeps ``ended_at`` empty; its wall time is then
    read off the results it stored, so a resumed run's throughput is not overstated.
    """

    __tablename__ = "run_segments"
    __table_args__ = (UniqueConstraint("run_id", "position"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id"), index=True)
    position: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    ended_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    elapsed_seconds: Mapped[float | None] = mapped_column(Float, nullable=True)


class RunLeaseRow(Base):
    """Who is executing a run right now: one row per leased run, none when idle.

    A lease is live while its holder's heartbeat is recent and, on the same host, while
    its process exists; a killed holder's lease can be taken over at once.
    """

    __tablename__ = "run_leases"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id"), primary_key=True)
    owner: Mapped[str] = mapped_column(String(64))
    host: Mapped[str] = mapped_column(String(255))
    pid: Mapped[int] = mapped_column(Integer)
    heartbeat_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
