"""Speed of the offline jury: 1,000 cases through the default 3-critic mock roster on one core.

Run: ``python bench/jury_speed.py [--n 1000] [--data DIR] [--repeats 3]``.

Every case goes through ``Jury().judge_async`` (three critics on the mock provider, which
runs the string detectors, then the synthesis), one case after another inside a single
``asyncio.run``: the process is single-threaded, and where the OS allows it the process is
also pinned to CPU 0 with ``os.sched_setaffinity(0, {0})``. The detectors cache their
reading of a text, so every case set below is made of DISTINCT texts where it says so,
and the text caches are emptied before each repeat (the figure is the cold one). Timed,
best of ``--repeats``:

1. baseline: the same jury machinery (request building, JSON parsing, synthesis) with the
   three critics on a provider named ``fixed`` that answers a fixed clean critique
   without running any detector (a ``mock`` critic would run the detectors itself, in
   ``arbiter.jury.offline``); the floor the detectors add to.
2. set A: n distinct bundled-size cases, the 72 bundled cases cycled with a unique
   letters-only tag on every copy's task, context and output.
3. set B: n distinct cases, the 72 bundled cases then SummEdits rows round-robin over its
   five domains (``../shared/benchmarks/summedits`` or ``--data``); their outputs are
   distinct already, and as the rows share 94 source documents every task and context
   gets a unique tag. SummEdits contexts are ~5x longer than the bundled ones.
4. set B with every case in flight at once (``asyncio.gather`` behind a semaphore of 16,
   as ``arbiter jury eval`` schedules them, without its store).
5. the 72 bundled cases repeated up to n, untagged: warm caches after the first 72, the
   flattering figure, shown for contrast.
6. one long case: an output of 100,000 characters and a context as long, made of the
   outputs and contexts of set B (or A) joined, every copy tagged unique; then one of
   1,000,000 characters, made the same way from further copies (other tags). The
   detectors must take time linear in the length of the texts: the 1M case should take
   about 10x the 100k one, and under 10 s.

Target: >= 500 cases/s for runs 2, 3 and 5; for 6, growth about linear (the 1M case at
most 12.5x the 100k one, ``LONG_SLACK``) and the 1M case under ``LONG_TARGET`` seconds. A
benchmark, never a test: it prints, it does not assert.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import importlib
import os
import pkgutil
import platform
import statistics
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import arbiter.jury.detectors
from arbiter.contract import Case
from arbiter.jury.cases import bundled_cases_path, load_cases
from arbiter.jury.critics import DEFAULT_ROSTER
from arbiter.jury.jury import Jury
from arbiter.jury.offline import critique_of
from arbiter.providers.base import CompletionRequest, CompletionResponse

TARGET = 500.0
"""Cases per second the mock jury should sustain on one core."""
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared/benchmarks/summedits"
DOMAINS = ("podcast", "sales_call", "samsum", "scitldr", "qmsumm")
GATHER_CONCURRENCY = 16
WARMUP = 40
LONG_SIZES = (100_000, 1_000_000)
"""Characters of the output (and of the context) of the long cases of run 6."""
LONG_TARGET = 10.0
"""Seconds the 1,000,000-character case may take."""
LONG_SLACK = 1.25
"""How much slower than linear the 1M case may be: 12.5x the 100k case (linear is 10x)."""
FIXED_ROSTER = tuple(c.model_copy(update={"provider": "fixed"}) for c in DEFAULT_ROSTER)
"""The default roster on the ``fixed`` provider: the baseline, no detector runs."""


# --------------------------------------------------------------------------- machine


def pin_to_one_core() -> str:
    """Pin this process to CPU 0 where the OS allows it; say what happened."""
    setter = getattr(os, "sched_setaffinity", None)
    if setter is None:
        return "not pinned (os.sched_setaffinity unavailable); the loop is single-threaded"
    try:
        setter(0, {0})
    except OSError as exc:
        return f"not pinned ({exc.strerror}); the loop is single-threaded"
    return "pinned to CPU 0 with os.sched_setaffinity(0, {0}); single-threaded asyncio loop"


def cpu_model() -> str:
    """The CPU's model name, from /proc/cpuinfo where there is one."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def print_header(pinning: str) -> None:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    print(f"date     : {dt.datetime.now().astimezone():%Y-%m-%d %H:%M:%S %z}")
    print(f"machine  : {cpu_model()}; {os.cpu_count()} CPUs; {platform.platform()}")
    print(f"load     : {load}")
    print(f"python   : {platform.python_implementation()} {platform.python_version()}")
    print(f"core     : {pinning}")
    roster = ", ".join(f"{c.name} ({c.lens}, {c.provider})" for c in DEFAULT_ROSTER)
    print(f"jury     : {roster}")


