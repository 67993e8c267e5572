"""The app factory: one FastAPI app serving the REST API (``/v1``) and the pages.

Tests build the app in-process with their own store (``create_app(settings,
store=Store(url))``); ``arbiter serve`` builds it with the CLI's settings and store.

Whether the app requires API keys is decided here, once: when the store has keys (or
``ARBITER_SERVER_REQUIRE_KEYS`` is set) it requires them from then on, and losing the
last key locks it rather than opening it (:class:`arbiter.server.auth.AuthGate`).
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from arbiter import __version__
from arbiter.config import Settings
from arbiter.errors import StoreUnavailable
from arbiter.server import (
    api_agents,
    api_annotations,
    api_assurance,
    api_assurance_pack,
    api_core,
    api_docs,
    api_runs,
    api_trust,
)
from arbiter.server.auth import AuthGate
from arbiter.server.errors import install_error_handlers
from arbiter.server.host_check import HostCheck
from arbiter.server.limits import BodyLimit
from arbiter.server.mcp_app import mount_mcp
from arbiter.server.pages_agents import router as agent_pages
from arbiter.server.pages_annotations import router as annotation_pages
from arbiter.server.pages_fleet import router as fleet_pages
from arbiter.server.pages_runs import router as run_pages
from arbiter.server.pages_trust import router as trust_pages
from arbiter.store import Store
from arbiter.store.api_key_repository import count_api_keys

__all__ = ["create_app"]

_HERE = Path(__file__).parent


def create_app(settings: Settings | None = None, *, store: Store | None = None) -> FastAPI:
    """Build the app over ``store`` (default: the store ``settings`` names).

    Args:
        settings: Arbiter's settings; read from the environment when not given.
        store: The store to serve; built from ``settings.database_url()`` when not given.

    Returns:
        The FastAPI application, ready for uvicorn or an in-process test client.
    """
    settings = settings or Settings()
    app = FastAPI(
        title="Arbiter",
        version=__version__,
        summary="Judge what AI systems produce: runs, verdicts, agents, trajectories.",
        # Served by api_docs, behind the key like the API, from the package's assets.
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    app.state.settings = settings
    app.state.store = store = store or Store(settings.database_url())
    app.state.auth = AuthGate(required=settings.server_require_keys or _has_keys(store))
    # Jinja2Templates turns autoescape on for .html templates; every page is one.
    app.state.templates = Jinja2Templates(directory=str(_HERE / "templates"))
    app.mount("/static", StaticFiles(directory=str(_HERE / "static")), name="static")
    install_error_handlers(app)
    app.add_middleware(BodyLimit, max_bytes=settings.server_max_body_bytes)
    app.add_middleware(HostCheck, allowed=settings.allowed_hosts())  # outermost: first
    # Routers are included here, one module per resource (api_*.py) or page group
    # (pages_*.py); each module exposes `router`.
    app.include_router(agent_pages)
    app.include_router(annotation_pages)
    app.include_router(run_pages)
    app.include_router(trust_pages)
    app.include_router(fleet_pages)
    app.include_router(api_core.router)
    app.include_router(api_runs.router)
    app.include_router(api_annotations.router)
    app.include_router(api_agents.router)
    app.include_router(api_trust.router)
    app.include_router(api_assurance.router)
    app.include_router(api_assurance_pack.router)
    app.include_router(api_docs.router)
    mount_mcp(app)  # /mcp: the MCP server, behind the same keys
    return app


def _has_keys(store: Store) -> bool:
    """Whether the store holds an API key now; a store that does not answer yet decides
    nothing (the first key a request sees still latches the mode)."""
    try:
        return count_api_keys(store) > 0
    except StoreUnavailable:
        return False
