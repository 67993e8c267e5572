"""An in-test OTLP/HTTP receiver: keeps every export request body it is sent.

It accepts ``POST /v1/traces`` and ``POST /v1/logs`` (protobuf or JSON, gzip or not) and
answers with an empty export response, as a collector does. Decoding is left to the code
under test: the receiver hands back the bytes exactly as the exporter sent them
(decompressed), with their content type.
"""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.helpers.local_server import serve_on_free_port

__all__ = ["OtlpReceiver", "ReceivedExport", "serve_otlp_receiver"]


@dataclass(frozen=True)
class ReceivedExport:
    """One export request as it arrived."""

    signal: str
    """``traces`` or ``logs``."""
    body: bytes
    """The request body (decompressed)."""
    content_type: str
    """Its ``Content-Type`` header."""


@dataclass
class OtlpReceiver:
    """The receiver's URL and what it has received, in arrival order."""

    base_url: str = ""
    exports: list[ReceivedExport] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def traces_endpoint(self) -> str:
        return f"{self.base_url}/v1/traces"

    @property
    def logs_endpoint(self) -> str:
        return f"{self.base_url}/v1/logs"

    def keep(self, export: ReceivedExport) -> None:
        with self._lock:
            self.exports.append(export)

    def received(self, signal: str) -> list[ReceivedExport]:
        """The export requests of one signal (``traces`` or ``logs``) received so far."""
        with self._lock:
            return [e for e in self.exports if e.signal == signal]

    def clear(self) -> None:
        with self._lock:
            self.exports.clear()


def _app(receiver: OtlpReceiver) -> Starlette:
    def endpoint(signal: str) -> Route:
        async def receive(request: Request) -> Response:
            body = await request.body()
            if request.headers.get("content-encoding", "").lower() == "gzip":
                body = gzip.decompress(body)
            content_type = request.headers.get("content-type", "")
            receiver.keep(ReceivedExport(signal, body, content_type))
            if content_type.startswith("application/json"):
                return Response(b"{}", media_type="application/json")
            # An empty Export*ServiceResponse encodes as zero bytes.
            return Response(b"", media_type="application/x-protobuf")

        return Route(f"/v1/{signal}", receive, methods=["POST"])

    return Starlette(routes=[endpoint("traces"), endpoint("logs")])


@contextmanager
def serve_otlp_receiver() -> Iterator[OtlpReceiver]:
    """Run a receiver on 127.0.0.1 for the length of the block."""
    receiver = OtlpReceiver()
    with serve_on_free_port(_app(receiver)) as url:
        receiver.base_url = url
        yield receiver
