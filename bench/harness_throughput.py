"""Throughput of the harness: ``run_eval_async`` over HTTP and over an in-process system.

Run: ``python bench/harness_throughput.py [--quick] [--diagnose] [--only http|python]``.
Each harness run writes to a SQLite store in a temporary directory, as real runs do.

1. HTTP: a local service answering every POST after exactly 50 ms, served by uvicorn in
   a separate process (its own event loop and GIL), driven through ``HttpSystem`` with
   5,000 examples at concurrency 100. Ideal wall time n x 0.05 / 100; target wall/ideal
   <= 1.3, and within 1.2x of the bare client's ratio measured in the same run. For
   reference: a bare ``aiohttp.ClientSession`` loop (the client library ``HttpSystem``
   uses, alone, with the same connector) and a raw asyncio-streams client (what the
   server and the loop allow), with the CPU time of each process and the TCP
   connections the server saw.
2. Python: a trivial sync function through ``PythonSystem``, 10,000 examples at
   run_eval's default concurrency; target >= 2,000 examples/s. Printed threaded (the
   default) and ``threaded=False``, each with and without a store, with peak RSS.

``--quick`` runs 10x fewer examples; ``--diagnose`` adds the harness without a store and
the clients ``HttpSystem`` used before (bare httpx with 100 keep-alive connections, and
httpx2), to show why it moved to aiohttp. A benchmark, never a test: it prints, it does
not assert.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import platform
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from arbiter.contract import Dataset, Example, PairResult
from arbiter.harness.runner import run_eval_async
from arbiter.store import Store
from arbiter.systems.http import HttpSystem
from arbiter.systems.python import PythonSystem

LATENCY_S = 0.05
HTTP_N = 5_000
HTTP_CONCURRENCY = 100
HTTP_TARGET_RATIO = 1.3
HTTP_TO_BARE_TARGET = 1.2
PY_N = 10_000
PY_CONCURRENCY = 16  # run_eval's default
PY_TARGET_RATE = 2_000.0
LABELS = ("high", "low", "medium")
BENCH_DIR = Path(__file__).resolve().parent


# -- the system under test, served by uvicorn in a child process -------------------------


class LatencyService:
    """Raw ASGI app: every POST is answered after exactly 50 ms with a label and confidence.

    ``GET /stats`` returns (and resets) the requests served and the distinct client
    connections they came on, to show whether the client keeps its connections alive.
    """

    def __init__(self) -> None:
        self.requests = 0
        self.peers: set[tuple[str, int]] = set()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        if scope["method"] == "GET":
            answer = {"requests": self.requests, "connections": len(self.peers)}
            self.requests, self.peers = 0, set()
            await _send_json(send, answer)
            return
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        self.requests += 1
        self.peers.add(tuple(scope["client"]))
        n = int(json.loads(body or b"{}").get("n", 0))
        await asyncio.sleep(LATENCY_S)
        await _send_json(send, {"label": LABELS[n % len(LABELS)], "confidence": 0.9})


async def _send_json(send: Any, document: dict[str, Any]) -> None:
    answer = json.dumps(document).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(answer))]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": answer})


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    url: str
    pid: int
    http: str

    def cpu_seconds(self) -> float:
        import psutil

        return float(sum(psutil.Process(self.pid).cpu_times()[:2]))

    def stats(self) -> dict[str, int]:
        """Requests and distinct connections since the last call."""
        import httpx

        return dict(httpx.get(self.url.replace("/predict", "/stats"), timeout=5).json())


@contextmanager
def serve_in_subprocess() -> Iterator[Server]:
    """Start uvicorn with ``LatencyService`` in a child process until the block exits."""
    port = free_port()
    http = "httptools" if find_spec("httptools") else "h11"
    command = [
        sys.executable, "-m", "uvicorn", "--factory", f"{Path(__file__).stem}:LatencyService",
        "--app-dir", str(BENCH_DIR), "--host", "127.0.0.1", "--port", str(port),
        "--loop", "asyncio", "--http", http, "--lifespan", "off",
        "--log-level", "warning", "--no-access-log",
        "--backlog", "2048", "--limit-concurrency", "1000", "--timeout-keep-alive", "30",
    ]  # fmt: skip
    process = subprocess.Popen(command)
    server = Server(f"http://127.0.0.1:{port}/predict", process.pid, http)
    try:
        _wait_until_answering(server, process)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_until_answering(server: Server, process: subprocess.Popen[bytes]) -> None:
    import httpx

    deadline = time.monotonic() + 20
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"uvicorn exited with code {process.returncode}")
        try:
            if httpx.post(server.url, json={"n": 0}, timeout=2).status_code == 200:
                server.stats()
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not answer within 20 s")
        time.sleep(0.05)


# -- measuring -------------------------------------------------------------------------


@dataclass
class Measure:
    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    result: Any


class RssSampler:
    """Peak resident set size of this process, sampled every 5 ms in a thread."""

    def __init__(self) -> None:
        import psutil

        self._process = psutil.Process()
        self.peak = self._process.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, self._process.memory_info().rss)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._process.memory_info().rss)


def measure(run: Callable[[], Awaitable[Any]]) -> Measure:
    """Wall time, CPU time of this process (all threads) and peak RSS of one run."""

    async def main() -> Any:
        return await run()

    with RssSampler() as rss:
        cpu0, wall0 = time.process_time(), time.perf_counter()
        result = asyncio.run(main())
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    return Measure(wall, cpu, rss.peak / 2**20, result)


class TimedStore(Store):
    """A ``Store`` that counts the transactions and the time spent writing results."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.batches: list[int] = []
        self.seconds = 0.0

    def add_results(self, run_id: str, results: Sequence[PairResult]) -> None:
        started = time.perf_counter()
        super().add_results(run_id, results)
        self.seconds += time.perf_counter() - started
        self.batches.append(len(results))

    def summary(self, n: int) -> str:
        mean = sum(self.batches) / max(1, len(self.batches))
        return (
            f"store: {len(self.batches):,} transactions, mean batch {mean:.1f}, "
            f"{self.seconds:.2f} s in add_results ({self.seconds / n * 1000:.3f} ms/result, "
            f"writer thread)"
        )


