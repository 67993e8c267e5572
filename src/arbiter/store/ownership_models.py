"""Table of who owns a record made through the server: ``(kind, record_id) -> owner``.

``owner`` is the id of the API key that made the record. Records made at the command
line have no row: nobody owns them, so only an admin key (or an open server, with no
key configured) sees them.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, String
from sqlalchemy.orm import Mapped, mapped_column

from arbiter.store.models import Base

__all__ = ["RecordOwnerRow"]


class RecordOwnerRow(Base):
    """The owner of one record."""

    __tablename__ = "record_owners"

    kind: Mapped[str] = mapped_column(String(40), primary_key=True)
    record_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    owner: Mapped[str] = mapped_column(String(40), index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
