"""Overhead of online scoring: the free path, and what escalation saves.

Run: ``python bench/online_overhead.py [n] [n_judged]``.

(a) ``n`` (default 100,000) predictions through ``OnlinePipeline.evaluate`` with only
    the free layers configured (heuristics with the bundled rules + grounding stages
    1-2): items/s (target >= 5,000/s) and the p99 per item (target <= 1 ms). The same
    items through the two pure checks called directly are the in-process baseline,
    so the pipeline's own cost (reading, ids, result, bookkeeping) shows as a ratio.
(b) ``n_judged`` (default 2,000) predictions, 10% of them flagged, through an
    ``OnlineScorer`` whose judge chain holds a stub answering in 200 ms: the share of
    judge calls avoided and the wall time against the ideal (flagged calls spread over
    the workers in full batches).

A benchmark, never a test: it prints, it does not assert.
"""

from __future__ import annotations

import asyncio
import datetime
import gc
import math
import os
import platform
import random
import sys
import time
from typing import Any

from arbiter.contract import Prediction
from arbiter.online.grounding import GroundingConfig, check_grounding
from arbiter.online.heuristics import compile_rules
from arbiter.online.judge_chain import JudgeChain
from arbiter.online.pipeline import OnlinePipeline
from arbiter.online.rules import default_rules
from arbiter.online.scorer import OnlineScorer

SEED = 20261130
ITEMS_TARGET = 5_000.0
P99_TARGET_MS = 1.0
JUDGE_DELAY_S = 0.2
WORKERS = 64
FLAGGED_SHARE = 0.10

NARRATIVES = (
    "Telemetry within expected bounds across all sensors; no action needed.",
    "Throughput dipped for 40 s on node 7, recovered without intervention; reviewed "
    "per policy OPS-2024-11 Section 2 and closed.",
    "Escalated per policy AML‑2024‑03 Section 4: structuring pattern of nine transfers "
    "just under 10,000 EUR; KYC refreshed, no OFAC match.",
    "",
)


def make_items(n: int, flagged_share: float, rng: random.Random) -> list[dict[str, Any]]:
    """Synapse-style predictions, some with a narrative; ``flagged_share`` contradict."""
    items: list[dict[str, Any]] = []
    for i in range(n):
        flagged = rng.random() < flagged_share
        label = rng.choice(("nominal", "degraded")) if not flagged else "nominal"
        raw: dict[str, Any] = {
            "status": label,
            "anomaly_score": 0.93 if flagged else round(rng.uniform(0.0, 0.6), 3),
            "policy_refs": ["OPS-2024-11", "AML-2024-03", "KYC and OFAC screening"],
        }
        narrative = NARRATIVES[i % len(NARRATIVES)]
        if narrative:
            raw["narrative"] = narrative
        confidence = round(rng.uniform(0.6, 0.99), 3)
        items.append({"id": f"ax-{i}", "label": label, "confidence": confidence, "raw_output": raw})
    return items


def percentile(sorted_values: list[float], q: float) -> float:
    index = min(len(sorted_values) - 1, math.ceil(q * len(sorted_values)) - 1)
    return sorted_values[max(index, 0)]


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


async def free_path(
    items: list[dict[str, Any]],
) -> tuple[float, list[float], list[float], int]:
    """Wall time, per-item wall and CPU seconds, and the count escalated."""
    pipeline = OnlinePipeline(grounding=GroundingConfig())
    walls: list[float] = []
    cpus: list[float] = []
    escalated = 0
    started = time.perf_counter()
    for item in items:
        t0, c0 = time.perf_counter(), time.thread_time()
        result = await pipeline.evaluate(item)
        cpus.append(time.thread_time() - c0)
        walls.append(time.perf_counter() - t0)
        escalated += result.escalated
    return time.perf_counter() - started, walls, cpus, escalated


def baseline(items: list[dict[str, Any]]) -> float:
    rules, grounding = compile_rules(default_rules()), GroundingConfig()
    started = time.perf_counter()
    for item in items:
        rules.check(item)
        check_grounding(item, grounding)
    return time.perf_counter() - started


