"""Judge panels: wall time of a panel with a hung member, and calibration speed.

Run: ``python bench/judge_panel.py [--items 1000] [--concurrency 64] [--timeout 0.3]``.

Part "panel": a decomposed judge (``content_safety``) with a panel of four stub models
reached through the provider registry, as real ones are: three answer a valid ruling
after 200 ms, one never answers and is cut off by its call timeout. ``--items`` items
are judged with at most ``--concurrency`` in flight. Each item therefore costs one call
timeout (the hung member sets it); the ideal is one timeout per batch of
``--concurrency`` items, ``ceil(items / concurrency) * timeout``. Target: wall time at
most 1.2x the ideal, and no item lost (every item gets a score with four votes, the
hung member's ``unknown`` among them, and a pass by the other three).

Part "calibrate" (``--pairs 1000000``): :func:`arbiter.judges.calibration.calibrate`
over that many (judge, human) pass / fail pairs of one judge (80% agreement, one
annotator), kappa with its interval and agreement, precision and recall with theirs
(2,000 bootstrap resamples), against scikit-learn's ``cohen_kappa_score`` on the same
labels in the same process, as Python lists and as numpy string arrays; best of
``--repeat`` runs each. Target: calibrate at most 0.5x scikit-learn's time (against
its faster input). A benchmark, never a test: it prints, it does not assert.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import time
from collections.abc import Callable
from typing import Any

from arbiter.config import Settings
from arbiter.contract import Example, Output, Score, Usage
from arbiter.judges.calibration import CalibrationReport, LabelPair, calibrate
from arbiter.judges.judges import content_safety
from arbiter.providers.base import CompletionRequest, CompletionResponse
from arbiter.providers.registry import ProviderFactory, ProviderRegistry
from arbiter.scoring.base import ScoringContext

TARGET_RATIO = 1.2
"""Wall time over the ideal (one call timeout per batch) the panel part should stay under."""
ANSWER_DELAY = 0.2
"""Seconds each answering stub takes."""
CALIBRATE_TARGET = 0.5
"""Calibrate's time over scikit-learn's kappa the calibration part should stay under."""
RULING = json.dumps(
    {"reasoning": "Nothing harmful.", "evidence": [], "verdict": "pass", "score": 1.0}
)


class StubJudge:
    """A judge model answering a fixed ruling after a delay, or never."""

    cacheable = False

    def __init__(self, name: str, *, hang: bool) -> None:
        self.name = name
        self.hang = hang

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        if self.hang:
            await asyncio.Event().wait()
        await asyncio.sleep(ANSWER_DELAY)
        usage = Usage(input_tokens=300, output_tokens=30, cost_usd=0.0001)
        return CompletionResponse(text=RULING, model=self.name, usage=usage)


def _factory(stub: StubJudge) -> ProviderFactory:
    return lambda settings, http: stub


def _context() -> ScoringContext:
    registry = ProviderRegistry()
    for name, hang in (("stub_a", False), ("stub_b", False), ("stub_c", False), ("hung", True)):
        registry.register_provider(name, _factory(StubJudge(name, hang=hang)))
    return ScoringContext(settings=Settings(), providers=registry, use_cache=False)


async def _judge_all(
    items: int, concurrency: int, call_timeout: float
) -> tuple[list[Score], float]:
    members: list[Any] = [
        {"provider": name, "model": "stub", "timeout": call_timeout}
        for name in ("stub_a", "stub_b", "stub_c", "hung")
    ]
    judge = content_safety(judges=members, max_members=4, context=_context())
    gate = asyncio.Semaphore(concurrency)

    async def one(n: int) -> Score:
        async with gate:
            return await judge(Example(id=f"item-{n}", input={}), Output(text=f"answer {n}"))

    started = time.perf_counter()
    scores = await asyncio.gather(*(one(n) for n in range(items)))
    return list(scores), time.perf_counter() - started


def part_panel(items: int = 1000, concurrency: int = 64, timeout: float = 0.3) -> None:
    """Print the panel's wall time against the ideal, and how many items were lost."""
    scores, wall = asyncio.run(_judge_all(items, concurrency, timeout))
    ideal = math.ceil(items / concurrency) * timeout
    complete = [
        s
        for s in scores
        if s.error is None
        and s.passed is True
        and s.metadata.get("tally") == {"pass": 3, "fail": 0, "unknown": 1}
    ]
    calls = sum(s.model.calls for s in scores if s.model is not None)
    ratio = wall / ideal
    print(f"panel: {items:,} items, 4 members (3 answer in {ANSWER_DELAY * 1000:.0f} ms, 1 hangs)")
    print(f"  concurrency {concurrency}, call timeout {timeout:g} s, {calls:,} model calls")
    print(f"  wall {wall:.2f} s, ideal {ideal:.2f} s (one timeout per batch): {ratio:.2f}x")
    print(f"  target <= {TARGET_RATIO}x: {'met' if ratio <= TARGET_RATIO else 'MISSED'}")
    lost = items - len(complete)
    print(f"  items with their full ruling: {len(complete):,} of {items:,}; lost: {lost:,}")


