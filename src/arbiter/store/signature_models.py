"""Table of signatures: one Ed25519 envelope per signed record, keyed by ``(kind, record_id)``.

``kind`` says what was signed (``run_report``, ``verdict``, ``gate_decision``,
``trajectory_scores``, ...), ``record_id`` which record (a run id, ``jury_run/case``,
``run:floors``). ``payload`` is the signed canonical JSON text itself, so the envelope is
rebuilt exactly from the row. Signing a record again replaces its row.
``claim_sha256`` is the sha256 of the signed claim's canonical JSON, so a page can check
a kept copy of the claim (a run's report) without reading the whole payload; verifying
a signature checks that column against the payload too.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from arbiter.store.models import Base

__all__ = ["SignatureRow"]


class SignatureRow(Base):
    """The signature of one record."""

    __tablename__ = "signatures"

    kind: Mapped[str] = mapped_column(String(40), primary_key=True)
    record_id: Mapped[str] = mapped_column(String(300), primary_key=True)
    key_id: Mapped[str] = mapped_column(String(64), index=True)
    public_key: Mapped[str] = mapped_column(String(64))
    digest: Mapped[str] = mapped_column(String(64))
    signature: Mapped[str] = mapped_column(String(128))
    payload: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    claim_sha256: Mapped[str | None] = mapped_column(String(64), nullable=True)