# --------------------------------------------------------------------------- cases


def letters(i: int) -> str:
    """A letters-only tag for ``i`` (no digit, so no detector reads it as a figure)."""
    out = ""
    i += 26 * 26  # at least three letters
    while i:
        i, r = divmod(i, 26)
        out = "abcdefghijklmnopqrstuvwxyz"[r] + out
    return "zq" + out


def tagged(case: Case, i: int, *, output: bool = False) -> Case:
    """``case`` with a unique tag on its task and context (and output when asked)."""
    tag = letters(i)
    update = {
        "id": f"{case.id}~{tag}",
        "task": f"{case.task} (Request {tag}.)",
        "context": f"Source {tag}.\n{case.context}",
    }
    if output:
        update["output"] = f"{case.output} (Request {tag}.)"
    return case.model_copy(update=update)


def summedits_rows(data: Path) -> list[Case]:
    """SummEdits rows round-robin over the domains, in file order within a domain."""
    files = [data / f"{d}.jsonl" for d in DOMAINS]
    per_domain = [load_cases(f) for f in files if f.exists()]
    rows: list[Case] = []
    for i in range(max((len(g) for g in per_domain), default=0)):
        rows.extend(g[i] for g in per_domain if i < len(g))
    return rows


def varied_bundled(n: int, bundled: Sequence[Case], offset: int = 0) -> list[Case]:
    """The bundled cases cycled to n, each copy's task, context and output tagged unique."""
    return [tagged(bundled[i % len(bundled)], offset + i, output=True) for i in range(n)]


def with_summedits(n: int, bundled: Sequence[Case], data: Path) -> list[Case]:
    """The bundled cases, then SummEdits rows with distinct outputs, up to n; tagged unique.

    Outputs are distinct already; the tag makes each task and context distinct too (the
    rows share 94 source documents).
    """
    seen = {c.output for c in bundled}
    pool = list(bundled)
    for row in summedits_rows(data):
        if len(pool) >= n:
            break
        if row.output not in seen:
            seen.add(row.output)
            pool.append(row)
    return [tagged(c, i) for i, c in enumerate(pool)]


def long_case(size: int, pool: Sequence[Case], offset: int) -> Case:
    """One case whose output and context are each ``size`` characters long.

    The outputs and contexts of ``pool`` cycled, every copy tagged unique from
    ``offset`` on (as in set A), joined by blank lines until long enough.
    """
    outputs: list[str] = []
    contexts: list[str] = []
    out_chars = ctx_chars = 0
    i = 0
    while out_chars < size or ctx_chars < size:
        copy = tagged(pool[i % len(pool)], offset + i, output=True)
        if out_chars < size:
            outputs.append(copy.output)
            out_chars += len(copy.output) + 2
        if ctx_chars < size:
            contexts.append(copy.context)
            ctx_chars += len(copy.context) + 2
        i += 1
    return Case(
        id=f"long-{size}-{letters(offset)}",
        task="Summarise these documents.",
        context="\n\n".join(contexts)[:size],
        output="\n\n".join(outputs)[:size],
    )


def describe(cases: Sequence[Case]) -> str:
    """How distinct a case set is, and how long its contexts are."""
    return (
        f"distinct tasks {len({c.task for c in cases}):,}, "
        f"contexts {len({c.context for c in cases}):,}, "
        f"outputs {len({c.output for c in cases}):,}; "
        f"median context {statistics.median(len(c.context) for c in cases):,.0f} chars"
    )


