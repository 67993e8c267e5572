"""Scoring a stream of JSONL lines: every line gets a result, a bounded number in flight.

A line that is not a JSON object (bad bytes, bad JSON, a lone surrogate, an array) gets
an error result for that line and the stream goes on; the pipeline scores the rest with
at most ``max_in_flight`` evaluations running, so memory stays flat whatever the length.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from arbiter.contract import OnlineResult
from arbiter.datasets.jsonio import JsonInputError, json_type, parse_json_line
from arbiter.online.pipeline import OnlinePipeline

__all__ = ["OnResult", "count_lines", "error_result", "parse_line", "read_lines", "score_stream"]

OnResult = Callable[[OnlineResult], Awaitable[None]]
"""Awaited with each result as it completes."""

_PRECOUNT_MAX_BYTES = 512 * 1024 * 1024
"""Files up to this size have their lines counted first, for an exact progress total."""


def error_result(line: int, kind: str, message: str) -> OnlineResult:
    """The result of a line that could not be scored, saying why."""
    return OnlineResult(
        prediction_id=f"line-{line}",
        label=None,
        errors=[f"line {line}: {message}"],
        metadata={"line": line, "error_kind": kind},
    )


def parse_line(line: int, raw: bytes, *, source: str = "input") -> dict[str, Any] | OnlineResult:
    """One input line as a prediction dict, or an error result saying why it is not one.

    NaN and infinite numbers are kept: a NaN confidence is the pipeline's to flag.
    """
    try:
        document = parse_json_line(raw, source=source, line=line, allow_non_finite=True)
    except JsonInputError as exc:
        kind = exc.kind if exc.kind in ("bad_encoding", "surrogate") else "invalid_json"
        at = f" at column {exc.column}" if exc.column is not None else ""
        return error_result(line, kind, f"{exc.reason}{at}")
    if not isinstance(document, dict):
        kind = json_type(document)
        return error_result(line, "not_an_object", f"expected a JSON object, got {kind}")
    return document


async def _evaluate(pipeline: OnlinePipeline, line: int, document: dict[str, Any]) -> OnlineResult:
    try:
        result = await pipeline.evaluate(document)
    # The pipeline promises never to raise; should it break that promise, the batch goes on.
    except Exception as exc:
        return error_result(line, "pipeline_crash", f"{type(exc).__name__}: {exc}"[:500])
    return result.model_copy(update={"metadata": {**result.metadata, "line": line}})


def read_lines(handle: BinaryIO) -> Iterator[tuple[int, bytes, int]]:
    """``(line number, bytes, bytes read so far)`` for each non-blank line, one at a time."""
    consumed = 0
    for number, raw in enumerate(handle, start=1):
        consumed += len(raw)
        if raw.strip():
            yield number, raw, consumed


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
    source: str = "input",
) -> None:
    """Evaluate every line with at most ``max_in_flight`` evaluations running at once.

    Args:
        pipeline: Scores one prediction.
        lines: ``(line number, raw bytes, bytes consumed)``, read lazily.
        on_result: Awaited with each result as it completes (completion order).
        max_in_flight: Bound on concurrent evaluations, hence on memory.
        source: Name of the input, for messages.
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
            parsed = parse_line(number, raw, source=source)
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
