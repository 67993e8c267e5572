"""Who is asking: API keys and the principal of a request.

A request names its key as ``Authorization: Bearer <key>`` or ``X-API-Key: <key>``.
With no key in the store the server is open (every request is an admin without a
name) and ``arbiter serve`` binds loopback only; once a key exists, every ``/v1``
request needs one. A key sees the records it made; an admin key sees all.

Whether keys are required is decided when the app is built and only ever tightened:
an app built over a store with keys (or with ``ARBITER_SERVER_REQUIRE_KEYS``, which
``arbiter serve`` sets when it starts with keys), or one that has seen a key since, never
opens again. When its last key is revoked it is *locked*: every request but
``GET /v1/health`` is refused with 401 until a key is created, and its log says so.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Annotated, Literal

from fastapi import Depends, Request
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from arbiter.server.deps import app_store
from arbiter.server.errors import ApiError
from arbiter.store import Store
from arbiter.store.api_key_repository import count_api_keys, find_api_key

__all__ = [
    "LOCKED_MESSAGE",
    "OPEN",
    "AuthGate",
    "Principal",
    "auth_gate",
    "principal",
    "require_admin",
]

log = logging.getLogger("arbiter.server")

AuthMode = Literal["open", "keys", "locked"]

LOCKED_MESSAGE = (
    "this server requires API keys and none is left (the last one was revoked): it "
    "refuses every request until a key is created with `arbiter keys create`; it does "
    "not fall back to open"
)
"""What a locked server answers (401) to every request but health."""

_bearer = HTTPBearer(auto_error=False, description="An API key: `Authorization: Bearer <key>`.")
_header = APIKeyHeader(
    name="X-API-Key", auto_error=False, description="An API key, as `X-API-Key: <key>`."
)


class AuthGate:
    """Whether the app requires keys: set at start, tightened on the first key seen, never
    relaxed; logs once each time the server becomes locked (keys required, none left).

    Args:
        required: Whether keys are required from the start.
    """

    def __init__(self, required: bool) -> None:
        self._required = required
        self._locked = False
        self._lock = threading.Lock()

    @property
    def required(self) -> bool:
        """Whether every request but health needs a key."""
        return self._required

    def mode(self, n_keys: int) -> AuthMode:
        """The mode for a store holding ``n_keys`` keys now (a key seen latches ``keys``)."""
        if n_keys > 0:
            if not self._required or self._locked:  # the lock only when the mode changes
                with self._lock:
                    if self._locked:
                        log.warning("arbiter serve: an API key exists again: it is served")
                    self._required, self._locked = True, False
            return "keys"
        if not self._required:
            return "open"
        with self._lock:
            if not self._locked:
                self._locked = True
                log.warning("arbiter serve: locked: %s", LOCKED_MESSAGE)
        return "locked"


def auth_gate(request: Request) -> AuthGate:
    """The app's gate (``app.state.auth``; made open-until-a-key-is-seen when missing)."""
    gate = getattr(request.app.state, "auth", None)
    if not isinstance(gate, AuthGate):
        gate = request.app.state.auth = AuthGate(required=False)
    return gate


@dataclass(frozen=True)
class Principal:
    """The key a request came with (or the open server's anonymous admin)."""

    key_id: str | None
    """The key's id; None on an open server (no key configured)."""
    admin: bool
    """Whether it sees every record."""

    @property
    def viewer(self) -> str | None:
        """Whose records it sees: its own key id, or None for all of them."""
        return None if self.admin else self.key_id

    @property
    def owner(self) -> str | None:
        """Who owns what it makes: its key id (None on an open server: nobody)."""
        return self.key_id


OPEN = Principal(key_id=None, admin=True)
"""The principal of every request to a server with no key configured."""


def principal(
    store: Annotated[Store, Depends(app_store)],
    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    header: Annotated[str | None, Depends(_header)],
    gate: Annotated[AuthGate, Depends(auth_gate)],
) -> Principal:
    """The principal of a request, from its key.

    Raises:
        ApiError: 401 when keys are required and the request has none, or an unknown
            one, or when none is left (a locked server).
    """
    key = bearer.credentials if bearer is not None else header
    if key:
        found = find_api_key(store, key)
        if found is not None:
            gate.mode(1)
            return Principal(key_id=found.id, admin=found.admin)
    mode = gate.mode(count_api_keys(store))
    if mode == "locked":
        raise ApiError(401, LOCKED_MESSAGE)
    if key:
        raise ApiError(401, "the API key is not one this server knows")
    if mode == "open":
        return OPEN
    raise ApiError(
        401, "an API key is required: send 'Authorization: Bearer <key>' or 'X-API-Key: <key>'"
    )


def require_admin(who: Annotated[Principal, Depends(principal)]) -> Principal:
    """The principal, if it is an admin.

    Raises:
        ApiError: 403 for a key without the admin flag.
    """
    if not who.admin:
        raise ApiError(403, "this needs an admin key (arbiter keys create --admin)")
    return who
