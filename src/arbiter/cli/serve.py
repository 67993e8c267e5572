"""``arbiter serve``: the REST API and the pages, on uvicorn, over the CLI's store.

With no API key in the store the server is open, so it binds loopback only and says
so; a non-loopback ``--host`` is refused until a key exists (``arbiter keys create``).
A server started with keys requires them for as long as it runs: revoking the last one
locks it (every request but health refused, and its log says so), it never opens.
The app is named to uvicorn by its factory's import path: the CLI layer does not import
the server layer (they are siblings), so what is decided here reaches the factory as
settings in the environment (``ARBITER_SERVER_REQUIRE_KEYS``,
``ARBITER_SERVER_ALLOWED_HOSTS``).

``--workers N`` runs N server processes on one port. Everything a request needs is in
the store, so any process answers any request; that needs a store several processes
write at once, PostgreSQL: with SQLite, more than one process is refused (its one writer
at a time would make requests wait on each other's locks, and fail past the timeout).
"""

from __future__ import annotations

from typing import Annotated

import typer

from arbiter.cli.app import app
from arbiter.cli.common import note, open_store, settings

__all__ = ["serve"]

APP_FACTORY = "arbiter.server.app:create_app"
"""What uvicorn builds: ``create_app()``, over the settings of the environment."""


@app.command()
def serve(
    host: Annotated[
        str, typer.Option("--host", help="Address to bind (non-loopback needs an API key).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port to bind.")] = 8080,
    workers: Annotated[
        int,
        typer.Option("--workers", min=1, max=64, help="Server processes (over 1: PostgreSQL)."),
    ] = 1,
) -> None:
    """Serve the REST API (/v1, OpenAPI at /v1/openapi.json) and the web UI."""
    import logging
    import os
    import sys

    import uvicorn

    from arbiter.errors import InputError
    from arbiter.service.serving import check_bind

    config = settings()
    store = open_store(config)
    try:
        if workers > 1 and store.engine.dialect.name != "postgresql":
            raise InputError(
                f"--workers {workers}: more than one server process needs a PostgreSQL "
                f"store (ARBITER_DB_URL=postgresql+psycopg://...); {store.describe()} "
                "serves one process"
            )
        plan = check_bind(store, host, port, require_keys=config.server_require_keys)
    finally:
        store.close()
    if plan.require_keys:
        os.environ["ARBITER_SERVER_REQUIRE_KEYS"] = "true"
    if plan.host_name is not None:
        named = ",".join(filter(None, [config.server_allowed_hosts, plan.host_name]))
        os.environ["ARBITER_SERVER_ALLOWED_HOSTS"] = named
    # The server's own warnings (a locked server, a failed request) go to stderr.
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    server_log = logging.getLogger("arbiter.server")
    server_log.addHandler(handler)
    server_log.setLevel(logging.WARNING)
    note(plan.line + (f" ({workers} processes)" if workers > 1 else ""))
    note("  REST under /v1 (docs /v1/docs, OpenAPI /v1/openapi.json); Ctrl-C stops")
    uvicorn.run(
        APP_FACTORY, factory=True, host=host, port=port, log_level="warning", workers=workers
    )