def build_dataset(n: int) -> Dataset:
    examples = [
        Example(id=f"ex-{i:06d}", input={"n": i, "text": f"event {i}"}, expected_label=label)
        for i in range(n)
        for label in (LABELS[i % len(LABELS)],)
    ]
    return Dataset(name="bench", examples=examples)


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


# -- scenario 1: HTTP ------------------------------------------------------------------


async def bare_aiohttp(url: str, n: int) -> None:
    """aiohttp alone: ``n`` POSTs, ``HTTP_CONCURRENCY`` at once, one session configured
    as ``HttpSystem`` configures its own."""
    counter = iter(range(n))
    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0), timeout=aiohttp.ClientTimeout(total=10)
    )

    async def worker() -> None:
        for i in counter:
            async with session.post(url, json={"n": i, "text": f"event {i}"}) as response:
                json.loads(await response.read())

    async with session, asyncio.TaskGroup() as group:
        for _ in range(HTTP_CONCURRENCY):
            group.create_task(worker())


async def bare_httpx_like(url: str, n: int, client: Any) -> None:
    """An httpx-style client alone: ``n`` POSTs, ``HTTP_CONCURRENCY`` at once, one pool."""
    counter = iter(range(n))

    async def worker() -> None:
        for i in counter:
            (await client.post(url, json={"n": i, "text": f"event {i}"})).json()

    async with client, asyncio.TaskGroup() as group:
        for _ in range(HTTP_CONCURRENCY):
            group.create_task(worker())


async def raw_streams_client(url: str, n: int, concurrency: int = HTTP_CONCURRENCY) -> None:
    """A minimal keep-alive HTTP/1.1 client on asyncio streams: the floor of the client side."""
    parsed = urlsplit(url)
    head = (
        f"POST {parsed.path} HTTP/1.1\r\nhost: {parsed.hostname}\r\n"
        "content-type: application/json\r\ncontent-length: "
    ).encode()
    counter = iter(range(n))

    async def worker() -> None:
        reader, writer = await asyncio.open_connection(parsed.hostname, parsed.port)
        for i in counter:
            body = json.dumps({"n": i, "text": f"event {i}"}).encode()
            writer.write(head + b"%d\r\n\r\n" % len(body) + body)
            headers = (await reader.readuntil(b"\r\n\r\n")).lower()
            length = int(headers.split(b"content-length:")[1].split(b"\r\n")[0])
            json.loads(await reader.readexactly(length))
        writer.close()
        await writer.wait_closed()

    async with asyncio.TaskGroup() as group:
        for _ in range(concurrency):
            group.create_task(worker())


