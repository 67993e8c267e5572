"""The assurance inbox: trust events to work through, and acknowledging them.

One owner sees the events about its own agents; an administrator (``viewer=None``)
sees every owner's. An event of another owner is "not found", never "forbidden".
"""

from __future__ import annotations

from datetime import datetime

from arbiter.contract.trust import TrustEvent
from arbiter.errors import InputError
from arbiter.store import Store
from arbiter.store.trust_repository import add_event_note, count_unacked, list_events

__all__ = ["ack_event", "inbox", "resolve_event", "unacked_count"]

_MAX_LIMIT = 500


def inbox(
    store: Store,
    *,
    viewer: str | None = None,
    agent: str | None = None,
    kind: str | None = None,
    unacked: bool = False,
    before: int | None = None,
    limit: int = 50,
) -> list[TrustEvent]:
    """Events newest first (``before``: continue after that event id).

    Raises:
        InputError: ``limit`` outside [1, 500].
    """
    if not 1 <= limit <= _MAX_LIMIT:
        raise InputError(f"The 'limit' parameter of inbox must be in [1, 500]. Got {limit}.")
    return list_events(
        store, viewer=viewer, agent=agent, kind=kind, unacked=unacked, before=before, limit=limit
    )


def unacked_count(store: Store, *, viewer: str | None = None) -> int:
    """How many events nobody has acknowledged."""
    return count_unacked(store, viewer=viewer)


def ack_event(
    store: Store,
    event_id: int,
    *,
    by: str,
    note: str = "",
    viewer: str | None = None,
    now: datetime | None = None,
) -> TrustEvent:
    """Acknowledge an event (once).

    Raises:
        StoreError: No such event ``viewer`` may see, or it is acknowledged already.
    """
    return add_event_note(store, event_id, "ack", by=by, note=note, viewer=viewer, now=now)


def resolve_event(
    store: Store,
    event_id: int,
    *,
    by: str,
    note: str = "",
    viewer: str | None = None,
    now: datetime | None = None,
) -> TrustEvent:
    """Resolve an event (once)."""
    return add_event_note(store, event_id, "resolve", by=by, note=note, viewer=viewer, now=now)
