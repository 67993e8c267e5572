"""``arbiter serve``: the REST API and the pages, on uvicorn, over the CLI's store.

With no API key in the store the server is open, so it binds loopback only and says
so; a non-loopback ``--host`` is refused until a key exists (``arbiter keys create``).
"""

from __future__ import annotations

from typing import Annotated

import typer

from arbiter.cli.app import app
from arbiter.cli.common import note, open_store, settings

__all__ = ["serve"]


@app.command()
def serve(
    host: Annotated[
        str, typer.Option("--host", help="Address to bind (non-loopback needs an API key).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port to bind.")] = 8080,
) -> None:
    """Serve the REST API (/v1, OpenAPI at /v1/openapi.json) and the web UI."""
    import uvicorn

    from arbiter.errors import InputError
    from arbiter.server.app import create_app
    from arbiter.server.auth import is_loopback
    from arbiter.store.api_key_repository import count_api_keys

    config = settings()
    store = open_store(config)
    n_keys = count_api_keys(store)
    if n_keys == 0 and not is_loopback(host):
        store.close()
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
    note(f"arbiter serve: http://{shown}:{port} ({access}); store {store.describe()}")
    note("  REST under /v1 (docs /v1/docs, OpenAPI /v1/openapi.json); Ctrl-C stops")
    try:
        uvicorn.run(create_app(config, store=store), host=host, port=port, log_level="warning")
    finally:
        store.close()