def bench_http(n: int, directory: str, *, diagnose: bool) -> None:
    dataset = build_dataset(n)
    ideal = n * LATENCY_S / HTTP_CONCURRENCY
    with serve_in_subprocess() as server:
        print(f"\n[1] HTTP: {n:,} examples, 50 ms service, concurrency {HTTP_CONCURRENCY}")
        print(f"    server: uvicorn --http {server.http} --loop asyncio, pid {server.pid}")
        print(f"    ideal n x 0.05 / {HTTP_CONCURRENCY}             : {ideal:6.2f} s")

        def run(title: str, go: Callable[[], Awaitable[Any]]) -> Measure:
            server_cpu0 = server.cpu_seconds()
            m = measure(go)
            server_cpu = server.cpu_seconds() - server_cpu0
            seen = server.stats()
            print(
                f"    {title:<32}: {m.wall_s:6.2f} s  ratio {m.wall_s / ideal:5.2f}  "
                f"{n / m.wall_s:5.0f} req/s | cpu ms/req client {m.cpu_s / n * 1000:5.2f} "
                f"server {server_cpu / n * 1000:4.2f} | {seen['connections']:5,} conns "
                f"| rss {m.peak_rss_mb:3.0f} MB"
            )
            return m

        def harness(system: HttpSystem, store: TimedStore | None) -> Callable[[], Awaitable[Any]]:
            return lambda: run_eval_async(
                system, dataset, concurrency=HTTP_CONCURRENCY, store=store
            )

        store = TimedStore(f"sqlite:///{Path(directory) / 'http.db'}")
        m = run("run_eval + HttpSystem + store", harness(HttpSystem(server.url), store))
        report, store_summary = m.result, store.summary(n)
        bare = run("ref: bare aiohttp.ClientSession", lambda: bare_aiohttp(server.url, n))
        run("ref: raw asyncio streams", lambda: raw_streams_client(server.url, n))
        if diagnose:
            import httpx
            import httpx2

            run("diag: run_eval + HttpSystem only", harness(HttpSystem(server.url), None))
            keepalive = httpx.Limits(max_connections=100, max_keepalive_connections=100)
            client = httpx.AsyncClient(limits=keepalive)
            run("diag: bare httpx, keepalive 100", lambda: bare_httpx_like(server.url, n, client))
            client2 = httpx2.AsyncClient()
            run("diag: bare httpx2.AsyncClient", lambda: bare_httpx_like(server.url, n, client2))
        ratio = m.wall_s / ideal
        errors = report.errors_by_type or "none"
        print(f"    harness run: errors {errors}, accuracy {report.strict.accuracy.estimate:.3f}")
        print(f"    {store_summary}")
        print(f"    ratio wall/ideal                    : {ratio:6.2f}  target <= "
              f"{HTTP_TARGET_RATIO}  {verdict(ratio <= HTTP_TARGET_RATIO)}")  # fmt: skip
        to_bare = m.wall_s / bare.wall_s
        print(f"    ours / bare aiohttp (same run)      : {to_bare:6.2f}  target <= "
              f"{HTTP_TO_BARE_TARGET}  {verdict(to_bare <= HTTP_TO_BARE_TARGET)}")  # fmt: skip
        store.close()


# -- scenario 2: in-process Python -----------------------------------------------------


def instant_classifier(input: dict[str, Any]) -> dict[str, Any]:
    """Answers at once: a label derived from the input and a fixed confidence."""
    return {"label": LABELS[input["n"] % len(LABELS)], "confidence": 0.9}


def bench_python(n: int, directory: str) -> None:
    dataset = build_dataset(n)
    print(f"\n[2] Python: {n:,} examples, instant sync function, concurrency {PY_CONCURRENCY}")
    cases = [
        ("threaded (default) + store", True, True),
        ("threaded=False + store", False, True),
        ("threaded (default), no store", True, False),
        ("threaded=False, no store", False, False),
    ]
    for i, (title, threaded, with_store) in enumerate(cases):
        store = TimedStore(f"sqlite:///{Path(directory) / f'py{i}.db'}") if with_store else None
        system = PythonSystem(instant_classifier, threaded=threaded)
        m = measure(
            lambda s=system, st=store: run_eval_async(  # type: ignore[misc]
                s, dataset, concurrency=PY_CONCURRENCY, store=st
            )
        )
        rate = n / m.wall_s
        mark = f"  target >= {PY_TARGET_RATE:,.0f}/s  {verdict(rate >= PY_TARGET_RATE)}"
        print(
            f"    {title:<30}: {rate:7,.0f} ex/s  {m.wall_s:5.2f} s  cpu {m.cpu_s:5.2f} s  "
            f"peak rss {m.peak_rss_mb:3.0f} MB" + (mark if i == 0 else "")
        )
        if store is not None:
            print(f"      {store.summary(n)}")
            store.close()


# -- main ------------------------------------------------------------------------------


def print_machine() -> None:
    import sqlalchemy
    import uvicorn

    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"date     : {dt.datetime.now().astimezone():%Y-%m-%d %H:%M:%S %z}")
    print(f"machine  : {os.cpu_count()} CPUs, {platform.platform()}, load average {load}")
    print(f"python   : {platform.python_implementation()} {platform.python_version()}")
    print(f"libraries: aiohttp {aiohttp.__version__}, uvicorn {uvicorn.__version__}, "
          f"sqlalchemy {sqlalchemy.__version__}")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10x fewer examples (smoke run)")
    parser.add_argument("--diagnose", action="store_true", help="add HTTP client variants")
    parser.add_argument("--only", choices=["http", "python"], help="run one scenario")
    args = parser.parse_args(argv)
    scale = 10 if args.quick else 1
    print_machine()
    with tempfile.TemporaryDirectory(prefix="arbiter-bench-") as directory:
        if args.only in (None, "http"):
            bench_http(HTTP_N // scale, directory, diagnose=args.diagnose)
        if args.only in (None, "python"):
            bench_python(PY_N // scale, directory)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak RSS of the whole benchmark (ru_maxrss): {peak:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
