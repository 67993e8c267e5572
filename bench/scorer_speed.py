"""Speed of scoring: deterministic scorers through a whole run, and the rubric judge.

Run: ``python bench/scorer_speed.py [n] [n_rubric]``.

(a) ``n`` (default 100,000) examples with precomputed outputs through ``run_eval`` with
    a SQLite store, scored by ``casefold``, ``regex``, ``numeric`` and ``json`` together
    (target >= 5,000 examples/s). The baseline, in the same process, is the same run
    with one scorer that returns a constant Score: the run's own cost. Each scorer is
    then run alone, and its overhead per example is its run time minus the baseline's.
(b) ``n_rubric`` (default 2,000) examples scored by ``rubric`` on a stub provider that
    answers every request after 200 ms, at concurrency 64: wall time against the ideal
    ``n x 0.2 / 64`` (target <= 1.2x), then the same run again with the cache warm
    (target >= 50x faster than cold).

A benchmark, never a test: it prints, it does not assert.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from arbiter.contract import Dataset, Example, Output, Score
from arbiter.harness.runner import run_eval_async
from arbiter.scoring.base import BuiltScorer, ScoreFunction, scorer
from arbiter.scoring.registry import ScorerRegistry
from arbiter.store import Store
from arbiter.systems.precomputed import PrecomputedSystem

EXAMPLES_TARGET = 5_000.0
RUBRIC_DELAY_S = 0.2
RUBRIC_CONCURRENCY = 64
RUBRIC_RATIO_TARGET = 1.2
WARM_SPEEDUP_TARGET = 50.0
CITIES = ("Paris", "Lyon", "Rome", "Oslo", "Lima", "Quito", "Hanoi", "Accra")


@scorer(name="constant", description="Passes everything: the run's own cost.")
def constant() -> ScoreFunction:
    """The baseline scorer: a fixed Score, no work."""

    def score(example: Example, output: Output) -> Score:
        return Score(passed=True, value=1.0)

    return score


def make_dataset(n: int) -> Dataset:
    """``n`` examples whose outputs carry a short text and a JSON payload."""
    examples = []
    for i in range(n):
        city = CITIES[i % len(CITIES)]
        answer = city if i % 5 else CITIES[(i + 1) % len(CITIES)]
        total = round(i * 1.25, 2)
        examples.append(
            Example(
                id=f"e{i}",
                input={"question": f"Where is order {i} shipped, and for how much?"},
                expected=city,
                output={
                    "text": f"{answer}",
                    "raw": {"city": answer, "total": total, "currency": "EUR"},
                },
                metadata={"total": total},
            )
        )
    return Dataset(name="scorer-speed", examples=examples)


def deterministic_scorers(registry: ScorerRegistry) -> dict[str, BuiltScorer]:
    """The four scorers of part (a), built through the registry as a run builds them."""
    schema = {
        "type": "object",
        "required": ["city", "total"],
        "properties": {"city": {"type": "string"}, "total": {"type": "number"}},
    }
    options = {
        "casefold": {},
        "regex": {"pattern": r"^[A-Z][a-z]+$"},
        "numeric": {"path": "total", "expected_path": "metadata.total", "abs_tol": 0.01},
        "json": {"json_schema": schema},
    }
    return {name: registry.factory_of(name)(**args) for name, args in options.items()}


async def timed_run(dataset: Dataset, scorers: list[Any], folder: Path, label: str) -> float:
    """Seconds of one stored run of ``dataset`` with ``scorers``."""
    store = Store(f"sqlite:///{folder / f'{label}.db'}")
    try:
        started = time.perf_counter()
        report = await run_eval_async(
            PrecomputedSystem(), dataset, scorers=scorers, store=store, concurrency=16
        )
        elapsed = time.perf_counter() - started
    finally:
        store.close()
    if report.errors_by_type:
        raise SystemExit(f"{label}: the run had errors: {report.error_examples}")
    return elapsed


async def part_a(n: int) -> None:
    registry = ScorerRegistry.default(plugins=False)
    dataset = make_dataset(n)
    built = deterministic_scorers(registry)
    print(f"(a) {n:,} examples, precomputed outputs, SQLite store, concurrency 16")
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        base = await timed_run(dataset, [constant()], folder, "baseline")
        print(f"    baseline (one constant scorer)  : {n / base:8,.0f} ex/s   {base:6.2f} s")
        for name, one in built.items():
            seconds = await timed_run(dataset, [one], folder, name)
            overhead = (seconds - base) / n * 1e6
            print(
                f"    {name:<32}: {n / seconds:8,.0f} ex/s   {seconds:6.2f} s   "
                f"overhead {overhead:6.1f} us/example"
            )
        together = await timed_run(dataset, list(built.values()), folder, "all")
        verdict = "PASS" if n / together >= EXAMPLES_TARGET else "MISS"
        print(
            f"    {'casefold+regex+numeric+json':<32}: {n / together:8,.0f} ex/s   "
            f"{together:6.2f} s   "
            f"{together / base:4.2f}x baseline   target >= {EXAMPLES_TARGET:,.0f}/s  {verdict}"
        )


def main(argv: list[str]) -> int:
    n = int(argv[1]) if len(argv) > 1 else 100_000
    print(f"date     : {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M:%S} UTC")
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"machine  : {os.cpu_count()} CPUs, {platform.platform()}, load average {load}")
    print(f"python   : {platform.python_implementation()} {platform.python_version()}\n")
    asyncio.run(part_a(n))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
