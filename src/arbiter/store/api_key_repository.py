"""Creating and checking the server's API keys through a :class:`~arbiter.store.Store`.

The key itself is shown once, by :func:`create_api_key`; the store keeps its SHA-256.
A key reads ``arb_<id>_<secret>``: the id names the key in listings and ownership
records, the secret is what makes it a key.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import delete, func, select

from arbiter.store.api_key_models import ApiKeyRow
from arbiter.store.repository import Store

__all__ = [
    "ApiKeyInfo",
    "count_api_keys",
    "create_api_key",
    "find_api_key",
    "list_api_keys",
    "revoke_api_key",
]


@dataclass(frozen=True)
class ApiKeyInfo:
    """An API key as the store knows it (without the key)."""

    id: str
    """The key's id: what ownership records name."""
    name: str
    """The name it was created with."""
    admin: bool
    """Whether it sees every record."""
    created_at: datetime
    """When it was created."""


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def _info(row: ApiKeyRow) -> ApiKeyInfo:
    created = row.created_at  # SQLite hands back naive datetimes; they were written in UTC
    created = created if created.tzinfo is not None else created.replace(tzinfo=UTC)
    return ApiKeyInfo(id=row.id, name=row.name, admin=row.admin, created_at=created)


def create_api_key(store: Store, name: str, *, admin: bool = False) -> tuple[ApiKeyInfo, str]:
    """Make a key, store its digest, and return its record and the key (shown once).

    Args:
        store: The store.
        name: What the key is for, for listings.
        admin: Whether the key sees every record.
    """
    key_id = secrets.token_hex(4)
    key = f"arb_{key_id}_{secrets.token_urlsafe(32)}"
    row = ApiKeyRow(
        id=key_id, name=name, digest=_digest(key), admin=admin, created_at=datetime.now(UTC)
    )
    with store.guard("store an API key"), store.session() as session, session.begin():
        session.add(row)
    return _info(row), key


def find_api_key(store: Store, key: str) -> ApiKeyInfo | None:
    """The key's record, or None when the store does not know ``key``."""
    with store.guard("check an API key"), store.session() as session:
        row = session.scalar(select(ApiKeyRow).where(ApiKeyRow.digest == _digest(key)))
        return None if row is None else _info(row)


_COUNT_KEYS = select(func.count()).select_from(ApiKeyRow)


def count_api_keys(store: Store) -> int:
    """How many API keys exist (none: the server is open, and binds loopback only)."""
    # Asked on every request: a plain connection and a statement built once, not an ORM
    # session (a quarter of a millisecond less per request).
    with store.guard("count API keys"), store.engine.connect() as connection:
        return int(connection.scalar(_COUNT_KEYS) or 0)


def list_api_keys(store: Store) -> list[ApiKeyInfo]:
    """Every key, oldest first."""
    with store.guard("list API keys"), store.session() as session:
        rows = session.scalars(select(ApiKeyRow).order_by(ApiKeyRow.created_at)).all()
        return [_info(row) for row in rows]


def revoke_api_key(store: Store, key_id: str) -> ApiKeyInfo | None:
    """Delete the key ``key_id`` (its records keep it as their owner); None if unknown.

    With the last key gone a server started with keys is locked (it refuses every request
    but health); one started afterwards is open and binds loopback only.
    """
    with store.guard("revoke an API key"), store.session() as session, session.begin():
        row = session.get(ApiKeyRow, key_id)
        if row is None:
            return None
        info = _info(row)
        session.execute(delete(ApiKeyRow).where(ApiKeyRow.id == key_id))
        return info
