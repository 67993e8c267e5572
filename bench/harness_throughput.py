"""Throughput of the harness: ``run_eval_async`` over HTTP and over an in-process system.

Run: ``python bench/harness_throughput.py [--quick]``. Two scenarios, each with a
SQLite store in a temporary directory, because real runs write every result:

1. HTTP: a local service answering every POST after exactly 50 ms, served by uvicorn
   in a separate process (its own event loop and GIL), driven through ``HttpSystem``
   with 5,000 examples at concurrency 100. The ideal wall time is n x 0.05 / 100; the
   target is a ratio wall/ideal <= 1.3. For reference it also prints a bare
   ``httpx.AsyncClient`` loop (no harness, no store) and ``HttpSystem`` over a
   transport that keeps all 100 connections alive, and the CPU time each process spent.
2. Python: a trivial sync function through ``PythonSystem``, 10,000 examples; target
   >= 2,000 examples/s. Printed threaded (the default), ``threaded=False`` and without
   a store, with the peak RSS of each. ``--quick`` runs 10x fewer examples.

A benchmark, never a test: it prints, it does not assert.
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
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Any

LATENCY_S = 0.05
HTTP_N = 5_000
HTTP_CONCURRENCY = 100
HTTP_TARGET_RATIO = 1.3
PY_N = 10_000
PY_CONCURRENCY = 16  # run_eval's default
PY_TARGET_RATE = 2_000.0
LABELS = ("high", "low", "medium")
BENCH_DIR = Path(__file__).resolve().parent


# -- the system under test, served by uvicorn in a child process -------------------------


async def serve_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Raw ASGI app: read the JSON body, wait 50 ms, answer a label and a confidence."""
    if scope["type"] != "http":
        return
    body = b""
    more = True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    n = int(json.loads(body or b"{}").get("n", 0))
    await asyncio.sleep(LATENCY_S)
    answer = json.dumps({"label": LABELS[n % len(LABELS)], "confidence": 0.9}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(answer))]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": answer})


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serve_in_subprocess() -> Iterator[tuple[str, int, str]]:
    """Start uvicorn in a child process; yield (url, pid, http implementation)."""
    port = free_port()
    http = "httptools" if find_spec("httptools") else "h11"
    command = [
        sys.executable, "-m", "uvicorn", f"{Path(__file__).stem}:serve_app",
        "--app-dir", str(BENCH_DIR), "--host", "127.0.0.1", "--port", str(port),
        "--loop", "asyncio", "--http", http, "--lifespan", "off",
        "--log-level", "warning", "--no-access-log",
        "--backlog", "2048", "--limit-concurrency", "1000", "--timeout-keep-alive", "30",
    ]  # fmt: skip
    server = subprocess.Popen(command)
    url = f"http://127.0.0.1:{port}/predict"
    try:
        _wait_until_answering(url, server)
        yield url, server.pid, http
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _wait_until_answering(url: str, server: subprocess.Popen[bytes]) -> None:
    import httpx

    deadline = time.monotonic() + 20
    while True:
        if server.poll() is not None:
            raise RuntimeError(f"uvicorn exited with code {server.returncode}")
        try:
            if httpx.post(url, json={"n": 0}, timeout=2).status_code == 200:
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
    report: Any


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
    with RssSampler() as rss:
        cpu0, wall0 = time.process_time(), time.perf_counter()
        report = asyncio.run(run())  # type: ignore[arg-type]
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    return Measure(wall, cpu, rss.peak / 2**20, report)


def build_dataset(n: int) -> Any:
    from arbiter.contract import Dataset, Example

    examples = [
        Example(id=f"ex-{i:06d}", input={"n": i, "text": f"event {i}"}, expected_label=label)
        for i in range(n)
        for label in (LABELS[i % len(LABELS)],)
    ]
    return Dataset(name="bench", examples=examples)


def open_store(directory: str, name: str) -> Any:
    from arbiter.store.repository import Store

    return Store(f"sqlite:///{Path(directory) / name}.db")


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


# -- scenario 1: HTTP ------------------------------------------------------------------


async def bare_httpx(url: str, n: int, concurrency: int) -> None:
    """The client stack alone: ``n`` POSTs, ``concurrency`` at once, default httpx pool."""
    import httpx

    counter = iter(range(n))

    async def worker(client: httpx.AsyncClient) -> None:
        for i in counter:
            (await client.post(url, json={"n": i, "text": f"event {i}"})).json()

    async with httpx.AsyncClient(timeout=30) as client, asyncio.TaskGroup() as group:
        for _ in range(concurrency):
            group.create_task(worker(client))


