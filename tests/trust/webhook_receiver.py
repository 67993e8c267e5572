"""A real local webhook receiver (uvicorn on 127.0.0.1), recording what it is sent."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn


@dataclass
class Received:
    """What the receiver got."""

    calls: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    arrived: threading.Event = field(default_factory=threading.Event)
    url: str = ""


@contextmanager
def webhook_receiver(status: int = 200) -> Iterator[Received]:
    """Serve a receiver answering ``status`` with ``{}``; yields what it received."""
    got = Received()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        got.calls.append((headers, body))
        got.arrived.set()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": b"{}"})

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)  # connections queue here until the server takes them: no wait needed
    got.url = f"http://127.0.0.1:{sock.getsockname()[1]}/hook"
    server = uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield got
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
