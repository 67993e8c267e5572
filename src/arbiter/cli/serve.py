"""``arbiter serve``: the REST API and the pages, on uvicorn, over the CLI's store.

With no API key in the store the server is open, so it binds loopback only and says
so; a non-loopback ``--host`` is refused until a key exists (``arbiter keys create``).
The app is named to uvicorn by its factory's import path: the CLI layer does not import
the server layer (they are siblings), and the factory reads the same settings.
"""

from __future__ import annotations

from typing import Annotated

import typer

from arbiter.cli.app import app
from arbiter.cli.common import note, open_store

__all__ = ["serve"]

APP_FACTORY = "arbiter.server.app:create_app"
"""What uvicorn builds: ``create_app()``, over the settings of the environment."""


@app.command()
def serve(
    host: Annotated[
        str, typer.Option("--host", help="Address to bind (non-loopback needs an API key).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port to bind.")] = 8080,
) -> None:
    """Serve the REST API (/v1, OpenAPI at /v1/openapi.json) and the web UI."""
    import uvicorn

    from arbiter.service.serving import check_bind

    store = open_store()
    try:
        line = check_bind(store, host, port)
    finally:
        store.close()
    note(line)
    note("  REST under /v1 (docs /v1/docs, OpenAPI /v1/openapi.json); Ctrl-C stops")
    uvicorn.run(APP_FACTORY, factory=True, host=host, port=port, log_level="warning")
