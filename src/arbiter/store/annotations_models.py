"""Table of human annotations: append-only, one row per label a person gave.

It shares :class:`~arbiter.store.models.Base` with the harness tables, so
``Base.metadata.create_all`` makes it too. Portable column types only (SQLite and
PostgreSQL). The whole ``Annotation`` is kept as JSON (the exact text, the frozen
ruling); the facts a reader selects by (key, judge, verdict, time) are columns.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, DateTime, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from arbiter.store.models import SCHEMA_VERSION, Base
from arbiter.store.types import UntrustedString, UntrustedText

__all__ = ["AnnotationRow"]


class AnnotationRow(Base):
    """One human label on (item, dimension); rows are only ever inserted."""

    __tablename__ = "annotations"
    __table_args__ = (Index("ix_annotations_key", "item_id", "dimension", "annotator"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    schema_version: Mapped[int] = mapped_column(Integer, default=SCHEMA_VERSION)
    item_id: Mapped[str] = mapped_column(UntrustedString(200))
    dimension: Mapped[str] = mapped_column(UntrustedString(100), index=True)
    label: Mapped[str] = mapped_column(String(10))
    judge: Mapped[str | None] = mapped_column(UntrustedString(200), nullable=True, index=True)
    verdict: Mapped[str | None] = mapped_column(String(10), nullable=True)
    annotator: Mapped[str] = mapped_column(UntrustedString(200))
    propagated: Mapped[bool] = mapped_column(Boolean, default=False)
    comment: Mapped[str] = mapped_column(UntrustedText, default="")
    annotation: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