def bench_http(n: int, directory: str) -> None:
    import httpx
    import psutil

    from arbiter.harness.runner import run_eval_async
    from arbiter.systems.http import HttpSystem

    dataset = build_dataset(n)
    ideal = n * LATENCY_S / HTTP_CONCURRENCY
    with serve_in_subprocess() as (url, pid, http):
        server = psutil.Process(pid)
        print(f"\n[1] HTTP: {n:,} examples, 50 ms service, concurrency {HTTP_CONCURRENCY}")
        print(f"    server: uvicorn --http {http} --loop asyncio, pid {pid}, {url}")
        print(f"    ideal n x 0.05 / {HTTP_CONCURRENCY}         : {ideal:7.2f} s")

        def line(title: str, m: Measure, server_cpu: float) -> float:
            ratio = m.wall_s / ideal
            print(
                f"    {title:<30}: {m.wall_s:7.2f} s  ratio {ratio:5.2f}  "
                f"{n / m.wall_s:6.0f} req/s  cpu client {m.cpu_s:5.2f} s "
                f"server {server_cpu:5.2f} s  rss {m.peak_rss_mb:4.0f} MB"
            )
            return ratio

        def timed(run: Callable[[], Awaitable[Any]]) -> tuple[Measure, float]:
            before = sum(server.cpu_times()[:2])
            m = measure(run)
            return m, sum(server.cpu_times()[:2]) - before

        async def harness(system: HttpSystem, store_name: str) -> Any:
            store = open_store(directory, store_name)
            try:
                return await run_eval_async(
                    system, dataset, concurrency=HTTP_CONCURRENCY, store=store
                )
            finally:
                store.close()

        m, server_cpu = timed(lambda: harness(HttpSystem(url), "http"))
        errors = m.report.errors_by_type
        ratio = line("run_eval + HttpSystem + store", m, server_cpu)
        m_ref, cpu_ref = timed(lambda: bare_httpx(url, n, HTTP_CONCURRENCY))
        line("reference: bare httpx loop", m_ref, cpu_ref)

        def keepalive_system() -> HttpSystem:
            limits = httpx.Limits(max_connections=100, max_keepalive_connections=100)
            return HttpSystem(url, transport=httpx.AsyncHTTPTransport(limits=limits))

        m_ka, cpu_ka = timed(lambda: harness(keepalive_system(), "http_keepalive"))
        line("reference: keepalive 100 pool", m_ka, cpu_ka)
        print(f"    harness run: error rate {m.report.error_rate:.3f} {errors or ''}, "
              f"accuracy {m.report.strict.accuracy.estimate:.3f}")  # fmt: skip
        print(f"    ratio wall/ideal                : {ratio:7.2f}  target <= "
              f"{HTTP_TARGET_RATIO}  {verdict(ratio <= HTTP_TARGET_RATIO)}")  # fmt: skip


# -- scenario 2: in-process Python -----------------------------------------------------


def instant_classifier(input: dict[str, Any]) -> dict[str, Any]:
    """Answers at once: a label derived from the input and a fixed confidence."""
    return {"label": LABELS[input["n"] % len(LABELS)], "confidence": 0.9}


def bench_python(n: int, directory: str) -> None:
    from arbiter.harness.runner import run_eval_async
    from arbiter.systems.python import PythonSystem

    dataset = build_dataset(n)
    print(f"\n[2] Python: {n:,} examples, instant sync function, concurrency {PY_CONCURRENCY}")

    async def harness(threaded: bool, store_name: str | None) -> Any:
        store = open_store(directory, store_name) if store_name else None
        try:
            return await run_eval_async(
                PythonSystem(instant_classifier, threaded=threaded),
                dataset,
                concurrency=PY_CONCURRENCY,
                store=store,
            )
        finally:
            if store is not None:
                store.close()

    cases = [
        ("threaded (default) + store", True, "py_threaded"),
        ("threaded=False + store", False, "py_inline"),
        ("threaded (default), no store", True, None),
        ("threaded=False, no store", False, None),
    ]
    for i, (title, threaded, store_name) in enumerate(cases):
        m = measure(lambda t=threaded, s=store_name: harness(t, s))  # type: ignore[misc]
        rate = n / m.wall_s
        mark = f"  target >= {PY_TARGET_RATE:,.0f}/s  {verdict(rate >= PY_TARGET_RATE)}"
        print(
            f"    {title:<30}: {rate:8,.0f} ex/s  {m.wall_s:6.2f} s  cpu {m.cpu_s:5.2f} s  "
            f"peak rss {m.peak_rss_mb:4.0f} MB" + (mark if i == 0 else "")
        )


# -- main ------------------------------------------------------------------------------


def print_machine() -> None:
    import httpx
    import sqlalchemy
    import uvicorn

    print(f"date     : {dt.datetime.now().astimezone():%Y-%m-%d %H:%M:%S %z}")
    print(f"machine  : {os.cpu_count()} CPUs, {platform.platform()}, {platform.machine()}")
    print(f"python   : {platform.python_implementation()} {platform.python_version()}")
    print(f"libraries: httpx {httpx.__version__}, uvicorn {uvicorn.__version__}, "
          f"sqlalchemy {sqlalchemy.__version__}")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10x fewer examples (smoke run)")
    parser.add_argument("--only", choices=["http", "python"], help="run one scenario")
    args = parser.parse_args(argv)
    scale = 10 if args.quick else 1
    print_machine()
    with tempfile.TemporaryDirectory(prefix="arbiter-bench-") as directory:
        if args.only in (None, "http"):
            bench_http(HTTP_N // scale, directory)
        if args.only in (None, "python"):
            bench_python(PY_N // scale, directory)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak RSS of the whole benchmark (ru_maxrss): {peak:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
