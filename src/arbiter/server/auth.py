"""Who is asking: API keys and the principal of a request.

A request names its key as ``Authorization: Bearer <key>`` or ``X-API-Key: <key>``.
With no key in the store the server is open (every request is an admin without a
name) and ``arbiter serve`` binds loopback only; once a key exists, every ``/v1``
request needs one. A key sees the records it made; an admin key sees all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from arbiter.server.deps import app_store
from arbiter.server.errors import ApiError
from arbiter.store import Store
from arbiter.store.api_key_repository import count_api_keys, find_api_key

__all__ = ["OPEN", "Principal", "principal", "require_admin"]

_bearer = HTTPBearer(auto_error=False, description="An API key: `Authorization: Bearer <key>`.")
_header = APIKeyHeader(
    name="X-API-Key", auto_error=False, description="An API key, as `X-API-Key: <key>`."
)


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
) -> Principal:
    """The principal of a request, from its key.

    Raises:
        ApiError: 401 when keys are configured and the request has none, or an unknown one.
    """
    key = bearer.credentials if bearer is not None else header
    if key:
        found = find_api_key(store, key)
        if found is None:
            raise ApiError(401, "the API key is not one this server knows")
        return Principal(key_id=found.id, admin=found.admin)
    if count_api_keys(store) == 0:
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
