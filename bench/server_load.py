"""Load on ``arbiter serve``: ``POST /v1/arbitrate`` and ``POST /v1/traces`` at concurrency 32.

Run: ``python bench/server_load.py [--duration S] [--concurrency N] [--quick]
[--parts health,traces,pairs] [--db-url URL] [--workers N]``.

A local server is started in a subprocess (``arbiter serve``: uvicorn, one worker, over
a fresh SQLite store in a temporary folder, no API key; ``--db-url`` names another store,
a PostgreSQL one for ``--workers`` above 1), and a load generator in this
process keeps
``--concurrency`` (32) requests in flight over as many keep-alive connections for
``--duration`` (20) seconds per part:

- baseline: ``GET /v1/health`` (the app's cheapest route: one count of API keys);
- arbitrate: ``POST /v1/arbitrate`` with the server's jury (the three offline critics,
  the mock provider: no network), each verdict stored; targets >= 300 requests/s and a
  p99 <= 100 ms;
- traces: ``POST /v1/traces`` of OTLP protobuf ``ExportTraceServiceRequest`` bodies as the
  SDK's exporter sends them, one agent run of 20 spans a request (an ``invoke_agent``
  span over 9 ``chat`` and 10 ``execute_tool`` spans, ``bench/trajectory_speed.py``'s
  traces), each imported, scored by every deterministic trajectory scorer and stored;
- pairs (with ``--parts``): the same traces' spans and, in requests of their own
  (``POST /v1/logs``, OTLP/JSON), two GenAI log events of each, so that half the requests
  find their trace's other half in the store's buffer, read it back, import the whole
  trace again and store its run in place of the one before.

Each part prints requests/s, p50 / p99 latency and errors (any answer but the expected
status, or a broken connection), the server processes' CPU time per request (user +
system, from ``/proc``, the workers' included but not a PostgreSQL server's: what the
figures cost whatever else the machine runs), and its
throughput as a ratio to the baseline's. The
client is a minimal HTTP/1.1 client on asyncio streams, so that the figures are the
server's rather than a client library's; it shares the machine with the server (2
cores here). A benchmark, never a test: it prints, it does not assert.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from google.protobuf.json_format import ParseDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from trajectory_speed import make_trace

ARBITRATE_TARGET_RPS = 300.0
ARBITRATE_TARGET_P99_MS = 100.0
HOST = "127.0.0.1"

CASES = [
    {
        "task": "Summarize the refund policy.",
        "context": "Refunds are accepted within 30 days of purchase with a receipt.",
        "output": output,
    }
    for output in (
        "Refunds are accepted within 30 days of purchase with a receipt.",
        "Refunds are accepted within 90 days of purchase, no receipt needed.",
        "You can get a refund within 30 days if you keep the receipt.",
        "Refunds are always guaranteed, with or without a receipt.",
    )
]


@dataclass
class Part:
    """What one part measured."""

    name: str
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    elapsed: float = 0.0
    first_error: str = ""
    server_cpu_s: float | None = None

    @property
    def cpu_ms(self) -> float | None:
        """The server's CPU time per answered request (user + system), when known."""
        if self.server_cpu_s is None or not self.latencies:
            return None
        return self.server_cpu_s / len(self.latencies) * 1000

    @property
    def rps(self) -> float:
        return len(self.latencies) / self.elapsed if self.elapsed else 0.0

    def quantile(self, q: float) -> float:
        ordered = sorted(self.latencies)
        if not ordered:
            return float("nan")
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def _request(method: str, path: str, body: bytes, content_type: str) -> bytes:
    head = f"{method} {path} HTTP/1.1\r\nHost: {HOST}\r\nConnection: keep-alive\r\n"
    if body or method == "POST":
        head += f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
    return head.encode() + b"\r\n" + body


async def _answer(reader: asyncio.StreamReader) -> int:
    """Read one response; its status."""
    status_line = await reader.readline()
    if not status_line:
        raise ConnectionError("the server closed the connection")
    status = int(status_line.split()[1])
    length = 0
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b"\n", b""):
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    if length:
        await reader.readexactly(length)
    return status


