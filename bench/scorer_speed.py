"""Speed of scoring: deterministic scorers through a whole run, and the rubric judge.

Run: ``python bench/scorer_speed.py [--quick] [--only a|b] [--repeat N] [n] [n_rubric]``.

(a) ``n`` (default 100,000) examples with precomputed outputs through ``run_eval`` with
    a SQLite store, scored by ``casefold``, ``regex``, ``numeric`` and ``json`` together
    (target >= 5,000 examples/s). The baseline, in the same process, is the same run
    with one scorer that returns a constant Score: the run's own cost. Each scorer is
    then run alone, and its overhead per example is its run time minus the baseline's.
(b) ``n_rubric`` (default 2,000) examples scored by ``rubric`` on a stub judge that
    answers every request after 200 ms, at concurrency 64, with a store: wall time
    against the ideal ``n x 0.2 / 64`` (target <= 1.2x), then the same run again with
    the cache warm (target >= 50x faster than cold). The stub sits where the outside
    world would: registered in a provider registry and built by a ``ScoringContext``,
    so requests go through the real ``CachedProvider`` and on-disk ``ResponseCache``;
    the warm run has a new context, so its answers come from the file, not from memory.
    Baselines in the same process: a scorer that only sleeps 200 ms (what the loop and
    the runner allow cold) and the constant scorer (the run's own cost, warm).

The collector runs with the thresholds the ``arbiter`` command sets at start
(:func:`arbiter.cli.main.tune_gc`); ``--default-gc`` keeps Python's.
``--quick`` runs 10x fewer examples in both parts (a smoke run: its figures are not
the targets'); ``--repeat N`` shows the fastest of N runs of each configuration that
takes less than a second or so per thousand examples (on a shared machine the fastest
is the least disturbed). A benchmark, never a test: it prints, it does not assert.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import gc
import json
import math
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from arbiter.cli.main import tune_gc
from arbiter.config import Settings
from arbiter.contract import Dataset, Example, Output, Report, Score
from arbiter.harness.runner import run_eval_async
from arbiter.http.client import HttpClient
from arbiter.providers.base import CompletionRequest, CompletionResponse, Provider
from arbiter.providers.cache import CachedProvider, ResponseCache
from arbiter.providers.registry import ProviderRegistry
from arbiter.providers.shared import usage_with_cost
from arbiter.scoring.base import BuiltScorer, ScoreFunction, ScoringContext, scorer
from arbiter.scoring.registry import ScorerRegistry
from arbiter.store import Store
from arbiter.systems.precomputed import PrecomputedSystem

EXAMPLES_TARGET = 5_000.0
RUBRIC_DELAY_S = 0.2
RUBRIC_CONCURRENCY = 64
RUBRIC_RATIO_TARGET = 1.2
WARM_SPEEDUP_TARGET = 50.0
STUB_MODEL = "stub-judge-1"
STUB_PRICE = (1.0, 4.0)
"""USD per million input / output tokens of the stub judge, so the report prices calls."""
RUBRIC = "The answer names the city the order is shipped to."
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
    options: dict[str, dict[str, Any]] = {
        "casefold": {},
        "regex": {"pattern": r"^[A-Z][a-z]+$"},
        "numeric": {"path": "total", "expected_path": "metadata.total", "abs_tol": 0.01},
        "json": {"json_schema": schema},
    }
    return {name: registry.factory_of(name)(**args) for name, args in options.items()}


async def timed_run(
    dataset: Dataset, scorers: list[Any], folder: Path, label: str, *, repeat: int = 1
) -> float:
    """Seconds of the fastest of ``repeat`` stored runs of ``dataset`` with ``scorers``
    at concurrency 16 (on a shared machine the fastest is the least disturbed)."""
    times = []
    for i in range(repeat):
        seconds, _ = await timed_report(dataset, scorers, folder, f"{label}-{i}", concurrency=16)
        times.append(seconds)
    return min(times)


async def timed_report(
    dataset: Dataset,
    scorers: list[Any],
    folder: Path,
    label: str,
    *,
    concurrency: int,
    stored: bool = True,
) -> tuple[float, Report]:
    """Seconds and report of one run of ``dataset`` with ``scorers`` (stored in SQLite
    unless ``stored`` is False)."""
    store = Store(f"sqlite:///{folder / f'{label}.db'}") if stored else None
    try:
        started = time.perf_counter()
        report = await run_eval_async(
            PrecomputedSystem(), dataset, scorers=scorers, store=store, concurrency=concurrency
        )
        elapsed = time.perf_counter() - started
    finally:
        if store is not None:
            store.close()
    if report.errors_by_type:
        raise SystemExit(f"{label}: the run had errors: {report.error_examples}")
    errored = sum(section.errored for section in report.sections.values())
    if errored:
        raise SystemExit(f"{label}: {errored} scores errored")
    return elapsed, report


async def part_a(n: int, repeat: int) -> None:
    registry = ScorerRegistry.default(plugins=False)
    dataset = make_dataset(n)
    built = deterministic_scorers(registry)
    print(f"(a) {n:,} examples, precomputed outputs, SQLite store, concurrency 16")
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        # The dataset is built once and lives through every run: moved out of the
        # collector's generations, so that the first run does not pay for promoting it.
        gc.collect()
        gc.freeze()
        # Warm-up, not shown: first-use costs (imports, compiled patterns, SQLAlchemy's
        # statement cache) would otherwise land on whichever run comes first.
        await timed_run(
            make_dataset(min(n, 2_000)), [constant(), *built.values()], folder, "warm-up"
        )
        base = await timed_run(dataset, [constant()], folder, "baseline", repeat=repeat)
        print(f"    baseline (one constant scorer)  : {n / base:8,.0f} ex/s   {base:6.2f} s")
        for name, one in built.items():
            seconds = await timed_run(dataset, [one], folder, name, repeat=repeat)
            overhead = (seconds - base) / n * 1e6
            print(
                f"    {name:<32}: {n / seconds:8,.0f} ex/s   {seconds:6.2f} s   "
                f"overhead {overhead:6.1f} us/example"
            )
        together = await timed_run(dataset, list(built.values()), folder, "all", repeat=repeat)
        verdict = "PASS" if n / together >= EXAMPLES_TARGET else "MISS"
        print(
            f"    {'casefold+regex+numeric+json':<32}: {n / together:8,.0f} ex/s   "
            f"{together:6.2f} s   "
            f"{together / base:4.2f}x baseline   target >= {EXAMPLES_TARGET:,.0f}/s  {verdict}"
        )


@scorer(name="sleeper", kind="model", description="Sleeps as long as the stub judge.")
def sleeper(*, delay: float = RUBRIC_DELAY_S) -> ScoreFunction:
    """The cold baseline: a model scorer's wait with nothing around it."""

    async def score(example: Example, output: Output) -> Score:
        await asyncio.sleep(delay)
        return Score(passed=True, value=1.0)

    return score


