"""Tables of stored agent runs: one row per run, one row per score it got.

They share :class:`~arbiter.store.models.Base` with the harness tables, so
``Base.metadata.create_all`` makes them too. The whole
:class:`~arbiter.contract.StoredTrajectory` is kept as JSON (the run, every score); the
facts a roster or a ledger selects and counts by (agent, verdict, band, time) are
columns, and each score is a row of its own so per-scorer tallies are one ``GROUP BY``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, DateTime, Float, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from arbiter.store.models import SCHEMA_VERSION, Base
from arbiter.store.types import UntrustedString

__all__ = ["TrajectoryRow", "TrajectoryScoreRow"]


class TrajectoryRow(Base):
    """One stored agent run with its verdict; ``record`` holds all of it."""

    __tablename__ = "trajectories"
    __table_args__ = (Index("ix_trajectories_agent_seq", "agent", "seq"),)

    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    id: Mapped[str] = mapped_column(String(40), unique=True)
    schema_version: Mapped[int] = mapped_column(Integer, default=SCHEMA_VERSION)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
    kind: Mapped[str] = mapped_column(String(20))
    agent: Mapped[str] = mapped_column(UntrustedString(1000))
    agent_class: Mapped[str | None] = mapped_column(UntrustedString(1000), nullable=True)
    source_format: Mapped[str] = mapped_column(UntrustedString(100))
    trace_id: Mapped[str | None] = mapped_column(UntrustedString(1000), nullable=True, index=True)
    trajectory_hash: Mapped[str] = mapped_column(String(80), index=True)
    status: Mapped[str] = mapped_column(String(20))
    passed: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    band: Mapped[str | None] = mapped_column(String(10), nullable=True)
    cost_usd: Mapped[float | None] = mapped_column(Float, nullable=True)
    duration_ms: Mapped[float | None] = mapped_column(Float, nullable=True)
    record: Mapped[dict[str, Any]] = mapped_column(JSON)


class TrajectoryScoreRow(Base):
    """What one scorer said of one stored run."""

    __tablename__ = "trajectory_scores"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    trajectory_seq: Mapped[int] = mapped_column(
        ForeignKey("trajectories.seq", ondelete="CASCADE"), index=True
    )
    agent: Mapped[str] = mapped_column(UntrustedString(1000), index=True)
    name: Mapped[str] = mapped_column(UntrustedString(200))
    passed: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    band: Mapped[str | None] = mapped_column(String(10), nullable=True)
    errored: Mapped[bool] = mapped_column(Boolean, default=False)
    value: Mapped[float | None] = mapped_column(Float, nullable=True)
