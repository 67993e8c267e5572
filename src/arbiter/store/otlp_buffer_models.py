"""Tables of the OTLP ingest's buffer: what arrived of each recent trace, per key.

An exporter sends a trace's spans and its log records in separate requests, which
several server processes may take; each process reads the trace back from here, so any
one of them pairs any trace. One row per ``(owner, trace id)`` holds the trace's state
(when it was last touched, how often, whether it was rejected, the runs it stored); one
row per span (keyed by span id) or log record (keyed by a digest of what tells two
apart) holds its payload, serialised by the service layer. They share
:class:`~arbiter.store.models.Base` with the other tables, so opening a store makes them.
"""

from __future__ import annotations

from sqlalchemy import JSON, Float, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from arbiter.store.models import Base
from arbiter.store.types import UntrustedText

__all__ = ["OtlpItemRow", "OtlpTraceRow"]


class OtlpTraceRow(Base):
    """One buffered trace of one key."""

    __tablename__ = "otlp_pending_traces"
    __table_args__ = (UniqueConstraint("owner", "trace_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    owner: Mapped[str] = mapped_column(String(40))
    """The API key's id that sent it; empty when no key did (an open server)."""
    trace_id: Mapped[str] = mapped_column(String(64))
    touched: Mapped[float] = mapped_column(Float, index=True)
    """Seconds (the ingest's clock) when spans or log records last arrived."""
    version: Mapped[int] = mapped_column(Integer, default=0)
    """How many requests touched it: a request's runs are stored only if none came after."""
    rejected: Mapped[str | None] = mapped_column(UntrustedText, nullable=True)
    """Why the trace cannot be imported (its later spans are rejected too); None: it can."""
    stored: Mapped[list[str]] = mapped_column(JSON, default=list)
    """Ids of the runs it stored last, which its next import replaces."""


class OtlpItemRow(Base):
    """One buffered span or log record of a trace, in arrival order (``id``)."""

    __tablename__ = "otlp_pending_items"
    __table_args__ = (UniqueConstraint("trace_ref", "kind", "item_key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    trace_ref: Mapped[int] = mapped_column(ForeignKey("otlp_pending_traces.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(1))
    """``s``: a span; ``l``: a log record."""
    item_key: Mapped[str] = mapped_column(String(64))
    """The span's id, or a digest of the log record's span id, time, event name and body."""
    payload: Mapped[str] = mapped_column(Text)
    """The item as the service layer serialised it (JSON, ASCII: storable anywhere)."""
