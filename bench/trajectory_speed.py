"""Speed and memory of the agent path: importing OTLP traces, scoring them, both streamed.

Run: ``python bench/trajectory_speed.py [--quick] [--repeat N] [--big] [n]``.

The traces: ``n`` (default 10,000) OTLP-JSON traces of 20 spans each (one agent run: an
``invoke_agent`` span over 9 ``chat`` and 10 ``execute_tool`` spans, the GenAI semantic
conventions, messages captured), written to a file as the collector's file exporter
writes them (one export request a line).

(a) Import: the file read by Arbiter's OTLP importer (decode, build the span trees,
    validate every trajectory), one trace at a time. Traces per second, and the ratio
    to the baseline: a bare ``json.loads`` of the same lines, read from the same file.
(b) Score: the trajectories scored by every deterministic trajectory scorer of the
    registry, on one core, with case assertions that make the scorers grade (expected
    tool calls, required and forbidden tools, answer checks, a scope). Trajectories per
    second (target >= 3,000/s), and the ratio to the same baseline.
(c) Import and score, streamed: ``arbiter agent score``'s library path
    (:func:`~arbiter.service.agents.score_agent_runs` over
    :func:`~arbiter.trajectories.loader.iter_runs`), run in a fresh process so that its
    peak RSS is its own: for ``n`` traces and (with ``--big``) ten times as many. The
    peak must stay under 300 MB and not grow with the number of traces.

Times are CPU seconds of this process (``time.process_time``: a busy machine slows the
clock on the wall, not the work). ``--quick`` runs 10x fewer traces (a smoke run: its
figures are not the targets'); ``--repeat N`` keeps the fastest of N runs of (a) and
(b). A benchmark, never a test: it prints, it does not assert.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from arbiter.cli.main import tune_gc
from arbiter.contract import Example, Output, Trajectory
from arbiter.scoring.base import BuiltScorer
from arbiter.service.scoring import scorer_registry
from arbiter.trajectories.otlp import iter_otlp
from arbiter.trajectories.scorers import TRAJECTORY_SCORERS

IMPORT_TARGET = 2_000.0
IMPORT_RATIO_TARGET = 2.0
SCORE_TARGET = 3_000.0
RSS_TARGET_MB = 300.0
TOOLS = ("search_orders", "get_order", "refund", "lookup_customer", "send_email")
CITIES = ("Paris", "Lyon", "Rome", "Oslo", "Lima", "Quito", "Hanoi", "Accra")
START_NS = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z
TRACE_SPANS = 20


def _string(key: str, value: str) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value}}


def _int(key: str, value: int) -> dict[str, Any]:
    return {"key": key, "value": {"intValue": str(value)}}


def _span(
    trace: str, span: int, parent: int | None, name: str, start: int, attributes: list[Any]
) -> dict[str, Any]:
    # Span ids are random in real traces: unique across traces, not only within one.
    document: dict[str, Any] = {
        "traceId": trace,
        "spanId": f"{trace[-8:]}{span:08x}",
        "name": name,
        "kind": 3 if name.startswith("chat") else 1,
        "startTimeUnixNano": str(START_NS + start * 1_000_000),
        "endTimeUnixNano": str(START_NS + (start + 40) * 1_000_000),
        "attributes": attributes,
        "status": {"code": 1},
    }
    if parent is not None:
        document["parentSpanId"] = f"{trace[-8:]}{parent:08x}"
    return document


def make_trace(i: int) -> str:
    """One export request (one line) holding one agent run of :data:`TRACE_SPANS` spans."""
    trace = f"{i + 1:032x}"
    city = CITIES[i % len(CITIES)]
    spans = [
        _span(
            trace,
            1,
            None,
            "invoke_agent support",
            0,
            [
                _string("gen_ai.operation.name", "invoke_agent"),
                _string("gen_ai.agent.name", "support"),
                _string("gen_ai.conversation.id", f"conv-{i}"),
            ],
        )
    ]
    for turn in range(9):
        tool = TOOLS[(i + turn) % len(TOOLS)]
        at = 50 + turn * 100
        output = [
            {
                "role": "assistant",
                "parts": [
                    {
                        "type": "tool_call",
                        "id": f"call_{turn}",
                        "name": tool,
                        "arguments": {"city": city, "order": 1000 + turn},
                    }
                ],
            }
        ]
        spans.append(
            _span(
                trace,
                2 + 2 * turn,
                1,
                "chat gpt-4o-mini",
                at,
                [
                    _string("gen_ai.operation.name", "chat"),
                    _string("gen_ai.request.model", "gpt-4o-mini"),
                    _int("gen_ai.usage.input_tokens", 400 + turn),
                    _int("gen_ai.usage.output_tokens", 30),
                    _string(
                        "gen_ai.input.messages",
                        json.dumps(
                            [
                                {
                                    "role": "user",
                                    "parts": [{"type": "text", "content": f"Where is order {i}?"}],
                                }
                            ]
                        ),
                    ),
                    _string("gen_ai.output.messages", json.dumps(output)),
                ],
            )
        )
        spans.append(
            _span(
                trace,
                3 + 2 * turn,
                1,
                f"execute_tool {tool}",
                at + 45,
                [
                    _string("gen_ai.operation.name", "execute_tool"),
                    _string("gen_ai.tool.name", tool),
                    _string("gen_ai.tool.call.id", f"call_{turn}"),
                    _string(
                        "gen_ai.tool.call.arguments",
                        json.dumps({"city": city, "order": 1000 + turn}),
                    ),
                    _string(
                        "gen_ai.tool.call.result",
                        json.dumps({"status": "shipped", "city": city, "eta_days": 2}),
                    ),
                ],
            )
        )
    answer = [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": f"Order {i} ships to {city} in 2 days."}],
        }
    ]
    spans.append(
        _span(
            trace,
            2 + 2 * 9,
            1,
            "chat gpt-4o-mini",
            950,
            [
                _string("gen_ai.operation.name", "chat"),
                _string("gen_ai.request.model", "gpt-4o-mini"),
                _int("gen_ai.usage.input_tokens", 900),
                _int("gen_ai.usage.output_tokens", 20),
                _string("gen_ai.output.messages", json.dumps(answer)),
            ],
        )
    )
    spans[0]["endTimeUnixNano"] = str(START_NS + 1_000 * 1_000_000)
    assert len(spans) == TRACE_SPANS
    request = {
        "resourceSpans": [
            {
                "resource": {"attributes": [_string("service.name", "support-agent")]},
                "scopeSpans": [{"scope": {"name": "bench"}, "spans": spans}],
            }
        ]
    }
    return json.dumps(request, separators=(",", ":"))


def write_traces(path: Path, n: int) -> int:
    """Write ``n`` traces to ``path``, a line each, never holding them all; the bytes."""
    with path.open("w", encoding="utf-8") as file:
        for i in range(n):
            file.write(make_trace(i))
            file.write("\n")
    return path.stat().st_size


def best_of(repeat: int, run: Callable[[], Any]) -> tuple[float, Any]:
    """The fastest of ``repeat`` runs of ``run`` (CPU seconds) and its result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.process_time()
        result = run()
        best = min(best, time.process_time() - started)
    return best, result