# --------------------------------------------------------------------------- caches


def text_caches() -> list[Callable[[], None]]:
    """``cache_clear`` of every lru cache in the detectors and quote matching."""
    modules = [importlib.import_module("arbiter.scoring.quotes")]
    for info in pkgutil.iter_modules(arbiter.jury.detectors.__path__):
        modules.append(importlib.import_module(f"arbiter.jury.detectors.{info.name}"))
    clears: dict[int, Callable[[], None]] = {}
    for module in modules:
        for value in vars(module).values():
            clear = getattr(value, "cache_clear", None)
            if callable(clear) and hasattr(value, "cache_info"):
                clears[id(value)] = clear
    return list(clears.values())


# --------------------------------------------------------------------------- runs


class FixedProvider:
    """Answers every request with one clean critique, running no detector (the baseline)."""

    name = "fixed"
    text = critique_of([]).model_dump_json()

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        return CompletionResponse(text=self.text, model="fixed")


@dataclass
class Timing:
    seconds: float
    latencies: list[float]

    def rate(self, n: int) -> float:
        return n / self.seconds


async def sequential(jury: Jury, cases: Sequence[Case]) -> Timing:
    latencies: list[float] = []
    start = time.perf_counter()
    for case in cases:
        t = time.perf_counter()
        await jury.judge_async(case)
        latencies.append(time.perf_counter() - t)
    return Timing(time.perf_counter() - start, latencies)


async def gathered(jury: Jury, cases: Sequence[Case]) -> Timing:
    gate = asyncio.Semaphore(GATHER_CONCURRENCY)

    async def one(case: Case) -> None:
        async with gate:
            await jury.judge_async(case)

    start = time.perf_counter()
    await asyncio.gather(*(one(c) for c in cases))
    return Timing(time.perf_counter() - start, [])


def best_of(
    repeats: int,
    run: Callable[[], Timing],
    before: Callable[[], None],
) -> Timing:
    """The fastest of ``repeats`` runs, ``before`` called ahead of each."""
    timings = []
    for _ in range(repeats):
        before()
        timings.append(run())
    return min(timings, key=lambda t: t.seconds)


def quantile_ms(latencies: Sequence[float], q: float) -> str:
    if not latencies:
        return "-"
    ordered = sorted(latencies)
    return f"{ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000:.2f}"


