"""Table of the server's API keys: a name, an admin flag and the key's SHA-256, never the key.

A key is 32 random bytes, so a plain SHA-256 is enough to make the stored value useless
to someone who reads the database (no dictionary to try); the lookup is by that digest.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, DateTime, String
from sqlalchemy.orm import Mapped, mapped_column

from arbiter.store.models import Base
from arbiter.store.types import UntrustedString

__all__ = ["ApiKeyRow"]


class ApiKeyRow(Base):
    """One API key of ``arbiter serve``."""

    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    name: Mapped[str] = mapped_column(UntrustedString(200))
    digest: Mapped[str] = mapped_column(String(64), unique=True)
    admin: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
