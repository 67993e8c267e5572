"""How fast the run pages open on a run of 100 results and on one of 100,000.

Run: ``python bench/ui_pages.py [--small 100] [--large 100000] [--repeat 15]``, or
``python bench/ui_pages.py --rss [--runs 1000] [--per-run 100]`` for the server's memory.

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

``--compare [--large 100000]`` seeds two runs of ``--large`` results of one dataset in a
SQLite store and times, in this process, best of ``--repeat`` (at most 3 for the old
way): the comparison as it was made (both runs read whole, ``diff_runs``, and the compare
page's cohorts by ``diff_runs`` per cohort) against the comparison from the store's SQL
figures (``compare_runs`` with every flip's texts, as the API and ``arbiter diff --json``
ask; with the first 200 per list, and the compare page's ``compare_for_page`` with the
runs' reports kept), checking that both give the same figures; and the run page's last
page of examples read by position (``OFFSET``) against read by key (the pager's links)
and by number from the nearer end.

``--result-pages [--large 100000]`` seeds one run of ``--large`` results, serves it and
times over HTTP (medians of ``--repeat``, the pages in turns) the run page's scorer tab
(``?show=failing&scorer=label``) and ``GET /v1/runs/{id}/results`` under each filter and
order: the first page, the last page asked for by number (``?page=``, a cursor of a
position alone) and the last page reached from the one before (the Next link, ``next``),
and each listing's first visit before its sizes are kept. To compare with an older
version, run this script with that version's ``src`` first on ``PYTHONPATH``.

``--rss`` fills one store with ``--runs`` runs of ``--per-run`` results (1,000 x 100:
100,000 results), starts ``arbiter serve`` on it as a process of its own, opens every
page kind (every page of the runs table, every run's page, failing tab and last page of
examples, a compare of each run with the one before, the agents, annotation, calibration
and inbox pages, the REST lists) and prints the server's resident memory: idle, after,
and its peak (``VmHWM``). Target: a peak under 500 MB.
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import statistics
import subprocess
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
from arbiter.server.pages_runs import RUNS_PER_PAGE
from arbiter.store import Store
from tests.helpers.local_server import serve_on_free_port

_LABELS = ("low", "high")
_COHORTS = ("wire", "card", "cash", "crypto")


def seed(store: Store, n: int, index: int = 0) -> str:
    """A completed run of ``n`` examples with one result each, 20% of them failing
    (``index`` numbers the run among several of one size)."""
    rnd = random.Random(f"{n}-{index}" if index else n)
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
        name=f"bench {n:,}" + (f" #{index}" if index else ""),
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
    settings = Settings(_env_file=None, home=folder / "home")
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


RSS_TARGET_MB = 500.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _memory_mb(pid: int) -> tuple[float, float]:
    """``(current, peak)`` resident memory of process ``pid`` in MB (VmRSS, VmHWM)."""
    found: dict[str, float] = {}
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                found[key] = int(rest.split()[0]) / 1024
    return found["VmRSS"], found["VmHWM"]


def _wait_healthy(client: httpx.Client, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"arbiter serve exited with {server.returncode}")
        try:
            if client.get("/v1/health").status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)  # a benchmark polls; tests wait on events
    raise SystemExit("arbiter serve did not answer within 60 s")


def measure_rss(runs: int, per_run: int, folder: Path) -> None:
    """Peak RSS of ``arbiter serve`` (its own process) over a store of ``runs`` runs of
    ``per_run`` results while every page kind is opened: each page of the runs table,
    each run's page (first open, failing tab, last page of examples), compares, the
    agents, annotation, calibration and inbox pages, and the REST lists."""
    home = folder / "home"
    home.mkdir()
    store = Store(f"sqlite:///{home / 'arbiter.db'}")
    started = time.perf_counter()
    run_ids = [seed(store, per_run, index) for index in range(runs)]
    store.close()
    print(
        f"  seeded {runs:,} runs of {per_run:,} results "
        f"({runs * per_run:,}) in {time.perf_counter() - started:.1f} s",
        flush=True,
    )
    port = _free_port()
    env = {**os.environ, "ARBITER_HOME": str(home)}
    env.pop("ARBITER_DB_URL", None)
    command = [str(Path(sys.executable).with_name("arbiter")), "serve", "--port", str(port)]
    server = subprocess.Popen(command, env=env, cwd=folder, stdout=subprocess.DEVNULL)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=600) as client:
            _wait_healthy(client, server)
            idle, _ = _memory_mb(server.pid)
            last = max(1, -(-per_run // 50))
            pages = ["/", "/agents", "/annotations", "/calibration", "/inbox", "/v1/runs"]
            pages += [f"/?page={p}" for p in range(2, -(-runs // RUNS_PER_PAGE) + 1)]
            for i, run_id in enumerate(run_ids):
                pages += [f"/runs/{run_id}", f"/runs/{run_id}?show=failing"]
                pages += [f"/runs/{run_id}?page={last}", f"/v1/runs/{run_id}/results?limit=50"]
                if i:
                    pages.append(f"/compare?a={run_ids[i - 1]}&b={run_id}")
            started = time.perf_counter()
            for page in pages:
                _get(client, page)
            took = time.perf_counter() - started
            now, peak = _memory_mb(server.pid)
    finally:
        server.terminate()
        server.wait(timeout=60)
    print(f"  opened {len(pages):,} pages in {took:.1f} s")
    print(f"  arbiter serve RSS: {idle:,.0f} MB idle, {now:,.0f} MB after, peak {peak:,.0f} MB")
    verdict = "met" if peak < RSS_TARGET_MB else "MISSED"
    print(f"  target: peak under {RSS_TARGET_MB:,.0f} MB: {verdict}")


def _best(work: Any, repeat: int) -> tuple[float, Any]:
    """Best wall time of ``repeat`` calls of ``work`` and its last answer."""
    best, answer = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        answer = work()
        best = min(best, time.perf_counter() - started)
    return best, answer


def _load() -> str:
    return "load average " + ", ".join(f"{v:.2f}" for v in os.getloadavg())


def measure_compare(n: int, repeat: int, folder: Path) -> None:
    """Compare two runs of ``n`` results the old way and the new, and the far page."""
    from arbiter.service.browse import ResultFilter
    from arbiter.service.compare import compare_loaded, compare_runs
    from arbiter.service.run_pages import (
        FLIPS_SHOWN,
        ReportKeeper,
        compare_for_page,
        current_report,
        example_page,
    )
    from arbiter.service.runs import load_run
    from arbiter.store.failures_repository import count_outcomes, page_failures_first
    from tests.server.test_compare_page_stored import _whole_cohorts

    store = Store(f"sqlite:///{folder / 'compare.db'}")
    started = time.perf_counter()
    run_a, run_b = seed(store, n), seed(store, n, 1)
    print(f"  seeded 2 runs of {n:,} results in {time.perf_counter() - started:.1f} s")
    for run_id in (run_a, run_b):  # kept, as the run pages keep them
        current_report(store, run_id, viewer=None)

    def old_way() -> Any:
        a, b = load_run(store, run_a), load_run(store, run_b)
        return compare_loaded(a, b), _whole_cohorts(a, b)

    print(f"  {_load()} before", flush=True)
    rows: list[tuple[str, float, float]] = []
    old, (whole, cohorts) = _best(old_way, min(repeat, 3))
    api, new = _best(lambda: compare_runs(store, run_a, run_b), repeat)
    capped, _ = _best(lambda: compare_runs(store, run_a, run_b, flip_texts=FLIPS_SHOWN), repeat)
    paged, page = _best(lambda: compare_for_page(store, run_a, run_b, viewer=None), repeat)
    same = new.diff == whole.diff and page.cohorts == cohorts
    rows += [
        ("compare_runs, every flip's texts (API, CLI)", old, api),
        (f"compare_runs, first {FLIPS_SHOWN} flips' texts", old, capped),
        ("compare page (compare_for_page)", old, paged),
    ]
    view = ReportKeeper().view(store, run_a, viewer=None)
    counts = view.counts or count_outcomes(store, run_a)
    last = (n - 1) // 50 * 50
    every = ResultFilter(failures_first=True)
    by_offset, _ = _best(
        lambda: page_failures_first(
            store, run_a, counts, failing_only=False, offset=last, limit=50
        ),
        repeat,
    )
    by_number, shown = _best(
        lambda: example_page(store, view, every, viewer=None, offset=last, limit=50), repeat
    )
    before = example_page(store, view, every, viewer=None, offset=last - 50, limit=50)
    key = before.items[-1].key
    by_key, keyed = _best(
        lambda: example_page(store, view, every, viewer=None, offset=last, limit=50, after=key),
        repeat,
    )
    same_page = [r.result for r in keyed.items] == [r.result for r in shown.items]
    rows += [
        ("last page of examples, by number", by_offset, by_number),
        ("last page of examples, by key (Next link)", by_offset, by_key),
    ]
    print(f"  {_load()} after")
    print(f"\n{'what':<46} {'before':>10} {'now':>10}   speed-up")
    for name, was, now in rows:
        print(f"{name:<46} {was * 1000:>8.1f}ms {now * 1000:>8.1f}ms  {was / now:8.1f}x")
    print(f"\nsame figures as the whole runs give: {same}; same last page: {same_page}")
    print(f"(before: both runs read whole and diff_runs, best of {min(repeat, 3)};")
    print(f" now: best of {repeat}; the last page before: OFFSET {last:,})")
    store.close()


def _next_link(text: str) -> str:
    """The run page's Next link (its pager's ``rel="next"``)."""
    import html
    import re

    found = re.search(r'<a href="([^"]*)" rel="next">', text)
    if found is None:
        raise SystemExit("the run page has no Next link")
    return html.unescape(found.group(1))


def _rest_cursor(offset: int) -> str:
    """A cursor of the form every server version reads: the position alone."""
    from arbiter.server.pagination import encode_cursor

    return encode_cursor(offset)


def measure_result_pages(n: int, repeat: int, folder: Path) -> None:
    """The scorer tab of the run page and ``GET /v1/runs/{id}/results`` over HTTP on a run
    of ``n`` results (report kept): each listing's first page, its last page asked for by
    number (the page's ``?page=``, the API's cursor of a position), and its last page
    reached from the one before (the page's Next link, the API's ``next``); medians of
    ``repeat``, the listings in turns. A first visit is a listing's first page while its
    sizes are not kept yet (the server's memo emptied first, on a server that has one)."""
    with ExitStack() as stack:
        s = _serve(n, folder, stack)
        s.client.get("/runs/none")
        _get(s.client, f"/runs/{s.run_id}")
        s.app.state.report_keeper.wait(s.run_id)
        tab = f"/runs/{s.run_id}?show=failing&scorer=label"
        failed = int(
            s.client.get(f"/v1/runs/{s.run_id}/results?failing=true&limit=1").json()["total"]
        )
        last = max(1, -(-failed // 50))
        before_last = s.client.get(f"{tab}&page={last - 1}").text
        urls: dict[str, str] = {
            "scorer tab, page 1": tab,
            f"scorer tab, last page (page={last})": f"{tab}&page={last}",
            "scorer tab, last page by its Next link": _next_link(before_last),
        }
        api = f"/v1/runs/{s.run_id}/results?limit=50"
        for name, query in [
            ("by example", ""),
            ("failing", "&failing=true"),
            ("failures first", "&order=failures_first"),
            ("scorer fails, failures first", "&failing=true&scorer=label&order=failures_first"),
            ("scorer, by example", "&scorer=label"),
        ]:
            total = int(s.client.get(api + query).json()["total"])
            far = (total - 1) // 50 * 50
            cursor = _rest_cursor(far)
            urls[f"REST {name}, page 1"] = api + query
            urls[f"REST {name}, last page by position"] = f"{api}{query}&cursor={cursor}"
            previous = s.client.get(f"{api}{query}&cursor={_rest_cursor(far - 50)}").json()
            urls[f"REST {name}, last page by next"] = f"{api}{query}&cursor={previous['next']}"
        for url in urls.values():
            _get(s.client, url)
        keeper = s.app.state.report_keeper
        times: dict[str, list[float]] = {name: [] for name in urls}
        cold: dict[str, list[float]] = {name: [] for name in urls if name.endswith("page 1")}
        print(f"  {_load()} before", flush=True)
        for _ in range(repeat):
            for name, url in urls.items():
                times[name].append(_get(s.client, url))
            for name in cold:  # the listing's sizes not kept yet (a server that keeps them)
                if hasattr(keeper, "listing_sizes"):
                    keeper.listing_sizes = type(keeper.listing_sizes)()
                cold[name].append(_get(s.client, urls[name]))
            for url in urls.values():  # kept again for the next round's warm pages
                _get(s.client, url)
        print(f"  {_load()} after")
    print(f"\n{'page (' + format(n, ',') + ' results)':<56} {'median':>10}")
    for name, taken in times.items():
        print(f"{name:<56} {statistics.median(taken) * 1000:>8.1f}ms")
    for name, taken in cold.items():
        label = name.replace("page 1", "first visit")
        print(f"{label:<56} {statistics.median(taken) * 1000:>8.1f}ms")


def main() -> None:
    """Measure both sizes and print the table with ratios (``--rss``: the server's peak
    memory over a store of many runs instead; ``--compare``: a comparison of two large
    runs, and the far page)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=100)
    parser.add_argument("--large", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--rss", action="store_true", help="measure the server's peak RSS")
    parser.add_argument(
        "--compare", action="store_true", help="time a comparison of two --large runs"
    )
    parser.add_argument(
        "--result-pages",
        action="store_true",
        help="time the scorer tab and the REST results' far pages on a --large run",
    )
    parser.add_argument("--runs", type=int, default=1_000, help="runs in the --rss store")
    parser.add_argument("--per-run", type=int, default=100, help="results per --rss run")
    args = parser.parse_args()
    if args.rss:
        with tempfile.TemporaryDirectory() as tmp:
            measure_rss(args.runs, args.per_run, Path(tmp))
        return
    if args.result_pages:
        with tempfile.TemporaryDirectory() as tmp:
            measure_result_pages(args.large, args.repeat, Path(tmp))
        return
    if args.compare:
        with tempfile.TemporaryDirectory() as tmp:
            measure_compare(args.large, args.repeat, Path(tmp))
        return
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
