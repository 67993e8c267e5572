"""Tables of the grounding gate: every decision, and the reviews of parked answers.

They share :class:`~arbiter.store.models.Base` with the harness tables, so
``Base.metadata.create_all`` makes them too. Portable column types only (SQLite and
PostgreSQL). The whole record is kept as JSON; the facts a reader selects by (owner,
action, whether an answer was parked, time) are columns. Both tables are only ever
inserted into: a review is appended beside the decision it resolves, and a decision has
at most one (the unique ``decision_id``), so a parked answer is resolved once.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, DateTime, Float, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from arbiter.store.models import Base
from arbiter.store.types import UntrustedString, UntrustedText

__all__ = ["GateDecisionRow", "GateReviewRow"]


class GateDecisionRow(Base):
    """One decision of the grounding gate."""

    __tablename__ = "gate_decisions"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    schema_version: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
    mode: Mapped[str] = mapped_column(String(20))
    action: Mapped[str] = mapped_column(String(30), index=True)
    needs_judge: Mapped[bool] = mapped_column(Boolean)
    judge: Mapped[str] = mapped_column(String(20))
    judge_cost_usd: Mapped[float | None] = mapped_column(Float, nullable=True)
    owner: Mapped[str | None] = mapped_column(UntrustedString(200), nullable=True, index=True)
    parked: Mapped[bool] = mapped_column(Boolean, index=True)
    decision: Mapped[dict[str, Any]] = mapped_column(JSON)
    agent: Mapped[str | None] = mapped_column(UntrustedString(1000), nullable=True, index=True)
    """The agent whose answer was gated, when the caller named it (not part of the signed
    decision: a filter, added to older stores in place)."""


class GateReviewRow(Base):
    """A human's resolution of one parked answer."""

    __tablename__ = "gate_reviews"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    decision_id: Mapped[str] = mapped_column(String(64), unique=True)
    resolution: Mapped[str] = mapped_column(String(10))
    reviewer: Mapped[str] = mapped_column(UntrustedString(200))
    note: Mapped[str] = mapped_column(UntrustedText, default="")
    review: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
