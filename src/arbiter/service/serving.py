"""Whether ``arbiter serve`` may bind an address, how it guards itself, and what it says.

With no API key in the store the server is open (every request reads and writes
everything), which is only safe on this machine: it binds loopback only. Once a key
exists every ``/v1`` request needs one and any address is allowed; a server that starts
with keys keeps requiring them, so revoking the last one locks it instead of opening it.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from arbiter.errors import InputError
from arbiter.store import Store
from arbiter.store.api_key_repository import count_api_keys

__all__ = ["ServePlan", "check_bind", "is_loopback"]


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (127.0.0.0/8, ::1, localhost)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class ServePlan:
    """How a server about to start is set up."""

    line: str
    """What it says at start: where it listens, whether it is open, its store."""
    require_keys: bool
    """Whether it requires a key on every request but health for as long as it runs."""
    host_name: str | None
    """The name it was told to bind, when that is a name rather than an address: requests
    naming it in ``Host`` are answered too."""


def check_bind(store: Store, host: str, port: int, *, require_keys: bool = False) -> ServePlan:
    """How a server on ``host:port`` over ``store`` starts, if it may bind there.

    Args:
        store: The store it serves.
        host: The address (or name) it binds.
        port: The port.
        require_keys: Whether keys are required even when none exists yet
            (``ARBITER_SERVER_REQUIRE_KEYS``).

    Raises:
        InputError: No API key is configured and ``host`` is not a loopback address, or
            keys are required and none exists (the server could answer nothing).
    """
    n_keys = count_api_keys(store)
    if n_keys == 0 and not is_loopback(host):
        raise InputError(
            f"--host {host}: no API key is configured, so the server binds loopback only; "
            "create one first: arbiter keys create --name NAME"
        )
    if n_keys == 0 and require_keys:
        raise InputError(
            "ARBITER_SERVER_REQUIRE_KEYS is set and no API key exists, so the server would "
            "refuse every request; create one first: arbiter keys create --name NAME"
        )
    shown = f"[{host}]" if ":" in host else host
    access = (
        f"{n_keys} API key(s) configured: every /v1 request needs one, for as long as it runs"
        if n_keys
        else "open: no API key configured, so loopback only"
    )
    return ServePlan(
        line=f"arbiter serve: http://{shown}:{port} ({access}); store {store.describe()}",
        require_keys=n_keys > 0,
        host_name=None if _is_address(host) or host in ("", "localhost") else host.lower(),
    )