def bare_json(path: Path) -> int:
    """The baseline: read the file line by line and parse every line, nothing else."""
    count = 0
    with path.open(encoding="utf-8") as file:
        for line in file:
            json.loads(line)
            count += 1
    return count


def import_traces(path: Path) -> list[Trajectory]:
    """Arbiter's import of a file-exporter file: decode, build, validate (streamed)."""
    return list(iter_otlp(path))


def count_imported(path: Path) -> int:
    """The import alone, each trajectory dropped once built."""
    return sum(1 for _ in iter_otlp(path))


def case_for(i: int, trajectory: Trajectory) -> Example:
    """A case whose assertions make the scorers grade rather than abstain."""
    first = trajectory.tool_calls[:3]
    assertions = {
        "expected_tool_calls": [{"name": c.name, "arguments": c.arguments} for c in first],
        "require_tools_subset": [first[0].name],
        "must_not_call": ["delete_account"],
        "must_contain": [CITIES[i % len(CITIES)]],
        "must_not_contain": ["I cannot"],
        "max_answer_length": 2000,
        "scope": ["orders"],
        "optimal_tasks": 8,
    }
    return Example(
        id=f"case-{i}",
        input={"query": f"Where is order {i}?"},
        expected=assertions,
        metadata={"agent_class": "tool_enabled"},
    )


def build_scorers() -> tuple[list[BuiltScorer], list[str]]:
    """Every trajectory scorer the registry can build with its defaults; and the rest."""
    registry = scorer_registry(plugins=False)
    built, missing = [], []
    for name in TRAJECTORY_SCORERS:
        try:
            built.append(registry.factory_of(name)())
        except Exception as exc:  # a scorer not built: reported, not fatal to the bench
            missing.append(f"{name} ({type(exc).__name__})")
    return built, missing


def score_all(scorers: list[BuiltScorer], pairs: list[tuple[Example, Output]]) -> int:
    """Score every pair with every scorer in one event loop; the number of scores."""

    async def go() -> int:
        count = 0
        for example, output in pairs:
            for built in scorers:
                score = await built(example, output)
                count += score.error is None
        return count

    return asyncio.run(go())