class StubJudge:
    """A judge at the edge of the outside world: answers every request after ``delay``.

    It passes every output, quoting the output's first word (so the rubric's quote
    check finds it), and bills tokens as a model would (about four characters a token).
    """

    name = "stub"
    base_url = "stub://judge/v1"

    def __init__(self, delay: float, prices: dict[str, tuple[float, float]]) -> None:
        self.delay = delay
        self.prices = prices
        self.requests = 0
        self.seen: list[CompletionRequest] = []
        """Every request that reached the stub, in order."""

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        self.requests += 1
        self.seen.append(request)
        await asyncio.sleep(self.delay)
        output = request.prompt.rsplit("<output>\n", 1)[-1].removesuffix("\n</output>")
        words = output.split()
        text = json.dumps(
            {
                "reasoning": "The answer names a city.",
                "evidence": [{"quote": words[0], "shows": "the city"}] if words else [],
                "verdict": "pass",
                "score": 0.9,
            }
        )
        tokens = (len(request.system) + len(request.prompt)) // 4, len(text) // 4
        usage = usage_with_cost(*tokens, models=(request.model,), prices=self.prices)
        return CompletionResponse(
            text=text, model=request.model, usage=usage, latency_ms=self.delay * 1000
        )


def stub_rubric(judge: StubJudge, folder: Path) -> BuiltScorer:
    """The ``rubric`` scorer on ``judge`` as a run builds it: through a fresh
    ``ScoringContext`` whose provider registry knows the stub and whose cache is the
    file under ``folder`` (so a second call reads what the first one stored)."""
    settings = Settings(
        _env_file=None,
        home=folder / "home",
        cache_dir=folder / "cache",
        model_prices={STUB_MODEL: STUB_PRICE},
    )
    providers = ProviderRegistry.default(plugins=False)

    def build(settings: Settings, http: HttpClient) -> Provider:
        judge.prices = settings.model_prices
        return judge

    providers.register_provider("stub", build)
    context = ScoringContext(settings=settings, providers=providers, use_cache=True)
    factory = ScorerRegistry.default(plugins=False).factory_of("rubric")
    return factory(context=context, rubric=RUBRIC, provider="stub", model=STUB_MODEL)


