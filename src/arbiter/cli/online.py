"""``arbiter online score``: score a JSONL file of unlabelled predictions in one batch.

The file is read line by line and at most ``--concurrency`` items are in flight, so
memory stays flat whatever the file's length. Every line gets a result, an unreadable
one included (recorded as an error for that line): results are appended to a JSONL
sink as they complete, stored in bulk every few hundred, and summarised at the end.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Annotated, Any, BinaryIO

import typer

from arbiter.cli.app import app
from arbiter.cli.common import err_console, open_store, out_console, progress_bar
from arbiter.config import Settings
from arbiter.errors import InputError
from arbiter.harness.runner import ProgressCallback
from arbiter.online.models import OnlineResult
from arbiter.online.pipeline import OnlineConfig, OnlinePipeline, build_pipeline
from arbiter.online.sink import BatchSummary, JsonlSink, Rate, SummaryReport
from arbiter.store.online_repository import save_online_results
from arbiter.store.repository import Store, new_run_id
from arbiter.telemetry import Telemetry

__all__ = [
    "count_lines",
    "online_app",
    "parse_line",
    "read_lines",
    "render_summary",
    "score",
    "score_file",
    "score_stream",
]

online_app = typer.Typer(
    name="online",
    help="Score unlabelled production traffic with the layered online pipeline.",
    no_args_is_help=True,
)
app.add_typer(online_app, name="online")

STORE_BATCH = 500
"""Results stored per bulk insert."""
_PRECOUNT_MAX_BYTES = 512 * 1024 * 1024
"""Files up to this size have their lines counted first, for an exact progress total."""

OnResult = Callable[[OnlineResult], Awaitable[None]]


def _error_result(line: int, kind: str, message: str) -> OnlineResult:
    return OnlineResult(
        prediction_id=f"line-{line}",
        label=None,
        errors=[f"line {line}: {message}"],
        metadata={"line": line, "error_kind": kind},
    )


def parse_line(line: int, raw: bytes) -> dict[str, Any] | OnlineResult:
    """One input line as a prediction dict, or an error result saying why it is not one."""
    try:
        text = raw.decode("utf-8-sig" if line == 1 else "utf-8")
    except UnicodeDecodeError as exc:
        return _error_result(line, "bad_encoding", f"not UTF-8 at byte {exc.start}")
    try:
        # NaN / Infinity tokens are accepted: such a confidence is the pipeline's to flag.
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        return _error_result(line, "invalid_json", f"invalid JSON at column {exc.colno}: {exc.msg}")
    except (ValueError, RecursionError) as exc:
        return _error_result(line, "invalid_json", f"invalid JSON: {type(exc).__name__}")
    if not isinstance(document, dict):
        kind = type(document).__name__
        return _error_result(line, "not_an_object", f"expected a JSON object, got {kind}")
    return document


async def _evaluate(pipeline: OnlinePipeline, line: int, document: dict[str, Any]) -> OnlineResult:
    try:
        result = await pipeline.evaluate(document)
    # The pipeline promises never to raise; should it break that promise, the batch goes on.
    except Exception as exc:
        return _error_result(line, "pipeline_crash", f"{type(exc).__name__}: {exc}"[:500])
    return result.model_copy(update={"metadata": {**result.metadata, "line": line}})


def read_lines(handle: BinaryIO) -> Iterator[tuple[int, bytes, int]]:
    """``(line number, bytes, bytes read so far)`` for each non-blank line, one at a time."""
    consumed = 0
    for number, raw in enumerate(handle, start=1):
        consumed += len(raw)
        if raw.strip():
            yield number, raw, consumed


def _measure(path: Path) -> tuple[int | None, int]:
    return count_lines(path), max(1, path.stat().st_size)


def count_lines(path: Path) -> int | None:
    """Lines in ``path`` (blank ones included), or None when it is too big to count cheaply."""
    if path.stat().st_size > _PRECOUNT_MAX_BYTES:
        return None
    count, last = 0, b"\n"
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            count += chunk.count(b"\n")
            last = chunk[-1:]
    return count + (last != b"\n")


async def score_stream(
    pipeline: OnlinePipeline,
    lines: Iterator[tuple[int, bytes, int]],
    on_result: OnResult,
    *,
    max_in_flight: int = 64,
) -> None:
    """Evaluate every line with at most ``max_in_flight`` evaluations running at once.

    Args:
        pipeline: Scores one prediction.
        lines: ``(line number, raw bytes, bytes consumed)``, read lazily.
        on_result: Awaited with each result as it completes (completion order).
        max_in_flight: Bound on concurrent evaluations, hence on memory.
    """
    in_flight: set[asyncio.Task[OnlineResult]] = set()

    async def settle(first_only: bool) -> None:
        nonlocal in_flight
        when = asyncio.FIRST_COMPLETED if first_only else asyncio.ALL_COMPLETED
        done, in_flight = await asyncio.wait(in_flight, return_when=when)
        for task in done:
            await on_result(task.result())

    try:
        for number, raw, _ in lines:
            parsed = parse_line(number, raw)
            if isinstance(parsed, OnlineResult):
                await on_result(parsed)
                continue
            in_flight.add(asyncio.create_task(_evaluate(pipeline, number, parsed)))
            if len(in_flight) >= max_in_flight:
                await settle(first_only=True)
        if in_flight:
            await settle(first_only=False)
    finally:
        for task in in_flight:
            task.cancel()


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
        max_in_flight: Bound on concurrent evaluations.
    """
    total, size = await asyncio.to_thread(_measure, path)
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

        try:
            await score_stream(pipeline, lines(), on_result, max_in_flight=max_in_flight)
        finally:
            await writer.flush()
    if progress is not None:
        progress(summary.items, summary.items)
    return summary.report(batch_id=batch_id, elapsed_s=time.perf_counter() - started)


