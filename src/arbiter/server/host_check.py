"""A guard against DNS rebinding and cross-site requests: the ``Host`` and ``Origin`` checks.

A page on another site can make a browser send requests to a server on this machine by
pointing its own name at 127.0.0.1 (DNS rebinding): the browser then treats the answers
as the other site's own. Such a request names the other site in its ``Host`` header, so
the server answers only the names it is reached by:

- the address the request reached it on (the bound address, or the interface of a
  wildcard bind), compared without the port;
- on a loopback connection, ``localhost`` and the loopback addresses;
- the names of ``ARBITER_SERVER_ALLOWED_HOSTS`` (``*`` answers any).

Any other ``Host`` is answered 400. A request that changes state (any method but GET,
HEAD and OPTIONS) from a page of another origin is answered 403: its ``Origin`` must be
the server's own (same host and port as ``Host``) or name an allowed host. A request
without ``Origin`` (curl, an SDK, an OpenTelemetry exporter) is not a browser's
cross-site request and passes.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from arbiter.server.errors import send_error

__all__ = ["HostCheck", "host_of", "is_loopback_name"]

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_DEFAULT_PORTS = frozenset({"80", "443"})


def host_of(value: str) -> tuple[str, str | None]:
    """A ``Host`` value (``name``, ``name:port``, ``[v6]:port``) as (lower-case name, port);
    the port is None when absent or the default of http or https."""
    value = value.strip().lower()
    if value.startswith("["):
        name, _, rest = value[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else None
    else:
        name, sep, port_text = value.rpartition(":")
        if not sep or not port_text.isdigit():
            name, port = value, None
        else:
            port = port_text
    port = None if port in _DEFAULT_PORTS or not port else port
    return name.rstrip("."), port


def _ip(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(name)
    except ValueError:
        return None


def is_loopback_name(name: str) -> bool:
    """Whether ``name`` (a host name, no port) means this machine: localhost or a loopback IP."""
    if name == "localhost" or name.endswith(".localhost"):
        return True
    address = _ip(name)
    return address is not None and address.is_loopback


class HostCheck:
    """Answer 400 to a request whose ``Host`` the server is not reached by, and 403 to a
    state-changing request from another origin (see the module docstring).

    Args:
        app: The ASGI app it wraps.
        allowed: Host names answered besides the connection's own address (``*``: any).
    """

    def __init__(self, app: ASGIApp, allowed: Iterable[str] = ()) -> None:
        self.app = app
        self.allowed = frozenset(host_of(name)[0] for name in allowed)
        self.any_host = "*" in self.allowed

    def host_allowed(self, name: str, server: Sequence[Any] | None) -> bool:
        """Whether a request that named ``name`` and reached ``server`` may be answered."""
        if self.any_host or name in self.allowed:
            return True
        local = str(server[0] if server else "").lower().strip("[]")
        if name == local:
            return True
        local_ip, named_ip = _ip(local), _ip(name)
        if local_ip is not None and named_ip is not None and local_ip == named_ip:
            return True
        return (not local or is_loopback_name(local)) and is_loopback_name(name)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {
            name.decode("latin-1"): value.decode("latin-1")
            for name, value in scope.get("headers", ())
            if name in (b"host", b"origin")
        }
        given = headers.get("host")
        server = scope.get("server")
        if given is not None:
            name, _ = host_of(given)
            if not self.host_allowed(name, server):
                await _refuse(
                    send,
                    400,
                    f"the Host header names {name[:100]!r}, which this server is not reached "
                    "by (a guard against DNS rebinding); to serve it under that name, add it "
                    "to ARBITER_SERVER_ALLOWED_HOSTS",
                )
                return
        origin = headers.get("origin")
        method = str(scope.get("method", "GET")).upper()
        cross_site = origin is not None and not self._origin_allowed(origin, given)
        if cross_site and method not in _SAFE_METHODS:
            await _refuse(
                send,
                403,
                f"the request comes from a page of {str(origin)[:100]!r}, not one of this "
                "server's own: requests that change state are taken only from its own "
                "pages or clients that send no Origin (ARBITER_SERVER_ALLOWED_HOSTS "
                "lists the hosts whose pages may)",
            )
            return
        await self.app(scope, receive, send)

    def _origin_allowed(self, origin: str, host: str | None) -> bool:
        if origin.strip().lower() == "null":  # sandboxed frames, file: pages
            return False
        try:
            parts = urlsplit(origin.strip())
        except ValueError:
            return False
        if parts.scheme not in ("http", "https") or not parts.netloc:
            return False
        name, port = host_of(parts.netloc)
        if self.any_host or name in self.allowed:
            return True
        return host is not None and (name, port) == host_of(host)


async def _refuse(send: Send, status: int, message: str) -> None:
    await send_error(send, status, message)