async def hit_cost(judge: StubJudge, path: Path) -> tuple[float, float, float]:
    """Microseconds per request of a cache hit, of its key and of its lookup alone, over
    the requests the stub saw, on a new ``CachedProvider`` over the cache file."""
    cache = ResponseCache(path)
    cached = CachedProvider(judge, cache)
    requests = judge.seen
    cache.get(cached.key(requests[0]))  # open the file first
    started = time.perf_counter()
    keys = [cached.key(r) for r in requests]
    keyed = time.perf_counter()
    found = [cache.get(k) for k in keys]
    looked_up = time.perf_counter()
    for request in requests:
        await cached.complete(request)
    answered = time.perf_counter()
    cache.close()
    if None in found or cached.misses:
        raise SystemExit("(b) a request of the cold run is missing from the cache")
    per = 1e6 / len(requests)
    return (answered - looked_up) * per, (keyed - started) * per, (looked_up - keyed) * per


def row(label: str, figures: str) -> None:
    """One line of part (b): a label in a column of its own, then the figures."""
    print(f"    {label:<40}: {figures}")


def verdict(met: bool) -> str:
    return "PASS" if met else "MISS"


def _calls(report: Report) -> str:
    calls = report.model
    if calls is None:
        return "no model calls"
    cost = "cost unknown" if calls.cost_usd is None else f"${calls.cost_usd:.4f}"
    return (
        f"{calls.calls:,} calls, {calls.cached:,} cached, "
        f"{calls.input_tokens + calls.output_tokens:,} tokens, {cost}"
    )