@online_app.command("score")
def score(
    file: Annotated[Path, typer.Argument(help="JSONL file: one prediction per line.")],
    config: Annotated[
        Path | None, typer.Option(help="Pipeline configuration (JSON); default: built in.")
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(help="JSONL file the results are appended to (default: under ARBITER_HOME)."),
    ] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Evaluations in flight at once.")] = 64,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Score every prediction of a JSONL file; append results to a sink, store them, summarise."""
    settings = Settings()
    if not file.is_file():
        raise InputError(f"{file}: no such file")
    # Everything is validated before the store is opened: bad input writes nothing.
    online_config = OnlineConfig.load(config) if config is not None else OnlineConfig()
    telemetry = Telemetry.from_env()
    try:
        pipeline = build_pipeline(online_config, settings, telemetry=telemetry)
        batch_id = new_run_id()
        out_path = out or settings.home / "online" / f"{batch_id}.jsonl"
        store = open_store(settings)
        try:
            with (
                JsonlSink(out_path) as sink,
                progress_bar(f"scoring {file.name}", enabled=not quiet) as progress,
            ):
                report = asyncio.run(
                    score_file(
                        pipeline,
                        file,
                        sink=sink,
                        store=store,
                        batch_id=batch_id,
                        progress=progress,
                        max_in_flight=concurrency,
                    )
                )
        finally:
            store.close()
    finally:
        telemetry.shutdown()  # flushes the batch's spans and metrics
    if as_json:
        out_console.print_json(report.model_dump_json())
    else:
        out_console.print(render_summary(report, source=file.name), markup=False, highlight=False)
    err_console.print(
        f"{sink.written} results appended to {out_path}; stored as batch [bold]{batch_id}[/] "
        f"in {store.describe()}",
        highlight=False,
    )


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.3f}" if value < 10 else f"{value:,.1f}"


def render_summary(report: SummaryReport, *, source: str) -> str:
    """The summary as aligned lines for the terminal."""
    elapsed = f" in {report.elapsed_s:.2f} s" if report.elapsed_s is not None else ""
    rows: list[tuple[str, str]] = []

    def rate(name: str, value: Rate) -> None:
        interval = f"95% CI {_pct(value.low)}–{_pct(value.high)}"
        rows.append((name, f"{_pct(value.rate)}  ({value.count}/{value.n}; {interval})"))

    def counts(name: str, values: dict[str, int]) -> None:
        if values:
            rows.append((name, ", ".join(f"{key} {n}" for key, n in values.items())))

    rate("flagged", report.flagged)
    rate("escalated", report.escalated)
    if report.judge_reached:
        rate("scored by judge", report.scored_by_judge)
        counts("judge sources", report.judge_sources)
    else:
        rows.append(("scored by judge", "- (no item reached a judge)"))
    counts("flags", report.flags_by_rule)
    latency = "   ".join(
        f"{name} {_ms(layer.p50_ms)} / {_ms(layer.p95_ms)}"
        for name, layer in report.latency.items()
    )
    rows.append(("latency p50 / p95 ms", latency or "-"))
    errors = ", ".join(f"{k} {v}" for k, v in report.errors.items())
    rows.append(("errors", f"{report.items_with_errors} items" + (f": {errors}" if errors else "")))
    counts("cut off by budget", report.abstentions)
    width = max(len(name) for name, _ in rows)
    lines = [f"online score: {report.items} items from {source}{elapsed}"]
    lines += [f"  {name:<{width}}  {value}" for name, value in rows]
    return "\n".join(lines)