async def _worker(
    port: int,
    requests: Sequence[bytes],
    offset: int,
    step: int,
    expect: int,
    stop: float,
    part: Part,
) -> None:
    reader, writer = await asyncio.open_connection(HOST, port)
    index = offset
    try:
        while time.perf_counter() < stop:
            payload = requests[index % len(requests)]
            index += step
            started = time.perf_counter()
            try:
                writer.write(payload)
                status = await _answer(reader)
            except (ConnectionError, asyncio.IncompleteReadError) as exc:
                part.errors += 1
                part.first_error = part.first_error or repr(exc)
                writer.close()
                reader, writer = await asyncio.open_connection(HOST, port)
                continue
            if status == expect:
                part.latencies.append(time.perf_counter() - started)
            else:
                part.errors += 1
                part.first_error = part.first_error or f"status {status}"
    finally:
        writer.close()


def _cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU seconds of a process and its live children so far (Linux
    ``/proc``: ``arbiter serve --workers N`` runs its workers as children); None elsewhere."""
    if pid is None:
        return None
    total = 0.0
    for one in [pid, *_children(pid)]:
        try:
            fields = Path(f"/proc/{one}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            if one == pid:
                return None
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def _children(pid: int) -> list[int]:
    """Every descendant of a process (Linux ``/proc``)."""
    found: list[int] = []
    try:
        listed = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return found
    for child in map(int, listed):
        found += [child, *_children(child)]
    return found


async def _load(
    name: str,
    port: int,
    requests: Sequence[bytes],
    expect: int,
    concurrency: int,
    duration: float,
    pid: int | None = None,
) -> Part:
    part = Part(name)
    cpu_before = _cpu_seconds(pid)
    started = time.perf_counter()
    stop = started + duration
    await asyncio.gather(
        *(_worker(port, requests, i, concurrency, expect, stop, part) for i in range(concurrency))
    )
    part.elapsed = time.perf_counter() - started
    cpu_after = _cpu_seconds(pid)
    if cpu_before is not None and cpu_after is not None:
        part.server_cpu_s = cpu_after - cpu_before
    return part


def _protobuf_trace(i: int) -> bytes:
    """``make_trace(i)`` (OTLP/JSON, hex ids) as the protobuf body an SDK exporter sends."""
    document = json.loads(make_trace(i))
    for resource in document["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    return ParseDict(document, ExportTraceServiceRequest()).SerializeToString()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _start_server(
    folder: Path, db_url: str | None, workers: int
) -> tuple[subprocess.Popen[bytes], int]:
    port = _free_port()
    env = {
        **os.environ,
        "ARBITER_DB_URL": db_url or f"sqlite:///{folder / 'bench.db'}",
        "ARBITER_HOME": str(folder / "home"),
    }
    env.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    # `arbiter serve` itself, as a user starts it (its process settings included).
    command = [sys.executable, "-c", "from arbiter.cli.main import main; main()"]
    command += ["serve", "--host", HOST, "--port", str(port), "--workers", str(workers)]
    server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the server exited with {server.returncode}")
        try:
            with socket.create_connection((HOST, port), timeout=0.5):
                return server, port
        except OSError:
            time.sleep(0.1)
    server.terminate()
    raise SystemExit("the server did not start within 60 s")


def _print(part: Part, baseline: Part | None) -> None:
    ratio = f"   {part.rps / baseline.rps:.2f}x health" if baseline and baseline.rps else ""
    cpu = f"   server CPU {part.cpu_ms:.2f} ms/req" if part.cpu_ms is not None else ""
    print(
        f"{part.name:<10} {part.rps:8.1f} req/s   p50 {part.quantile(0.50):6.1f} ms   "
        f"p99 {part.quantile(0.99):6.1f} ms   errors {part.errors}{cpu}{ratio}"
        + (f"   (first: {part.first_error})" if part.first_error else "")
    )


def _logs_body(i: int) -> bytes:
    """Two GenAI log events (openai-v2 style) of ``make_trace(i)``'s first model call."""
    trace = f"{i + 1:032x}"

    def event(name: str, body: dict[str, object], at: int) -> dict[str, object]:
        fields = [{"key": k, "value": {"stringValue": str(v)}} for k, v in body.items()]
        return {"timeUnixNano": str(1_700_000_000_000_000_000 + at), "traceId": trace,
                "spanId": f"{2:016x}", "eventName": name,
                "body": {"kvlistValue": {"values": fields}}}  # fmt: skip

    records = [
        event("gen_ai.user.message", {"content": f"Where is order {1000 + i}?"}, 1),
        event("gen_ai.choice", {"index": 0, "finish_reason": "tool_calls"}, 2),
    ]
    return json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": records}]}]}).encode()


