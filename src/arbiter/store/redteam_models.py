"""The table of live red-team results: one row per red-team run, only ever inserted into.

A row keeps the whole report but the misses' trajectories (each breached run's
trajectory is attached to its inbox event). ``owner_key`` is the owning API key's id,
or the empty string for a red-team nobody owns, as for trust events.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, DateTime, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from arbiter.store.models import Base
from arbiter.store.types import UntrustedString

__all__ = ["RedTeamRunRow"]


class RedTeamRunRow(Base):
    """One live red-team of one agent."""

    __tablename__ = "redteam_runs"
    __table_args__ = (Index("ix_redteam_runs_owner_created", "owner_key", "created_at"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    owner_key: Mapped[str] = mapped_column(String(40))
    agent: Mapped[str] = mapped_column(UntrustedString(1000), index=True)
    passed: Mapped[bool] = mapped_column(Boolean)
    report: Mapped[dict[str, Any]] = mapped_column(JSON)
