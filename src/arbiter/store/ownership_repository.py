"""Who owns what: recording the owner of a record and asking who may see it.

A viewer is an owner id (an API key's id) or None, which sees everything (an admin key,
or a server with no key configured). Kinds are short nouns: ``run``, ``jury_run``,
``verdict``, ``annotation``, ``trajectory``.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Select, select

from arbiter.errors import StoreError
from arbiter.store.jury_models import JuryRunRow
from arbiter.store.models import RunRow
from arbiter.store.ownership_models import RecordOwnerRow
from arbiter.store.repository import Store

__all__ = ["is_visible", "owned_ids", "owner_of", "set_owner", "set_owners", "visible_id"]

_TABLES: dict[str, tuple[Any, str]] = {"run": (RunRow, "run"), "jury_run": (JuryRunRow, "jury run")}


def set_owners(store: Store, kind: str, record_ids: Iterable[str], owner: str) -> None:
    """Record ``owner`` as the owner of each record (a record keeps its first owner)."""
    ids = list(dict.fromkeys(record_ids))
    if not ids:
        return
    now = datetime.now(UTC)
    with store.guard(f"record the owner of a {kind}"), store.session() as s, s.begin():
        known = set(
            s.scalars(
                select(RecordOwnerRow.record_id).where(
                    RecordOwnerRow.kind == kind, RecordOwnerRow.record_id.in_(ids)
                )
            ).all()
        )
        s.add_all(
            RecordOwnerRow(kind=kind, record_id=i, owner=owner, created_at=now)
            for i in ids
            if i not in known
        )


def set_owner(store: Store, kind: str, record_id: str, owner: str) -> None:
    """Record ``owner`` as the owner of one record."""
    set_owners(store, kind, [record_id], owner)


def owner_of(store: Store, kind: str, record_id: str) -> str | None:
    """The owner of a record, or None when nobody owns it."""
    with store.guard(f"read the owner of a {kind}"), store.session() as session:
        row = session.get(RecordOwnerRow, (kind, record_id))
        return None if row is None else row.owner


def is_visible(store: Store, kind: str, record_id: str, viewer: str | None) -> bool:
    """Whether ``viewer`` may see the record (None sees everything)."""
    return viewer is None or owner_of(store, kind, record_id) == viewer


def owned_ids(kind: str, owner: str) -> Select[Any]:
    """A subquery of the ids of ``kind`` that ``owner`` owns, for ``column.in_(...)``."""
    return select(RecordOwnerRow.record_id).where(
        RecordOwnerRow.kind == kind, RecordOwnerRow.owner == owner
    )


def visible_id(store: Store, kind: str, key: str, viewer: str | None) -> str:
    """The id of the one ``kind`` record (``run``, ``jury_run``) ``viewer`` may see whose id
    is ``key`` or starts with it.

    Only records the viewer may see are matched, so the answer for a prefix shared with
    another owner's records is the same as if they did not exist; the message names
    neither them nor the store.

    Raises:
        StoreError: No visible record matches, or more than one does.
    """
    table, what = _TABLES[kind]
    column = table.id
    query = select(column)
    if viewer is not None:
        query = query.where(column.in_(owned_ids(kind, viewer)))
    with store.guard(f"read a {what}"), store.session() as session:
        exact = session.scalar(query.where(column == key))
        if exact is not None:
            return str(exact)
        matches = session.scalars(
            query.where(column.startswith(key, autoescape=True)).limit(2)
        ).all()
    if len(matches) == 1:
        return str(matches[0])
    found = f"no {what}" if not matches else f"more than one {what}"
    raise StoreError(f"{found} matches id {key!r}")