def _best(run: Callable[[], object], repeat: int) -> tuple[float, object]:
    """Fastest wall time of ``repeat`` calls, and the last call's result."""
    best, result = math.inf, None
    for _ in range(repeat):
        started = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - started)
    return best, result


def part_calibrate(pairs: int = 1_000_000, repeat: int = 3) -> None:
    """Print calibrate's time over ``pairs`` label pairs against scikit-learn's kappa."""
    import numpy as np
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(0)
    judge = rng.random(pairs) < 0.6
    human = np.where(rng.random(pairs) < 0.8, judge, ~judge)
    judge_array = np.where(judge, "pass", "fail")
    human_array = np.where(human, "pass", "fail")
    judge_list, human_list = judge_array.tolist(), human_array.tolist()
    labelled = [LabelPair(j, h) for j, h in zip(judge_list, human_list, strict=True)]
    ours, report = _best(lambda: calibrate(labelled), repeat)
    on_lists, kappa = _best(lambda: cohen_kappa_score(judge_list, human_list), repeat)
    on_arrays, _ = _best(lambda: cohen_kappa_score(judge_array, human_array), repeat)
    assert isinstance(report, CalibrationReport)
    (result,) = report.judges
    same = "equal" if result.kappa.value == kappa else f"DIFFERENT ({kappa!r})"
    ratio = ours / min(on_lists, on_arrays)
    print(f"calibrate: {pairs:,} pass / fail pairs of one judge, best of {repeat}")
    print(f"  calibrate (kappa, agreement, precision, recall, 95% intervals): {ours:.3f} s")
    print(f"  sklearn cohen_kappa_score: lists {on_lists:.3f} s, numpy arrays {on_arrays:.3f} s")
    print(
        f"  kappa {result.kappa.value:.6f} [{result.kappa.low:.4f}, {result.kappa.high:.4f}],"
        f" sklearn's: {same}"
    )
    print(f"  ratio to sklearn's faster input: {ratio:.2f} (to lists {ours / on_lists:.2f})")
    print(f"  target <= {CALIBRATE_TARGET}: {'met' if ratio <= CALIBRATE_TARGET else 'MISSED'}")


def main() -> None:
    """Run every part of the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--timeout", type=float, default=0.3, help="call timeout, seconds")
    parser.add_argument("--pairs", type=int, default=1_000_000, help="label pairs to calibrate")
    parser.add_argument("--repeat", type=int, default=3, help="calibration runs, best kept")
    args = parser.parse_args()
    part_panel(args.items, args.concurrency, args.timeout)
    part_calibrate(args.pairs, args.repeat)


if __name__ == "__main__":
    main()
