"""Outbound HTTP clients side by side, in one process: httpx, aiohttp and the ideal.

Run: ``python bench/http_client.py [--quick] [--repeat N]``.

A local service (``bench/harness_throughput.py``'s, served by uvicorn in a child process,
its own event loop and GIL) answers every POST after exactly 50 ms. Each client sends
``n`` JSON POSTs, ``c`` in flight at once, over one keep-alive pool, and parses every
answer. The ideal wall time is ``n x 0.05 / c``: what a client that costs nothing would
take. Two loads: ``c = 100`` (the harness benchmark's, 5,000 requests) and ``c = 16``
(``run_eval``'s default concurrency, 1,000 requests).

Clients, each alone:

- raw asyncio streams: a minimal keep-alive HTTP/1.1 client, the floor of the client side;
- ``aiohttp.ClientSession`` with an unbounded connector;
- ``httpx.AsyncClient`` with unbounded limits;
- ``httpx2.AsyncClient``: the client the ``mcp`` SDK takes;
- httpx over ``LifoPool``, a transport of this script that keeps httpcore's connections
  on a stack per origin, so taking one costs the same whatever the pool's size: httpx
  without its pool's scan of every connection on each request;
- Arbiter's ``HttpClient`` on its two wires: httpx (the agent executor, providers,
  embedders, stores) and aiohttp (the ``http`` system under test);
- Arbiter's ``HttpSystem``: the system under test as the runner calls it (the client,
  the body template and the response mapping).

Each row prints the best wall time of ``--repeat`` rounds (clients interleaved, so a
burst of load on the machine hits them alike), its ratio to the ideal and to aiohttp's,
and the CPU time this process spent per request. A benchmark, never a test: it prints,
it does not assert.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import platform
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpcore
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness_throughput import LATENCY_S, raw_streams_client, serve_in_subprocess

LOADS = ((100, 5_000), (16, 1_000))
"""(concurrency, requests) of each load."""

Send = Callable[[str, dict[str, Any]], Awaitable[Any]]
Client = Callable[[], tuple[Send, Callable[[], Awaitable[None]]]]
"""Opens a client: the function sending one request, and the one closing the client."""


def aiohttp_client() -> tuple[Send, Callable[[], Awaitable[None]]]:
    import aiohttp

    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))

    async def send(url: str, body: dict[str, Any]) -> Any:
        async with session.post(url, json=body) as response:
            return json.loads(await response.read())

    return send, session.close


def httpx_like(module: Any) -> Client:
    def open_client() -> tuple[Send, Callable[[], Awaitable[None]]]:
        limits = module.Limits(max_connections=None, max_keepalive_connections=None)
        client = module.AsyncClient(limits=limits, timeout=None)

        async def send(url: str, body: dict[str, Any]) -> Any:
            return (await client.post(url, json=body)).json()

        return send, client.aclose

    return open_client


class LifoPool(httpx.AsyncBaseTransport):
    """An httpx transport over httpcore connections kept on a stack per origin (HTTP/1.1)."""

    def __init__(self) -> None:
        self._idle: dict[tuple[bytes, bytes, int | None], list[httpcore.AsyncHTTPConnection]] = {}
        self._open: set[httpcore.AsyncHTTPConnection] = set()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        target = httpcore.URL(
            scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path
        )
        core = httpcore.Request(
            request.method,
            target,
            headers=request.headers.raw,
            content=request.stream,  # type: ignore[arg-type]
        )
        origin = core.url.origin
        stack = self._idle.setdefault((origin.scheme, origin.host, origin.port), [])
        while stack:
            connection = stack.pop()
            if connection.is_idle() and not connection.has_expired():
                break
            self._open.discard(connection)
        else:
            connection = httpcore.AsyncHTTPConnection(origin=origin, keepalive_expiry=5.0)
            self._open.add(connection)
        answer = await connection.handle_async_request(core)
        body = _LifoBody(answer.stream, lambda: self._release(stack, connection))  # type: ignore[arg-type]
        return httpx.Response(answer.status, headers=answer.headers, stream=body)

    def _release(
        self, stack: list[httpcore.AsyncHTTPConnection], connection: httpcore.AsyncHTTPConnection
    ) -> None:
        if connection.is_idle():
            stack.append(connection)
        else:
            self._open.discard(connection)

    async def aclose(self) -> None:
        for connection in self._open:
            await connection.aclose()


class _LifoBody(httpx.AsyncByteStream):
    def __init__(self, stream: Any, release: Callable[[], None]) -> None:
        self._stream, self._release = stream, release

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for part in self._stream:
            yield part

    async def aclose(self) -> None:
        await self._stream.aclose()
        self._release()


def httpx_lifo() -> tuple[Send, Callable[[], Awaitable[None]]]:
    client = httpx.AsyncClient(transport=LifoPool(), timeout=None)

    async def send(url: str, body: dict[str, Any]) -> Any:
        return (await client.post(url, json=body)).json()

    return send, client.aclose


def arbiter_client(wire: str) -> Client:
    def open_client() -> tuple[Send, Callable[[], Awaitable[None]]]:
        from arbiter.http.client import HttpClient
        from arbiter.http.wire_aiohttp import AiohttpWire

        client = HttpClient(side="system", wire=AiohttpWire if wire == "aiohttp" else None)

        async def send(url: str, body: dict[str, Any]) -> Any:
            answer = await client.request("POST", url, json=body, where="bench", timeout=300)
            return answer.document

        return send, client.aclose

    return open_client


def arbiter_system() -> tuple[Send, Callable[[], Awaitable[None]]]:
    from arbiter.systems.http import HttpSystem

    systems: dict[str, HttpSystem] = {}

    async def send(url: str, body: dict[str, Any]) -> Any:
        system = systems.get(url)
        if system is None:
            system = systems[url] = await HttpSystem(url, timeout=300).__aenter__()
        return await system(body)

    async def close() -> None:
        for system in systems.values():
            await system.__aexit__(None, None, None)

    return send, close


CLIENTS: dict[str, Client] = {
    "aiohttp.ClientSession": aiohttp_client,
    "httpx.AsyncClient": httpx_like(httpx),
    "httpx2.AsyncClient": httpx_like(__import__("httpx2")),
    "httpx over LifoPool": httpx_lifo,
    "arbiter HttpClient, httpx": arbiter_client("httpx"),
    "arbiter HttpClient, aiohttp": arbiter_client("aiohttp"),
    "arbiter HttpSystem": arbiter_system,
}


@dataclass
class Best:
    wall_s: float = float("inf")
    cpu_s: float = float("inf")

    def add(self, wall_s: float, cpu_s: float) -> None:
        self.wall_s, self.cpu_s = min(self.wall_s, wall_s), min(self.cpu_s, cpu_s)


async def drive(open_client: Client, url: str, n: int, concurrency: int) -> None:
    """``n`` POSTs through one client, ``concurrency`` at once."""
    send, close = open_client()
    counter = iter(range(n))

    async def worker() -> None:
        for i in counter:
            await send(url, {"n": i, "text": f"event {i}"})

    try:
        async with asyncio.TaskGroup() as group:
            for _ in range(concurrency):
                group.create_task(worker())
    finally:
        await close()


def timed(run: Callable[[], Awaitable[None]]) -> tuple[float, float]:
    cpu0, wall0 = time.process_time(), time.perf_counter()
    asyncio.run(run())  # type: ignore[arg-type]
    return time.perf_counter() - wall0, time.process_time() - cpu0


def bench_load(url: str, concurrency: int, n: int, repeat: int) -> None:
    ideal = n * LATENCY_S / concurrency
    print(f"\n{n:,} requests, {concurrency} in flight: ideal {ideal:.2f} s")
    rows: dict[str, Best] = {"raw asyncio streams": Best(), **{name: Best() for name in CLIENTS}}
    for _ in range(repeat):
        rows["raw asyncio streams"].add(*timed(lambda: raw_streams_client(url, n, concurrency)))
        for name, open_client in CLIENTS.items():
            rows[name].add(*timed(lambda c=open_client: drive(c, url, n, concurrency)))  # type: ignore[misc]
    floor = rows["aiohttp.ClientSession"].wall_s
    for name, best in rows.items():
        print(
            f"  {name:<28} {best.wall_s:6.2f} s  ideal x {best.wall_s / ideal:5.2f}  "
            f"aiohttp x {best.wall_s / floor:5.2f}  cpu {best.cpu_s / n * 1000:5.2f} ms/request"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5x fewer requests, one round")
    parser.add_argument("--repeat", type=int, default=3, help="rounds; the best is printed")
    args = parser.parse_args(argv)
    import aiohttp
    import httpx2

    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"date     : {dt.datetime.now().astimezone():%Y-%m-%d %H:%M:%S %z}")
    print(f"machine  : {os.cpu_count()} CPUs, {platform.platform()}, load average {load}")
    print(f"python   : {platform.python_implementation()} {platform.python_version()}")
    print(
        f"libraries: aiohttp {aiohttp.__version__}, httpx {httpx.__version__}, "
        f"httpx2 {httpx2.__version__}"
    )
    with serve_in_subprocess() as server:
        for concurrency, n in LOADS:
            count = n // 5 if args.quick else n
            bench_load(server.url, concurrency, count, 1 if args.quick else args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
