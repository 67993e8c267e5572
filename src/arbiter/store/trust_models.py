"""Tables of the trust loop: trust events and their acks, the breaker's memory, freezes,
votes and webhook deliveries.

Every table but the breaker's memory is only ever inserted into: an ack or a resolution
is a row beside its event, an unfreeze is a row after the freeze. An agent is keyed by
``owner_key`` and name, where ``owner_key`` is the owning API key's id or the empty
string for runs nobody owns, so two keys' agents of one name never share a row.
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
    Index,
    Integer,
    LargeBinary,
    String,
)
from sqlalchemy.orm import Mapped, mapped_column

from arbiter.store.models import Base
from arbiter.store.types import UntrustedString, UntrustedText

__all__ = [
    "AgentJudgeSettingRow",
    "BreakerStateRow",
    "DeploymentSettingRow",
    "FreezeRow",
    "JudgeRulingRow",
    "TrustAgentSummaryRow",
    "TrustEventNoteRow",
    "TrustEventRow",
    "TrustSummaryStateRow",
    "VoteRow",
    "WebhookDeliveryRow",
]


class TrustEventRow(Base):
    """One event of the assurance inbox (a breaker trip, a parked answer, ...)."""

    __tablename__ = "trust_events"
    __table_args__ = (Index("ix_trust_events_owner_id", "owner_key", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
    kind: Mapped[str] = mapped_column(String(40), index=True)
    severity: Mapped[str] = mapped_column(String(10))
    owner_key: Mapped[str] = mapped_column(String(40))
    agent: Mapped[str] = mapped_column(UntrustedString(1000), index=True)
    record_kind: Mapped[str | None] = mapped_column(String(40), nullable=True)
    record_id: Mapped[str | None] = mapped_column(UntrustedString(200), nullable=True)
    message: Mapped[str] = mapped_column(UntrustedText())
    details: Mapped[dict[str, Any]] = mapped_column(JSON)


class TrustEventNoteRow(Base):
    """An ack or a resolution of an event (one of each at most)."""

    __tablename__ = "trust_event_notes"

    event_id: Mapped[int] = mapped_column(
        ForeignKey("trust_events.id", ondelete="CASCADE"), primary_key=True
    )
    action: Mapped[str] = mapped_column(String(10), primary_key=True)
    by: Mapped[str] = mapped_column(UntrustedString(200))
    note: Mapped[str] = mapped_column(UntrustedText())
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class BreakerStateRow(Base):
    """What the breaker remembers of one agent (its one mutable row)."""

    __tablename__ = "trust_breaker_state"

    owner_key: Mapped[str] = mapped_column(String(40), primary_key=True)
    agent: Mapped[str] = mapped_column(UntrustedString(1000), primary_key=True)
    in_at_risk: Mapped[bool] = mapped_column(Boolean)
    trips: Mapped[int] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(20))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class TrustAgentSummaryRow(Base):
    """What trust reads of one agent (of one owner), kept on ingest in the transaction
    that stores its runs: its counts, and the newest evaluated runs (at most
    ``SUMMARY_RUNS`` of :mod:`arbiter.store.trust_summary`) as packed columns, oldest
    first: seq (int64), time in microseconds since the epoch (int64), verdict (uint8),
    and per scorer name of ``names`` the verdicts given (uint32 matrices, runs x names,
    row-major: how many scores of that name decided, how many passed)."""

    __tablename__ = "trust_agent_summaries"

    owner_key: Mapped[str] = mapped_column(String(40), primary_key=True)
    agent: Mapped[str] = mapped_column(UntrustedString(1000), primary_key=True)
    runs: Mapped[int] = mapped_column(Integer)
    evaluated: Mapped[int] = mapped_column(Integer)
    abstained: Mapped[int] = mapped_column(Integer)
    names: Mapped[list[str]] = mapped_column(JSON)
    seqs: Mapped[bytes] = mapped_column(LargeBinary)
    micros: Mapped[bytes] = mapped_column(LargeBinary)
    passes: Mapped[bytes] = mapped_column(LargeBinary)
    dim_decided: Mapped[bytes] = mapped_column(LargeBinary)
    dim_passed: Mapped[bytes] = mapped_column(LargeBinary)


class TrustSummaryStateRow(Base):
    """One row once the summaries cover every stored run (a store made before they
    existed gets them built from its rows on first use)."""

    __tablename__ = "trust_summary_state"

    key: Mapped[str] = mapped_column(String(20), primary_key=True)
    built_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    runs: Mapped[int] = mapped_column(Integer)


class FreezeRow(Base):
    """A freeze or an unfreeze of an agent: who, why, when."""

    __tablename__ = "trust_freezes"
    __table_args__ = (Index("ix_trust_freezes_agent", "owner_key", "agent", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    owner_key: Mapped[str] = mapped_column(String(40))
    agent: Mapped[str] = mapped_column(UntrustedString(1000))
    frozen: Mapped[bool] = mapped_column(Boolean)
    by: Mapped[str] = mapped_column(UntrustedString(200))
    reason: Mapped[str] = mapped_column(UntrustedText())
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class VoteRow(Base):
    """A person's up or down vote on a stored run."""

    __tablename__ = "trust_votes"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    owner_key: Mapped[str] = mapped_column(String(40), index=True)
    run_id: Mapped[str] = mapped_column(String(40), index=True)
    agent: Mapped[str] = mapped_column(UntrustedString(1000), index=True)
    vote: Mapped[str] = mapped_column(String(4))
    reason: Mapped[str] = mapped_column(UntrustedText())
    verdict_seen: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class WebhookDeliveryRow(Base):
    """One delivery (or failed delivery) of an event to a webhook."""

    __tablename__ = "trust_webhook_deliveries"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    event_id: Mapped[int] = mapped_column(Integer, index=True)
    url: Mapped[str] = mapped_column(UntrustedString(2000))
    delivered: Mapped[bool] = mapped_column(Boolean)
    attempts: Mapped[int] = mapped_column(Integer)
    error: Mapped[str] = mapped_column(UntrustedText())
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class AgentJudgeSettingRow(Base):
    """An agent's judge setting as it was given; the newest row of an agent is in force."""

    __tablename__ = "trust_agent_judges"
    __table_args__ = (Index("ix_trust_agent_judges_agent", "owner_key", "agent", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    owner_key: Mapped[str] = mapped_column(String(40))
    agent: Mapped[str] = mapped_column(UntrustedString(1000))
    setting: Mapped[dict[str, Any]] = mapped_column(JSON)
    by: Mapped[str] = mapped_column(UntrustedString(200))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class JudgeRulingRow(Base):
    """One judge's ruling on one ingested run (of one content: ``run_hash``)."""

    __tablename__ = "trust_judge_rulings"
    __table_args__ = (
        Index("ix_trust_judge_rulings_owner_id", "owner_key", "id"),
        Index("ix_trust_judge_rulings_run", "run_id", "run_hash"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    owner_key: Mapped[str] = mapped_column(String(40))
    agent: Mapped[str] = mapped_column(UntrustedString(1000), index=True)
    run_id: Mapped[str] = mapped_column(String(40))
    run_hash: Mapped[str] = mapped_column(String(80))
    judge: Mapped[str] = mapped_column(String(100), index=True)
    passed: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    explanation: Mapped[str] = mapped_column(UntrustedText())
    trigger: Mapped[str] = mapped_column(String(20))
    calls: Mapped[dict[str, Any]] = mapped_column(JSON)
    cost_usd: Mapped[float | None] = mapped_column(Float, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)


class DeploymentSettingRow(Base):
    """One value of a deployment setting set at runtime (the default band thresholds);
    the newest row of a key is in force, the older ones are its history."""

    __tablename__ = "trust_deployment_settings"
    __table_args__ = (Index("ix_trust_deployment_settings_key", "key", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    key: Mapped[str] = mapped_column(String(60))
    value: Mapped[dict[str, Any]] = mapped_column(JSON)
    by: Mapped[str] = mapped_column(UntrustedString(200))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
