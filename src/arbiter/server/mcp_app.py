"""``/mcp``: Arbiter's MCP server over streamable HTTP, behind the REST API's keys.

Every request to ``/mcp`` is let in by the same rule as a ``/v1`` request
(:func:`arbiter.server.auth.principal`: ``Authorization: Bearer <key>`` or ``X-API-Key``;
an open server lets everyone in as its admin) and answered 401 in the API's error shape
otherwise, before the MCP layer reads it. The key then decides what each tool sees and
who owns what it makes, as on the REST API: a key sees its own records, an admin key all
of them, and only an admin may ``evaluate`` (it runs a system on this machine).

The server is stateless: each POST is its own MCP exchange, authenticated on its own,
its progress notifications streamed on its answer, so no session outlives the key that
opened it. The Host and Origin checks and the body limit of the app apply as for every
route.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from fastapi import FastAPI
from fastapi.security import HTTPAuthorizationCredentials
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from arbiter.errors import InputError
from arbiter.server.auth import Principal, auth_gate, principal
from arbiter.server.errors import ApiError, error_json
from arbiter.service.mcp_server import build_server
from arbiter.service.mcp_tools import Caller, Engines, ToolScope

__all__ = ["MCP_PATH", "McpEndpoint", "mount_mcp"]

MCP_PATH = "/mcp"
"""Where the MCP server is served."""

_CALLER = "arbiter.mcp.caller"
"""The scope key the caller of a request is kept under, for the tools to read."""


def _who(request: Request) -> Principal:
    """The request's principal, by the REST API's rule (raises ``ApiError`` 401)."""
    app = request.app
    authorization = request.headers.get("authorization", "")
    scheme, _, credentials = authorization.partition(" ")
    bearer = (
        HTTPAuthorizationCredentials(scheme=scheme, credentials=credentials.strip())
        if scheme.lower() == "bearer" and credentials.strip()
        else None
    )
    return principal(app.state.store, bearer, request.headers.get("x-api-key"), auth_gate(request))


async def _resolve(ctx: ServerRequestContext[Any]) -> ToolScope:
    """The store and caller of the HTTP request a tool call came in."""
    request = ctx.request
    scope = getattr(request, "scope", None)
    caller = scope.get(_CALLER) if isinstance(scope, dict) else None
    if not isinstance(caller, Caller) or scope is None:
        raise InputError("this MCP request did not come through Arbiter's /mcp endpoint")
    state = scope["app"].state
    engines = getattr(state, "mcp_engines", None)
    if not isinstance(engines, Engines):
        engines = state.mcp_engines = Engines()
    return ToolScope(store=state.store, caller=caller, settings=state.settings, engines=engines)


class McpEndpoint:
    """The ASGI endpoint of ``/mcp``: authenticate, then hand over to the MCP transport.

    Args:
        server: The MCP server it serves.
    """

    def __init__(self, server: Server[Any]) -> None:
        self.server = server
        self._manager: StreamableHTTPSessionManager | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Serve for the app's lifespan (a transport can run once: a new one each time)."""
        manager = StreamableHTTPSessionManager(
            app=self.server,
            stateless=True,
            # The app's HostCheck answers for Host and Origin, for every route alike.
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        async with manager.run():
            self._manager = manager
            try:
                yield
            finally:
                self._manager = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        try:
            who = await anyio.to_thread.run_sync(_who, Request(scope, receive))
        except ApiError as exc:
            await _refuse(send, exc.status, exc.message)
            return
        manager = self._manager
        if manager is None:
            await _refuse(send, 503, "the MCP endpoint is not running (the app was not started)")
            return
        scope[_CALLER] = Caller(viewer=who.viewer, owner=who.owner, admin=who.admin)
        await manager.handle_request(scope, receive, send)


async def _refuse(send: Send, status: int, message: str) -> None:
    body = json.dumps(error_json(status, message), separators=(",", ":")).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def mount_mcp(app: FastAPI) -> McpEndpoint:
    """Serve the MCP server at ``/mcp`` of ``app``, running with the app's lifespan.

    Returns:
        The endpoint (tests reach its server through it).
    """
    endpoint = McpEndpoint(build_server(_resolve))
    # A route, not a mount: ``/mcp`` itself is the endpoint (a mount answers ``/mcp/``).
    app.router.routes.append(Route(MCP_PATH, endpoint=endpoint, include_in_schema=False))
    outer = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(instance: Any) -> AsyncIterator[Any]:
        async with endpoint.running(), outer(instance) as state:
            yield state

    app.router.lifespan_context = lifespan
    return endpoint