def by_context_length(cases: Sequence[Case], timing: Timing) -> str:
    """Mean ms/case per quartile of context length."""
    pairs = sorted(zip((len(c.context) for c in cases), timing.latencies, strict=True))
    parts = []
    for q in range(4):
        part = pairs[q * len(pairs) // 4 : (q + 1) * len(pairs) // 4]
        if part:
            mean = statistics.fmean(t for _, t in part) * 1000
            parts.append(f"{part[0][0]:,}-{part[-1][0]:,} chars {mean:.2f} ms")
    return "; ".join(parts)


def print_long_rows(
    jury: Jury, pool: Sequence[Case], repeats: int, before: Callable[[], None], offset: int
) -> None:
    """Run 6: one long case of each of ``LONG_SIZES``, timed cold, best of ``repeats``."""
    print(f"{'run 6: one long case':<44}  {'seconds':>8}  {'x 100k':>7}  target")
    base: float | None = None
    for k, size in enumerate(LONG_SIZES):
        # Copies tagged apart from every other run's, and from the other long case's.
        case = long_case(size, pool, offset + k * size)
        timing = best_of(repeats, lambda c=case: asyncio.run(sequential(jury, [c])), before)
        seconds = timing.seconds
        ratio, verdict = "", ""
        if base is None:
            base = seconds
        else:
            allowed = LONG_SLACK * size / LONG_SIZES[0]
            ok = seconds < LONG_TARGET and seconds / base <= allowed
            ratio = f"x{seconds / base:.1f}"
            verdict = f"< {LONG_TARGET:g} s, <= x{allowed:g}  {'PASS' if ok else 'MISS'}"
        name = f"output {len(case.output):,} chars, context {len(case.context):,}"
        print(f"{name:<44}  {seconds:8.2f}  {ratio:>7}  {verdict}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--n", type=int, default=1000, help="cases per run [1000]")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="SummEdits JSONL dir")
    parser.add_argument("--repeats", type=int, default=3, help="best of this many [3]")
    args = parser.parse_args(argv)
    n: int = args.n
    repeats: int = args.repeats

    print_header(pin_to_one_core())
    bundled = load_cases(bundled_cases_path())
    short = varied_bundled(n, bundled)
    have_data = args.data.is_dir() and any(args.data.glob("*.jsonl"))
    mixed = with_summedits(n, bundled, args.data) if have_data else []
    repeated = [bundled[i % len(bundled)] for i in range(n)]
    print(f"set A    : {n:,} distinct, the {len(bundled)} bundled cases cycled, every copy's")
    print(f"           task, context and output tagged unique; {describe(short)}")
    if mixed:
        print(
            f"set B    : {len(mixed):,} distinct, {len(bundled)} bundled + "
            f"{len(mixed) - len(bundled):,} SummEdits rows (round-robin over {len(DOMAINS)} "
            f"domains, {args.data}),"
        )
        print(f"           task and context tagged unique; {describe(mixed)}")
    else:
        print(f"set B    : skipped, no SummEdits JSONL in {args.data} (--data DIR)")
    print(f"repeated : the {len(bundled)} bundled cases cycled to {n:,}, untagged")
    print(f"timing   : best of {repeats}; detector text caches emptied before every repeat")
    print()

    clears = text_caches()

    def cold() -> None:
        for clear in clears:
            clear()

    mock = Jury()
    baseline = Jury(FIXED_ROSTER, providers={"fixed": FixedProvider()})
    warmup = varied_bundled(WARMUP, bundled, offset=10 * n)  # imports, regexes, schema
    asyncio.run(sequential(mock, warmup))
    asyncio.run(sequential(baseline, warmup))

    def timed(jury: Jury, cases: Sequence[Case], *, gather: bool = False) -> Timing:
        run = gathered if gather else sequential
        return best_of(repeats, lambda: asyncio.run(run(jury, cases)), cold)

    widest = mixed or short
    runs: list[tuple[str, int, Timing, bool]] = [
        (
            "baseline: fixed critique, no detectors, set " + ("B" if mixed else "A"),
            len(widest),
            timed(baseline, widest),
            False,
        ),
        (f"mock jury, set A: {n:,} distinct bundled-size", n, timed(mock, short), True),
    ]
    if mixed:
        runs.append(
            (
                f"mock jury, set B: {len(mixed):,} distinct w/ SummEdits",
                len(mixed),
                timed(mock, mixed),
                True,
            )
        )
        runs.append(
            (
                f"mock jury, set B, gathered x{GATHER_CONCURRENCY}",
                len(mixed),
                timed(mock, mixed, gather=True),
                False,
            )
        )
    runs.append(
        (f"mock jury, {len(bundled)} bundled repeated to {n:,}", n, timed(mock, repeated), True)
    )

    width = max(len(name) for name, _, _, _ in runs)
    print(f"{'run':<{width}}  {'cases/s':>8}  {'p50 ms':>7}  {'p99 ms':>7}  target")
    for name, count, timing, gated in runs:
        rate = timing.rate(count)
        verdict = (f">= {TARGET:g}  " + ("PASS" if rate >= TARGET else "MISS")) if gated else ""
        print(
            f"{name:<{width}}  {rate:8,.0f}  {quantile_ms(timing.latencies, 0.5):>7}  "
            f"{quantile_ms(timing.latencies, 0.99):>7}  {verdict}"
        )
    print()
    if mixed:
        print(f"set B by context length: {by_context_length(mixed, runs[2][2])}")
    floor = runs[0][2].seconds / runs[0][1]
    print(f"jury machinery without detectors (baseline): {floor * 1000:.2f} ms/case")
    print()
    print_long_rows(mock, widest, repeats, cold, offset=20 * n)
    print(f"threads alive at the end: {threading.active_count()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