class StubJudge:
    """Answers "critical" after a fixed delay, like a remote model would."""

    name = "stub"
    timeout = 5.0

    def __init__(self) -> None:
        self.calls = 0

    async def verdict(self, prediction: Prediction, context: str | None) -> str:
        self.calls += 1
        await asyncio.sleep(JUDGE_DELAY_S)
        return "critical"


async def escalation(items: list[dict[str, Any]]) -> tuple[float, int, int]:
    judge = StubJudge()
    chain = JudgeChain([judge], vocabulary=["nominal", "degraded", "critical"])
    pipeline = OnlinePipeline(grounding=GroundingConfig(), judge_chain=chain)
    scorer = OnlineScorer(pipeline, max_queue=len(items), workers=WORKERS)
    started = time.perf_counter()
    for item in items:
        scorer.submit(item)
    await scorer.close()
    return time.perf_counter() - started, judge.calls, scorer.completed


def main(n: int = 100_000, n_judged: int = 2_000) -> int:
    rng = random.Random(SEED)
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    print(
        f"online overhead — {datetime.date.today().isoformat()} — {platform.platform()}, "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, load average {load}"
    )

    items = make_items(n, 0.0, rng)
    # The prebuilt corpus is the benchmark's, not the service's (which streams): keep
    # its objects out of the collector so they do not lengthen every full collection.
    gc.collect()
    gc.freeze()
    base_s = baseline(items)
    wall_s, latencies, cpu_times, escalated = asyncio.run(free_path(items))
    latencies.sort()
    cpu_times.sort()
    rate = n / wall_s
    p50, p99 = percentile(latencies, 0.50) * 1e3, percentile(latencies, 0.99) * 1e3
    cpu_p99 = percentile(cpu_times, 0.99) * 1e3
    print(f"\n(a) free path: {n:,} items, heuristics + grounding stages 1-2, no other layer")
    print(
        f"  pipeline     {rate:>10,.0f} items/s   p50 {p50:.3f} ms   p99 {p99:.3f} ms   "
        f"max {latencies[-1] * 1e3:.2f} ms   ({escalated:,} escalated)"
    )
    print(f"  pipeline     CPU time per item: p99 {cpu_p99:.3f} ms (excludes preemption)")
    print(f"  baseline     {n / base_s:>10,.0f} items/s   (the two checks called directly)")
    print(f"  pipeline / baseline time: {wall_s / base_s:.2f}x")
    print(f"  items/s >= {ITEMS_TARGET:,.0f}: {verdict(rate >= ITEMS_TARGET)}")
    note = ""
    if p99 > P99_TARGET_MS >= cpu_p99:
        note = "  (wall tail = preemption by other processes: see the load average)"
    print(f"  p99 <= {P99_TARGET_MS:g} ms:      {verdict(p99 <= P99_TARGET_MS)}{note}")

    judged = make_items(n_judged, FLAGGED_SHARE, rng)
    flagged = sum(1 for item in judged if item["raw_output"]["anomaly_score"] >= 0.8)
    wall, calls, completed = asyncio.run(escalation(judged))
    # Ideal: the flagged items' judge calls in full batches of WORKERS, the free path of
    # every item hidden inside those waits (it is far shorter).
    free_s = wall_s / n * n_judged
    ideal = max(math.ceil(flagged / WORKERS) * JUDGE_DELAY_S, free_s)
    everything = max(math.ceil(n_judged / WORKERS) * JUDGE_DELAY_S, free_s)
    print(
        f"\n(b) escalation: {n_judged:,} items, {flagged} flagged ({flagged / n_judged:.1%}), "
        f"judge stub {JUDGE_DELAY_S * 1e3:.0f} ms, OnlineScorer with {WORKERS} workers"
    )
    print(f"  completed {completed:,}; judge calls {calls:,} of {n_judged:,}")
    print(f"  judge calls avoided: {1 - calls / n_judged:.1%}")
    print(
        f"  wall {wall:.2f} s vs ideal {ideal:.2f} s ({wall / ideal:.2f}x); "
        f"judging every item would take >= {everything:.2f} s"
    )
    return 0


if __name__ == "__main__":
    arguments = [int(value) for value in sys.argv[1:3]]
    sys.exit(main(*arguments))
