"""Serve an ASGI app with uvicorn on a real socket (127.0.0.1, port 0) for a test."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

__all__ = ["serve_on_free_port"]

_START_TIMEOUT_S = 10.0


class _Server(uvicorn.Server):
    """A uvicorn server that signals an event once it accepts connections."""

    def __init__(self, config: uvicorn.Config, ready: threading.Event) -> None:
        super().__init__(config)
        self.ready = ready

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        self.ready.set()


@contextmanager
def serve_on_free_port(app: Any) -> Iterator[str]:
    """Serve ``app`` in a background thread; yield its base URL (``http://127.0.0.1:N``).

    The socket is bound before the server starts, so the port is the kernel's pick and
    nothing can take it in between. The server is stopped and its thread joined on exit.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    ready = threading.Event()
    config = uvicorn.Config(app, log_level="warning", lifespan="off")
    server = _Server(config, ready)

    def run() -> None:
        try:
            server.run(sockets=[sock])
        finally:
            ready.set()  # wake the waiter if the server failed to start

    thread = threading.Thread(target=run, name=f"uvicorn-{port}", daemon=True)
    thread.start()
    try:
        if not ready.wait(_START_TIMEOUT_S) or not server.started:
            raise RuntimeError("the local uvicorn server did not start")
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=_START_TIMEOUT_S)
        sock.close()
