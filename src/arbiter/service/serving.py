"""Whether ``arbiter serve`` may bind an address, and the line it says at start.

With no API key in the store the server is open (every request reads and writes
everything), which is only safe on this machine: it binds loopback only. Once a key
exists every ``/v1`` request needs one and any address is allowed.
"""

from __future__ import annotations

import ipaddress

from arbiter.errors import InputError
from arbiter.store import Store
from arbiter.store.api_key_repository import count_api_keys

__all__ = ["check_bind", "is_loopback"]


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (127.0.0.0/8, ::1, localhost)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(store: Store, host: str, port: int) -> str:
    """The start-up line of a server on ``host:port`` over ``store``, if it may bind there.

    Raises:
        InputError: No API key is configured and ``host`` is not a loopback address.
    """
    n_keys = count_api_keys(store)
    if n_keys == 0 and not is_loopback(host):
        raise InputError(
            f"--host {host}: no API key is configured, so the server binds loopback only; "
            "create one first: arbiter keys create --name NAME"
        )
    shown = f"[{host}]" if ":" in host else host
    access = (
        f"{n_keys} API key(s) configured: every /v1 request needs one"
        if n_keys
        else "open: no API key configured, so loopback only"
    )
    return f"arbiter serve: http://{shown}:{port} ({access}); store {store.describe()}"
