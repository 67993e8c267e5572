"""The model-call cache in a database: the run store's, so every worker of a cluster
shares it.

A :class:`SqlResponseCache` answers as :class:`~arbiter.providers.cache.ResponseCache`
does (same keys, same stored shape, what goes wrong degrades to a miss with one
warning) but keeps its answers in the table ``model_responses`` of any database
SQLAlchemy reaches: the run store's PostgreSQL (or SQLite) database, which every node
of a cluster reaches when the store does. The table is created on first use; deleting
its rows empties the cache and loses nothing else.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

from pydantic import ValidationError

from arbiter.providers.base import CompletionResponse

if TYPE_CHECKING:
    from sqlalchemy import Engine, Table
    from sqlalchemy.sql import Executable

__all__ = ["TABLE_NAME", "SqlResponseCache"]

TABLE_NAME = "model_responses"
"""The table the answers are kept in."""

_log = logging.getLogger(__name__)


class SqlResponseCache:
    """Provider answers in a table of a SQLAlchemy database, shared by every process
    that reaches it.

    Nothing is opened until the first lookup or write; :meth:`close` releases the
    connections (the next use opens them again).

    Args:
        url: The database's SQLAlchemy URL (the run store's).
        max_entry_bytes: Answers whose stored JSON is larger are not kept.
    """

    def __init__(self, url: str, *, max_entry_bytes: int = 1024 * 1024) -> None:
        self.url = url
        self.max_entry_bytes = max_entry_bytes
        self._engine: Engine | None = None
        self._table: Table | None = None
        self._lock = threading.Lock()
        self._broken = False
        self._warned = False

    def __repr__(self) -> str:
        from sqlalchemy.engine import make_url

        try:
            shown = make_url(self.url).render_as_string(hide_password=True)
        except Exception:  # a malformed URL is shown as nothing rather than raising
            shown = "?"
        return f"SqlResponseCache({shown!r})"

    def get(self, key: str) -> CompletionResponse | None:
        """The answer stored under ``key``; None on a miss (or anything unreadable)."""
        from sqlalchemy import select
        from sqlalchemy.exc import SQLAlchemyError

        opened = self._open()
        if opened is None:
            return None
        engine, table = opened
        try:
            with engine.connect() as connection:
                body = connection.execute(
                    select(table.c.response).where(table.c.key == key)
                ).scalar_one_or_none()
        except SQLAlchemyError as exc:
            self._trouble("a lookup failed, the model is asked", exc)
            return None
        if body is None:
            return None
        try:
            return CompletionResponse.model_validate_json(body)
        except (ValidationError, ValueError, TypeError) as exc:
            self._trouble("an entry does not decode, the model is asked", exc)
            return None

    def put(self, key: str, response: CompletionResponse) -> bool:
        """Store ``response`` under ``key`` (a later answer replaces an earlier one);
        False when it was not kept (too large, or the database refused it)."""
        from sqlalchemy.exc import SQLAlchemyError

        try:
            body = response.model_dump_json(exclude={"cached"})
        except ValueError:
            return False
        if len(body.encode("utf-8")) > self.max_entry_bytes:
            return False
        opened = self._open()
        if opened is None:
            return False
        engine, table = opened
        row = {"key": key, "response": body, "created": time.time()}
        try:
            with engine.begin() as connection:
                connection.execute(_upsert(engine, table, row))
        except SQLAlchemyError as exc:
            self._trouble("an answer was not stored", exc)
            return False
        return True

    def entries(self) -> int:
        """How many answers the table holds."""
        from sqlalchemy import func, select
        from sqlalchemy.exc import SQLAlchemyError

        opened = self._open()
        if opened is None:
            return 0
        engine, table = opened
        try:
            with engine.connect() as connection:
                return int(connection.execute(select(func.count()).select_from(table)).scalar_one())
        except SQLAlchemyError:
            return 0

    def close(self) -> None:
        """Release the connections (the next use opens them again)."""
        with self._lock:
            engine, self._engine = self._engine, None
        if engine is not None:
            engine.dispose()

    def _open(self) -> tuple[Engine, Table] | None:
        """The engine and the table (created if missing); None once the database has
        proved unusable: every lookup is then a miss."""
        from sqlalchemy import Column, Float, MetaData, String, Table, Text, create_engine
        from sqlalchemy.exc import ArgumentError, SQLAlchemyError

        with self._lock:
            if self._broken:
                return None
            if self._engine is not None and self._table is not None:
                return self._engine, self._table
            table = Table(
                TABLE_NAME,
                MetaData(),
                Column("key", String(64), primary_key=True),
                Column("response", Text, nullable=False),
                Column("created", Float, nullable=False),
            )
            try:
                # SQLite: wait for another process's write lock as the store does.
                sqlite = self.url.startswith("sqlite")
                engine = create_engine(self.url, connect_args={"timeout": 5.0} if sqlite else {})
                table.create(engine, checkfirst=True)
            except (SQLAlchemyError, ArgumentError, ImportError, ValueError) as exc:
                text = str(getattr(exc, "orig", exc)).lower()
                if "already exists" not in text and "duplicate" not in text:
                    self._broken = True
                    self._trouble("the database is unusable, running without the cache", exc)
                    return None
                # Another process created the table between our look and our create.
            self._engine, self._table = engine, table
            return engine, table

    def _trouble(self, what: str, exc: BaseException) -> None:
        """Log a problem: the cache's first as a warning, the others at debug level."""
        first, self._warned = not self._warned, True
        log = _log.warning if first else _log.debug
        log("model-call cache %r: %s: %s", self, what, exc)


def _upsert(engine: Engine, table: Table, row: dict[str, object]) -> Executable:
    """``INSERT`` that replaces the row of the same key, in the database's own words."""
    name = engine.dialect.name
    if name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        statement = pg_insert(table).values(**row)
        return statement.on_conflict_do_update(
            index_elements=[table.c.key], set_={"response": statement.excluded.response}
        )
    if name == "sqlite":
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert

        lite = sqlite_insert(table).values(**row)
        return lite.on_conflict_do_update(
            index_elements=[table.c.key], set_={"response": lite.excluded.response}
        )
    from sqlalchemy import insert

    return insert(table).values(**row)
