"""One settings object, read from ``ARBITER_*`` environment variables and ``.env``.

A real environment variable always wins over ``.env``. Nothing is read at import
time: build ``Settings()`` where it is needed and pass it in.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["Settings"]


class Settings(BaseSettings):
    """Configuration of Arbiter. Every field maps to an ``ARBITER_<NAME>`` variable."""

    model_config = SettingsConfigDict(
        env_prefix="ARBITER_", env_file=".env", env_file_encoding="utf-8", extra="ignore"
    )

    db_url: str | None = Field(default=None)
    """SQLAlchemy URL of the run store (``ARBITER_DB_URL``), e.g.
    ``postgresql+psycopg://user@host/arbiter``. Default: SQLite in ``home``."""
    home: Path = Path(".arbiter")
    """Folder for the default SQLite store and other local state (``ARBITER_HOME``)."""
    concurrency: int = Field(default=16, ge=1)
    """Default number of calls in flight during a run (``ARBITER_CONCURRENCY``)."""
    timeout: float = Field(default=30.0, gt=0)
    """Default per-call timeout in seconds (``ARBITER_TIMEOUT``)."""
    retries: int = Field(default=2, ge=0)
    """Default retries of a retryable failure (``ARBITER_RETRIES``)."""

    def database_url(self) -> str:
        """The store URL: ``db_url`` if set, else SQLite at ``home/arbiter.db``."""
        if self.db_url:
            return self.db_url
        return f"sqlite:///{(self.home / 'arbiter.db').as_posix()}"