def stream_child(path: str) -> None:
    """(c), in a fresh process: import and score the file streamed; print what it took."""
    from arbiter.service.agents import DefaultScorers, score_agent_runs
    from arbiter.trajectories.loader import iter_runs

    started = time.process_time()
    report = asyncio.run(score_agent_runs(iter_runs([path]), DefaultScorers(), keep_runs=20))
    seconds = time.process_time() - started
    peak = _own_peak_mb()
    print(json.dumps({"runs": report.n_trajectories, "seconds": seconds, "peak_mb": peak}))


def _own_peak_mb() -> float:
    """This process's own peak RSS in MB. ``getrusage``'s ``ru_maxrss`` survives ``exec``:
    a child started from a big parent reports the parent's peak. ``VmHWM`` in
    /proc/self/status belongs to the address space exec made; elsewhere, ``ru_maxrss``."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def streamed(path: Path) -> dict[str, Any]:
    """Run :func:`stream_child` on ``path`` in a fresh interpreter; what it printed."""
    done = subprocess.run(
        [sys.executable, __file__, "--stream-child", str(path)],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _json_reader() -> str:
    """Which parser Arbiter's JSON reader uses here (orjson when installed)."""
    try:
        import orjson
    except ImportError:
        return "the standard library's json (orjson not installed)"
    return f"orjson {orjson.__version__}, checked against the standard library's rules"


def _verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("n", nargs="?", type=int, default=10_000)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--big", action="store_true", help="also stream 10x the traces")
    parser.add_argument("--stream-child", help=argparse.SUPPRESS)
    options = parser.parse_args()
    tune_gc()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    if options.stream_child:
        stream_child(options.stream_child)
        return 0
    n = options.n // 10 if options.quick else options.n
    print(f"python {platform.python_version()}, {n:,} traces of {TRACE_SPANS} spans, one core")
    print(f"JSON reader: {_json_reader()}")
    with tempfile.TemporaryDirectory(prefix="arbiter-bench-") as folder:
        path = Path(folder) / "traces.jsonl"
        megabytes = write_traces(path, n) / 1e6
        base_s, _ = best_of(options.repeat, lambda: bare_json(path))
        import_s, count = best_of(options.repeat, lambda: count_imported(path))
        assert count == n, count
        rate = n / import_s
        print(f"\n(a) import {megabytes:,.1f} MB of OTLP JSON, streamed")
        print(f"  bare json.loads:  {base_s:7.3f} s  {n / base_s:10,.0f} traces/s")
        print(
            f"  arbiter import:   {import_s:7.3f} s  {rate:10,.0f} traces/s"
            f"  ({import_s / base_s:.2f}x json.loads)  target >= {IMPORT_TARGET:,.0f}/s: "
            f"{_verdict(rate >= IMPORT_TARGET)}, <= {IMPORT_RATIO_TARGET:g}x: "
            f"{_verdict(import_s / base_s <= IMPORT_RATIO_TARGET)}"
        )

        trajectories = import_traces(path)
        scorers, missing = build_scorers()
        pairs = [
            (case_for(i, t), Output(trajectory=t, text=t.final_answer))
            for i, t in enumerate(trajectories)
        ]
        score_s, scored = best_of(options.repeat, lambda: score_all(scorers, pairs))
        rate = n / score_s
        print(f"\n(b) score with {len(scorers)} deterministic trajectory scorers")
        if missing:
            print(f"  not built: {', '.join(missing)}")
        print(
            f"  arbiter scoring:  {score_s:7.3f} s  {rate:10,.0f} trajectories/s"
            f"  ({score_s / base_s:.2f}x json.loads)  target >= {SCORE_TARGET:,.0f}/s: "
            f"{_verdict(rate >= SCORE_TARGET)}"
        )
        print(f"  scores without error: {scored:,} of {n * len(scorers):,}")
        trajectories.clear()
        pairs.clear()

        print("\n(c) import and score, streamed (agent score's path), in a fresh process")
        sizes = [(n, path)]
        if options.big:
            big = Path(folder) / "traces-big.jsonl"
            write_traces(big, 10 * n)
            sizes.append((10 * n, big))
        for count, file in sizes:
            found = streamed(file)
            assert found["runs"] == count, found
            peak = found["peak_mb"]
            print(
                f"  {count:>9,} traces: {found['seconds']:8.2f} s "
                f"{count / found['seconds']:8,.0f} runs/s  peak RSS {peak:6,.0f} MB"
                f"  target < {RSS_TARGET_MB:,.0f} MB: {_verdict(peak < RSS_TARGET_MB)}"
            )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak RSS of this process (it holds (b)'s runs) {peak:,.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
