"""``arbiter mcp``: Arbiter's MCP server over stdio, for a desktop assistant or an IDE.

The client starts the command and speaks MCP on its standard input and output; the
server works on the store every command uses (``ARBITER_DB_URL`` / ``ARBITER_HOME``) as
the user at this machine, so it sees every record, as ``arbiter runs`` does. Nothing but
the protocol is written to standard output; the server's own warnings go to stderr. The
same server is mounted at ``/mcp`` by ``arbiter serve``, behind the API keys.
"""

from __future__ import annotations

import typer

from arbiter.cli.app import app

__all__ = ["mcp"]


@app.command()
def mcp() -> None:
    """Serve Arbiter's MCP server over stdio, for an MCP client (a desktop assistant, an
    IDE) that starts this command: tools to judge, score, run, report, compare and verify,
    a resource per run, a prompt for regressions (docs/mcp.md)."""
    import logging
    import sys

    import anyio
    from mcp.server.stdio import stdio_server

    from arbiter.cli.common import open_store, settings
    from arbiter.service.mcp_server import build_server
    from arbiter.service.mcp_tools import LOCAL, Engines, ToolScope

    config = settings()
    store = open_store(config)
    scope = ToolScope(store=store, caller=LOCAL, settings=config, engines=Engines())

    async def resolve(_: object) -> ToolScope:
        return scope

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("arbiter mcp: %(message)s"))
    logging.getLogger("arbiter.mcp").addHandler(handler)
    server = build_server(resolve)

    async def serve() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    try:
        anyio.run(serve)
    except KeyboardInterrupt:
        raise typer.Exit(0) from None
    finally:
        store.close()
