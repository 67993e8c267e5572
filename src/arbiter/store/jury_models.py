"""Tables of the jury's judgments: runs, one row per critique, one row per verdict.

They share :class:`~arbiter.store.models.Base` with the harness tables, so
``Base.metadata.create_all`` makes them too. Portable column types only: the same
schema runs on SQLite and PostgreSQL.
"""

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
from sqlalchemy.orm import Mapped, mapped_column

from arbiter.store.models import MAX_ID_CHARS, MAX_NAME_CHARS, SCHEMA_VERSION, Base
from arbiter.store.types import UntrustedText

__all__ = ["MAX_LENS_CHARS", "CritiqueRow", "JuryRunRow", "VerdictRow"]

MAX_LENS_CHARS = 100
"""Longest lens name the critiques table keeps."""


class JuryRunRow(Base):
    """One batch of judgments: a ``judge`` call, a ``jury eval`` or one arm of a baseline."""

    __tablename__ = "jury_runs"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    schema_version: Mapped[int] = mapped_column(Integer, default=SCHEMA_VERSION)
    kind: Mapped[str] = mapped_column(String(20), index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
    roster: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    config: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    n_cases: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(20))


class CritiqueRow(Base):
    """What one critic answered on one case of a run (its raw text and parsed critique)."""

    __tablename__ = "critiques"
    __table_args__ = (UniqueConstraint("run_id", "case_id", "position"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("jury_runs.id"), index=True)
    case_id: Mapped[str] = mapped_column(String(MAX_ID_CHARS))
    position: Mapped[int] = mapped_column(Integer)
    critic: Mapped[str] = mapped_column(String(MAX_NAME_CHARS))
    lens: Mapped[str] = mapped_column(String(MAX_LENS_CHARS))
    model: Mapped[str] = mapped_column(String(MAX_NAME_CHARS))
    status: Mapped[str] = mapped_column(String(10))
    critique: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    raw: Mapped[str | None] = mapped_column(UntrustedText, nullable=True)
    error: Mapped[str | None] = mapped_column(UntrustedText, nullable=True)
    latency_ms: Mapped[float] = mapped_column(Float)
    input_tokens: Mapped[int | None] = mapped_column(Integer, nullable=True)
    output_tokens: Mapped[int | None] = mapped_column(Integer, nullable=True)
    cost_usd: Mapped[float | None] = mapped_column(Float, nullable=True)
    calls: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    """The outcome's model-call record (``ModelCalls``); None in stores made before it."""


class VerdictRow(Base):
    """The verdict on one case of a run, and the case itself so the run can be replayed."""

    __tablename__ = "verdicts"
    __table_args__ = (UniqueConstraint("run_id", "case_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("jury_runs.id"), index=True)
    case_id: Mapped[str] = mapped_column(String(MAX_ID_CHARS))
    decision: Mapped[str] = mapped_column(String(10))
    confidence: Mapped[float] = mapped_column(Float)
    escalate: Mapped[bool] = mapped_column(Boolean)
    verdict: Mapped[dict[str, Any]] = mapped_column(JSON)
    case_data: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
