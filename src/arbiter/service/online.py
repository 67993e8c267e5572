"""Online scoring of a file as a library function: every line scored, sunk and stored.

The file is read line by line with a bounded number of evaluations in flight; each
result goes to the JSONL sink as it completes and to the store in bulk inserts. A sink
that is the input itself is refused before anything is read (it would read its own
output forever). Nothing here prints or starts an event loop.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator
from pathlib import Path

from arbiter.config import Settings
from arbiter.contract import OnlineResult
from arbiter.engines.base import Engine
from arbiter.errors import InputError
from arbiter.harness.runner import ProgressCallback
from arbiter.online.config import OnlineConfig
from arbiter.online.pipeline import OnlinePipeline
from arbiter.online.sink import BatchSummary, JsonlSink, SummaryReport
from arbiter.online.stream import count_lines, read_lines
from arbiter.store import Store
from arbiter.store.online_repository import save_online_results

__all__ = ["STORE_BATCH", "check_sink_is_not_input", "score_file"]

STORE_BATCH = 500
"""Results stored per bulk insert."""


def check_sink_is_not_input(source: Path, sink: Path) -> None:
    """Refuse a sink that is the input file (the same path, a link to it, a hard link).

    Raises:
        InputError: ``sink`` and ``source`` are one file.
    """
    same = os.path.abspath(source) == os.path.abspath(sink)
    if not same and sink.exists():
        try:
            same = os.path.samefile(source, sink)
        except OSError:
            same = False
    if same:
        raise InputError(
            f"--out {sink}: that is the input file; results appended to it would be read "
            "back as input without end. Write them elsewhere."
        )


class _BatchWriter:
    """Sends each result to the sink, the summary and (in bulk) the store.

    One bulk insert runs in a thread while scoring goes on; the next waits for it, so
    at most two batches of results are held at once.
    """

    def __init__(self, sink: JsonlSink, store: Store, batch_id: str, summary: BatchSummary) -> None:
        self.sink, self.store, self.batch_id, self.summary = sink, store, batch_id, summary
        self.pending: list[OnlineResult] = []
        self._inserting: asyncio.Task[None] | None = None

    async def __call__(self, result: OnlineResult) -> None:
        self.sink.write(result)
        self.summary.add(result)
        self.pending.append(result)
        if len(self.pending) >= STORE_BATCH:
            await self._insert_pending()

    async def _insert_pending(self) -> None:
        if self._inserting is not None:
            await self._inserting
        rows, self.pending = self.pending, []
        insert = asyncio.to_thread(save_online_results, self.store, self.batch_id, rows)
        self._inserting = asyncio.create_task(insert)

    async def flush(self) -> None:
        """Store what is pending and wait until every insert is done."""
        await self._insert_pending()
        if self._inserting is not None:
            inserting, self._inserting = self._inserting, None
            await inserting


async def score_file(
    pipeline: OnlinePipeline,
    path: Path,
    *,
    sink: JsonlSink,
    store: Store,
    batch_id: str,
    progress: ProgressCallback | None = None,
    max_in_flight: int = 64,
    engine: Engine | None = None,
    config: OnlineConfig | None = None,
    settings: Settings | None = None,
) -> SummaryReport:
    """Score every line of a JSONL file into ``sink`` and ``store``; return the summary.

    Args:
        pipeline: Scores one prediction.
        path: The JSONL file, read line by line.
        sink: Receives every result as it completes.
        store: Receives every result, in bulk inserts of ``STORE_BATCH``.
        batch_id: The id the results are stored under.
        progress: Called with ``(done, total)``; the total is the pre-counted lines, or
            an estimate from the bytes read so far when the file is too big to count.
        max_in_flight: Bound on concurrent evaluations (on the Ray engine, per worker).
        engine: Where the lines are scored (:mod:`arbiter.service.engines`); None: here.
        config: What ``pipeline`` was built from, for the Ray engine's workers to build
            it again (None: the built-in pipeline).
        settings: The settings it was built with (keys and URLs), likewise.

    Raises:
        InputError: ``path`` is the sink's own file.
    """
    check_sink_is_not_input(path, sink.path)
    total = await asyncio.to_thread(count_lines, path)
    size = max(1, (await asyncio.to_thread(path.stat)).st_size)
    summary = BatchSummary()
    writer = _BatchWriter(sink, store, batch_id, summary)
    consumed = 0
    started = time.perf_counter()
    with path.open("rb") as handle:

        def lines() -> Iterator[tuple[int, bytes, int]]:
            nonlocal consumed
            for number, raw, read in read_lines(handle):
                consumed = read
                yield number, raw, read

        async def on_result(result: OnlineResult) -> None:
            await writer(result)
            if progress is not None:
                done = summary.items
                estimate = total or round(done * size / max(consumed, 1))
                progress(done, max(estimate, done))

        from arbiter.engines.local import LocalEngine
        from arbiter.service.online_work import LineWork

        work = LineWork(
            pipeline,
            max_in_flight=max_in_flight,
            source=str(path),
            config=config,
            settings=settings,
        )
        try:
            await (engine or LocalEngine()).run(work, lines(), on_result)
        finally:
            await writer.flush()
    if progress is not None:
        progress(summary.items, summary.items)
    return summary.report(batch_id=batch_id, elapsed_s=time.perf_counter() - started)
