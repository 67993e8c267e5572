"""How fast the run pages open on a run of 100 results and on one of 100,000.

Run: ``python bench/ui_pages.py [--small 100] [--large 100000] [--repeat 15]``.

Two SQLite stores are filled through the real ``Store`` (a dataset, a run, its results
with a ``label`` score, 20% failing), the app is served by uvicorn on a local port, and
each page is fetched over HTTP:

- the first open of ``/runs/{id}`` (no kept report yet: a small run's report is computed
  while the page waits, a large run's on a thread while the page says so), and how long
  the large run's report then takes to be kept;
- warm opens (median of ``--repeat``, the two runs in turns) of ``/runs/{id}``, its last
  page of examples, the failing tab, the runs table and the REST page of results, once
  the report is kept.

It prints each median and its ratio large / small (target: the warm run page of the large
run within 2x the small one's). A benchmark, never a test: it prints, it does not assert.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from arbiter.config import Settings
from arbiter.contract import Dataset, Example, Output, PairResult, RunConfig, Score
from arbiter.server.app import create_app
from arbiter.store import Store
from tests.helpers.local_server import serve_on_free_port

_LABELS = ("low", "high")
_COHORTS = ("wire", "card", "cash", "crypto")


def seed(store: Store, n: int) -> str:
    """A completed run of ``n`` examples with one result each, 20% of them failing."""
    rnd = random.Random(n)
    examples = [
        Example(
            id=f"ex-{i:06d}",
            input={"amount": i, "memo": "payment"},
            expected_label=_LABELS[i % 2],
            cohort=_COHORTS[i % len(_COHORTS)],
        )
        for i in range(n)
    ]
    data = Dataset(name=f"bench-{n}", version="1", examples=examples)
    run_id = store.create_run(
        dataset=data,
        system={"kind": "python", "target": "bench:classify"},
        config=RunConfig().model_dump(mode="json"),
        n_pairs=n,
        name=f"bench {n:,}",
    )
    segment = store.start_segment(run_id)
    batch: list[PairResult] = []
    for example in examples:
        expected = example.expected_label or "low"
        right = rnd.random() < 0.8
        label = expected if right else _LABELS[1 - _LABELS.index(expected)]
        batch.append(
            PairResult(
                example_id=example.id,
                repetition=0,
                output=Output(label=label),
                scores=[
                    Score(
                        name="label",
                        value=1.0 if right else 0.0,
                        passed=right,
                        answer=label,
                        expected=expected,
                    )
                ],
                passed=right,
                latency_ms=1.0,
            )
        )
        if len(batch) == 5_000:
            store.add_results(run_id, batch)
            batch = []
    if batch:
        store.add_results(run_id, batch)
    store.end_segment(run_id, segment, "completed", elapsed_seconds=1.0)
    return run_id


def _get(client: httpx.Client, url: str) -> float:
    started = time.perf_counter()
    response = client.get(url)
    elapsed = time.perf_counter() - started
    if response.status_code != 200:
        raise SystemExit(f"GET {url}: {response.status_code}")
    return elapsed


@dataclass
class Served:
    """One seeded store served by the app."""

    n: int
    run_id: str
    app: Any
    client: httpx.Client


def _serve(n: int, folder: Path, stack: ExitStack) -> Served:
    store = Store(f"sqlite:///{folder / f'store-{n}.db'}")
    stack.callback(store.close)
    started = time.perf_counter()
    run_id = seed(store, n)
    print(f"  seeded {n:,} results in {time.perf_counter() - started:.1f} s", flush=True)
    settings = Settings(_env_file=None, home=folder / "home")  # type: ignore[call-arg]
    app = create_app(settings, store=store)
    base = stack.enter_context(serve_on_free_port(app))
    client = stack.enter_context(httpx.Client(base_url=base, timeout=600))
    return Served(n, run_id, app, client)


def _pages(s: Served) -> dict[str, str]:
    last_page = max(1, -(-s.n // 50))
    return {
        "run page (report kept)": f"/runs/{s.run_id}",
        "last page of examples": f"/runs/{s.run_id}?page={last_page}",
        "failing tab": f"/runs/{s.run_id}?show=failing",
        "runs table": "/",
        "REST results page": f"/v1/runs/{s.run_id}/results?limit=50",
    }


def measure(small: int, large: int, repeat: int, folder: Path) -> dict[str, tuple[float, float]]:
    """Seconds per page of each run: the first open, then warm medians taken in turns
    (small, large, small, ...), so a change of the machine's load hits both alike."""
    figures: dict[str, tuple[float, float]] = {}
    with ExitStack() as stack:
        a, b = _serve(small, folder, stack), _serve(large, folder, stack)
        firsts = []
        kept = []
        for s in (a, b):
            s.client.get("/runs/none")  # the server's own first request: templates compiled
            firsts.append(_get(s.client, f"/runs/{s.run_id}"))
            started = time.perf_counter()
            s.app.state.report_keeper.wait(s.run_id)
            kept.append(time.perf_counter() - started)
        figures["first open of the run page"] = (firsts[0], firsts[1])
        figures["then the report is kept within"] = (kept[0], kept[1])
        pages_a, pages_b = _pages(a), _pages(b)
        for name in pages_a:
            _get(a.client, pages_a[name])
            _get(b.client, pages_b[name])
            times_a, times_b = [], []
            for _ in range(repeat):
                times_a.append(_get(a.client, pages_a[name]))
                times_b.append(_get(b.client, pages_b[name]))
            figures[name] = (statistics.median(times_a), statistics.median(times_b))
    return figures


def main() -> None:
    """Measure both sizes and print the table with ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=100)
    parser.add_argument("--large", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        figures = measure(args.small, args.large, args.repeat, Path(tmp))
    print()
    print(f"{'page':<36} {args.small:>10,} {args.large:>10,}   ratio")
    for name, (a, b) in figures.items():
        ratio = f"{b / a:5.2f}x" if a >= 0.001 else "    -"
        print(f"{name:<36} {a * 1000:>8.1f}ms {b * 1000:>8.1f}ms  {ratio}")
    a, b = figures["run page (report kept)"]
    print(f"\nwarm run page, large / small: {b / a:.2f}x (target <= 2x)")


if __name__ == "__main__":
    main()