PARTS = ("health", "arbitrate", "traces", "pairs")


async def _run(
    port: int, pid: int, concurrency: int, duration: float, parts: Sequence[str]
) -> list[Part]:
    health = [_request("GET", "/v1/health", b"", "")]
    arbitrate = [
        _request("POST", "/v1/arbitrate", json.dumps(case).encode(), "application/json")
        for case in CASES
    ]
    traces = [
        _request("POST", "/v1/traces", _protobuf_trace(i), "application/x-protobuf")
        for i in range(2_000)
    ]
    # A trace's spans, then its log records: neighbours, so two connections send them.
    pairs = [
        request
        for i in range(2_000, 4_000)
        for request in (
            _request("POST", "/v1/traces", _protobuf_trace(i), "application/x-protobuf"),
            _request("POST", "/v1/logs", _logs_body(i), "application/json"),
        )
    ]
    # A short warm-up: the first arbitration builds the jury, the first trace the scorers.
    if "arbitrate" in parts:
        await _load("warm-up", port, [arbitrate[0]], 201, 2, 1.0)
    await _load("warm-up", port, [traces[0]], 200, 2, 1.0)
    loads = {"health": (health, 200), "arbitrate": (arbitrate, 201), "traces": (traces, 200),
             "pairs": (pairs, 200)}  # fmt: skip
    done = []
    for name in ("health", *(p for p in PARTS if p != "health" and p in parts)):
        requests, status = loads[name]
        done.append(await _load(name, port, requests, status, concurrency, duration, pid))
    return done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=20.0, help="Seconds per part.")
    parser.add_argument("--concurrency", type=int, default=32, help="Requests in flight.")
    parser.add_argument("--quick", action="store_true", help="2 s per part (a smoke run).")
    parser.add_argument(
        "--parts",
        default="health,arbitrate,traces",
        help=f"Comma-separated parts of {', '.join(PARTS)} (health, the baseline, always runs).",
    )
    parser.add_argument("--db-url", help="The server's store (default: a fresh SQLite file).")
    parser.add_argument("--workers", type=int, default=1, help="Server processes (uvicorn).")
    options = parser.parse_args()
    parts = [p.strip() for p in options.parts.split(",") if p.strip()]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        raise SystemExit(
            f"--parts: unknown part {unknown[0]!r}; expected some of {', '.join(PARTS)}"
        )
    duration = 2.0 if options.quick else options.duration
    store = "SQLite" if not options.db_url else options.db_url.split(":", 1)[0]
    print(
        f"server_load: {platform.python_implementation()} {platform.python_version()}, "
        f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; concurrency "
        f"{options.concurrency}, {duration:g} s a part, {options.workers} uvicorn "
        f"worker(s) over {store}"
    )
    with tempfile.TemporaryDirectory(prefix="arbiter-load-") as folder:
        server, port = _start_server(Path(folder), options.db_url, options.workers)
        try:
            done = asyncio.run(_run(port, server.pid, options.concurrency, duration, parts))
        finally:
            server.terminate()
            server.wait(timeout=30)
    baseline = done[0]
    for part in done:
        _print(part, None if part is baseline else baseline)
    arbitrate = next((part for part in done if part.name == "arbitrate"), None)
    if arbitrate is None:
        return
    met = (
        arbitrate.rps >= ARBITRATE_TARGET_RPS
        and arbitrate.quantile(0.99) <= ARBITRATE_TARGET_P99_MS
        and arbitrate.errors == 0
    )
    print(
        f"arbitrate target (>= {ARBITRATE_TARGET_RPS:.0f} req/s, p99 <= "
        f"{ARBITRATE_TARGET_P99_MS:.0f} ms, no errors): {'met' if met else 'missed'}"
    )


if __name__ == "__main__":
    main()
