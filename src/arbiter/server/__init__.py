"""``arbiter serve``: the REST API under ``/v1`` and the web UI, one FastAPI app.

The server is a thin layer over :mod:`arbiter.service`: every route calls the same
library functions as the CLI, against the same store, so a run made in the terminal
shows up at once. Importing this package loads nothing; FastAPI is imported by
:func:`create_app`'s module on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from arbiter.server.app import create_app

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from arbiter.server.app import create_app

        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
