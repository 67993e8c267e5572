"""What a route needs from the app, as FastAPI dependencies: settings, store, templates.

The app factory puts them on ``app.state``; routes ask for them here, so a test that
builds the app in-process with its own store gets exactly that store everywhere.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from fastapi import Request

if TYPE_CHECKING:
    from fastapi.templating import Jinja2Templates

    from arbiter.config import Settings
    from arbiter.store import Store

__all__ = ["app_settings", "app_store", "templates"]


def app_settings(request: Request) -> Settings:
    """The settings the app was built with."""
    return cast("Settings", request.app.state.settings)


def app_store(request: Request) -> Store:
    """The store the app was built with (the CLI's store by default)."""
    return cast("Store", request.app.state.store)


def templates(request: Request) -> Jinja2Templates:
    """The page templates: Jinja2 with autoescape on for every template."""
    return cast("Jinja2Templates", request.app.state.templates)
