"""Table of online scoring results: one row per scored prediction of a batch.

It shares :class:`~arbiter.store.models.Base` with the harness tables, so
``Base.metadata.create_all`` makes it too. The searchable facts (label, flagged,
escalated, judge source, time) are columns; the whole ``OnlineResult`` is kept as JSON
so nothing the pipeline found is lost.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, DateTime, Float, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from arbiter.store.models import SCHEMA_VERSION, Base
from arbiter.store.types import UntrustedString, UntrustedText

__all__ = ["OnlineResultRow"]


class OnlineResultRow(Base):
    """One scored prediction of an online batch (``arbiter online score``) or service."""

    __tablename__ = "online_results"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    schema_version: Mapped[int] = mapped_column(Integer, default=SCHEMA_VERSION)
    batch_id: Mapped[str] = mapped_column(String(40), index=True)
    prediction_id: Mapped[str] = mapped_column(UntrustedText)
    label: Mapped[str | None] = mapped_column(UntrustedText, nullable=True)
    escalated: Mapped[bool] = mapped_column(Boolean)
    flagged: Mapped[bool] = mapped_column(Boolean)
    judge_source: Mapped[str | None] = mapped_column(UntrustedString(200), nullable=True)
    n_errors: Mapped[int] = mapped_column(Integer, default=0)
    total_ms: Mapped[float] = mapped_column(Float)
    result: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