async def part_b(n: int, repeat: int) -> None:
    dataset = make_dataset(n)
    ideal = n * RUBRIC_DELAY_S / RUBRIC_CONCURRENCY
    waves = math.ceil(n / RUBRIC_CONCURRENCY) * RUBRIC_DELAY_S
    print(
        f"(b) {n:,} examples, rubric on a stub judge answering in "
        f"{RUBRIC_DELAY_S * 1000:.0f} ms, concurrency {RUBRIC_CONCURRENCY}, SQLite store"
    )
    row(f"ideal n x {RUBRIC_DELAY_S} / {RUBRIC_CONCURRENCY}", f"{ideal:6.2f} s")
    row(f"floor: ceil(n / {RUBRIC_CONCURRENCY}) waves x {RUBRIC_DELAY_S}", f"{waves:6.2f} s")
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)

        async def run(
            label: str, scorers: list[Any], *, stored: bool = True
        ) -> tuple[float, Report]:
            return await timed_report(
                dataset, scorers, folder, label, concurrency=RUBRIC_CONCURRENCY, stored=stored
            )

        async def fastest(
            label: str, make: Callable[[], list[Any]], *, stored: bool = True
        ) -> tuple[float, Report]:
            """The fastest of ``repeat`` runs, each with scorers built anew."""
            runs = [await run(f"{label}-{i}", make(), stored=stored) for i in range(repeat)]
            return min(runs, key=lambda timed: timed[0])

        gc.collect()
        gc.freeze()  # as in (a)
        await run("warm-up", [sleeper(delay=0.0), constant()])  # first-use costs, not shown
        sleep_s, _ = await run("sleeper", [sleeper()])
        row(
            "baseline: a scorer sleeping 200 ms",
            f"{sleep_s:6.2f} s   {sleep_s / ideal:4.2f}x ideal",
        )
        judge = StubJudge(RUBRIC_DELAY_S, {})
        cold_s, cold = await run("cold", [stub_rubric(judge, folder)])
        asked_cold = judge.requests
        ratio = cold_s / ideal
        row(
            "rubric, cold cache",
            f"{cold_s:6.2f} s   {ratio:4.2f}x ideal   {cold_s / sleep_s:4.2f}x baseline   "
            f"target <= {RUBRIC_RATIO_TARGET}x ideal  {verdict(ratio <= RUBRIC_RATIO_TARGET)}",
        )
        print(f"      stub asked {asked_cold:,} times; report: {_calls(cold)}")
        constant_s, _ = await fastest("constant", lambda: [constant()])
        warm_s, warm = await fastest("warm", lambda: [stub_rubric(judge, folder)])
        asked_warm = judge.requests - asked_cold
        speedup = cold_s / warm_s
        row("baseline: one constant scorer", f"{constant_s:6.2f} s   {n / constant_s:8,.0f} ex/s")
        row(
            "rubric, warm cache (a new context)",
            f"{warm_s:6.2f} s   {n / warm_s:8,.0f} ex/s   {warm_s / constant_s:4.2f}x baseline   "
            f"{(warm_s - constant_s) / n * 1e6:4.0f} us/example over it",
        )
        print(f"      stub asked {asked_warm:,} times; report: {_calls(warm)}")
        row(
            "cold / warm",
            f"{speedup:6.1f}x   target >= {WARM_SPEEDUP_TARGET:.0f}x  "
            f"{verdict(speedup >= WARM_SPEEDUP_TARGET)}",
        )
        # Diagnostic: the same two runs without the run store, whose writes dominate the
        # warm run (the cold run's time is the stub's: the store hides behind its waits).
        bare_s, _ = await fastest("constant-bare", lambda: [constant()], stored=False)
        bare_warm_s, _ = await fastest(
            "warm-bare", lambda: [stub_rubric(judge, folder)], stored=False
        )
        row(
            "diag: no store: constant, warm rubric",
            f"{bare_s:6.2f} s, {bare_warm_s:5.2f} s   cold / warm {cold_s / bare_warm_s:5.1f}x",
        )
        asked_warm = judge.requests - asked_cold
        hit, key, lookup = await hit_cost(judge, folder / "cache" / "models.sqlite3")
        row(
            "diag: one cache hit (key, lookup)",
            f"{hit:6.1f} us   ({key:.1f} us, {lookup:.1f} us)",
        )
        if asked_cold != n or asked_warm or warm.model is None or warm.model.cached != n:
            raise SystemExit("(b) the cache did not answer the warm run: the figures are void")
        if [s.passed for s in cold.sections.values()] != [s.passed for s in warm.sections.values()]:
            raise SystemExit("(b) the warm run scored differently from the cold one")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("n", nargs="?", type=int, default=100_000, help="examples of (a)")
    parser.add_argument("n_rubric", nargs="?", type=int, default=2_000, help="examples of (b)")
    parser.add_argument("--quick", action="store_true", help="10x fewer examples (smoke run)")
    parser.add_argument("--only", choices=["a", "b"], help="run one part")
    parser.add_argument(
        "--default-gc",
        action="store_true",
        help="keep Python's collector thresholds instead of the arbiter command's "
        "(arbiter.cli.main.tune_gc)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="runs of each fast configuration, the fastest shown (all of (a); the warm "
        "and constant runs of (b): the cold runs are the stub's waits)",
    )
    args = parser.parse_args(argv)
    scale = 10 if args.quick else 1
    print(f"date     : {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M:%S} UTC")
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"machine  : {os.cpu_count()} CPUs, {platform.platform()}, load average {load}")
    if not args.default_gc:
        tune_gc()  # what the arbiter command does at start
    young, middle, old = gc.get_threshold()
    print(f"python   : {platform.python_implementation()} {platform.python_version()}")
    print(f"gc       : thresholds {young}, {middle}, {old}\n")
    if args.only in (None, "a"):
        asyncio.run(part_a(args.n // scale, args.repeat))
    if args.only is None:
        print()
    if args.only in (None, "b"):
        asyncio.run(part_b(args.n_rubric // scale, args.repeat))
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"\nload average at the end: {load}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
