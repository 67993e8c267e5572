"""An OTLP JSON-lines file read one trace at a time, in memory bounded by the open traces.

The collector's file exporter writes one export request a line; a trace's spans (and log
records) may be spread over several lines, in any order. :func:`iter_otlp_json_traces`
reads such a file twice, line by line, never holding it whole:

1. a scan of the raw lines finds the last line each trace id appears on (a regular
   expression over the bytes, no JSON parse);
2. the lines are then decoded one by one, each trace's spans and log records buffered
   until its last line has been read, and the traces handed out in the order they were
   first seen (so the runs come out as a whole-file read gives them).

What is buffered at once is the traces begun and not yet finished, whatever the size of
the file; past :data:`~arbiter.trajectories.span_model.MAX_SPANS` buffered spans (or log
records) the file is refused. A file that is one pretty-printed request (its first line
is no JSON of its own) is read whole, as it must be.
"""

from __future__ import annotations

import os
import re
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path

from arbiter.datasets.jsonio import JsonInputError, parse_json
from arbiter.errors import InputError
from arbiter.trajectories.span_model import (
    MAX_BODY_BYTES,
    MAX_SPANS,
    LogRecord,
    Span,
    check_size,
    fail,
)

__all__ = ["iter_otlp_json_traces"]

_TRACE_ID = re.compile(rb'"traceId"\s*:\s*"([^"\\]*)"')
_BOM = b"\xef\xbb\xbf"
_HANDED_OUT = -1
"""The last line of a trace already handed out: its entry of the scan's map is marked so
(no set of finished traces beside it: one entry a trace, not two)."""


def iter_otlp_json_traces(
    path: str | os.PathLike[str],
) -> Iterator[tuple[list[Span], list[LogRecord]]]:
    """The spans and log records of an OTLP JSON-lines file, one trace at a time.

    Log records without a trace id are handed out with no trace (after the rest).

    Raises:
        InputError: The file cannot be read, a line is too long, not UTF-8 or not an
            export request (``file:line: why``), or too many spans of unfinished traces
            are buffered.
    """
    from arbiter.trajectories.spans import decode_otlp_json, read_otlp_json_lines

    file = Path(path)
    source = str(file)
    last = _last_lines(file)
    if last is None:  # one request over several lines: the whole file is the document
        from arbiter.datasets.jsonio import read_text

        spans, logs = read_otlp_json_lines(read_text(file, what="trace file"), source=source)
        yield from _by_trace(spans, logs)
        return
    buffered: OrderedDict[str, tuple[list[Span], list[LogRecord]]] = OrderedDict()
    untraced: list[LogRecord] = []
    held = 0
    for number, line in _lines(file):
        where = f"{source}:{number}"
        spans, logs = decode_otlp_json(parse_json(line, source=source, line=number), where=where)
        for span in spans:
            _entry(buffered, last, span.trace_id, where)[0].append(span)
        for log in logs:
            if log.trace_id is None:
                untraced.append(log)
            else:
                _entry(buffered, last, log.trace_id, where)[1].append(log)
        held += len(spans) + len(logs)
        if held > MAX_SPANS:
            fail(where, f"more than {MAX_SPANS:,} spans and log records of unfinished traces")
        while buffered:
            trace_id, (trace_spans, trace_logs) = next(iter(buffered.items()))
            if last.get(trace_id, 0) > number:
                break  # the oldest open trace goes on further down: keep the file's order
            del buffered[trace_id]
            last[trace_id] = _HANDED_OUT
            held -= len(trace_spans) + len(trace_logs)
            yield trace_spans, trace_logs
    for trace_spans, trace_logs in buffered.values():
        yield trace_spans, trace_logs
    if untraced:
        yield [], untraced


def _entry(
    buffered: OrderedDict[str, tuple[list[Span], list[LogRecord]]],
    last: dict[str, int],
    trace_id: str,
    where: str,
) -> tuple[list[Span], list[LogRecord]]:
    found = buffered.get(trace_id)
    if found is None:
        if last.get(trace_id) == _HANDED_OUT:
            # The scan saw no later line of this trace: its ids are written in a way the
            # scan does not read (escaped keys). Refused rather than imported in two parts.
            raise InputError(
                f"{where}: trace {trace_id} continues after the line its id was last "
                "seen on; write its traceId keys plainly"
            )
        found = buffered[trace_id] = ([], [])
    return found


def _lines(file: Path) -> Iterator[tuple[int, str]]:
    """``(number, text)`` of each non-blank line, decoded, without reading the file whole."""
    try:
        stream = file.open("rb")
    except OSError as exc:
        raise InputError(f"{file}: cannot read the trace file: {exc.strerror or exc}") from None
    with stream:
        for number, raw in enumerate(stream, start=1):
            if number == 1:
                raw = raw.removeprefix(_BOM)
            check_size(len(raw), f"{file}:{number}")
            if not raw.strip():
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise JsonInputError(
                    f"{file}:{number}",
                    f"byte 0x{raw[exc.start]:02x} at byte {exc.start} is not valid UTF-8",
                    kind="bad_encoding",
                ) from None
            yield number, text.rstrip("\r\n")


def _last_lines(file: Path) -> dict[str, int] | None:
    """The last line each trace id appears on; None when the file is one document over
    several lines (its first non-blank line does not close)."""
    from arbiter.trajectories.spans import normalized_id

    last: dict[str, int] = {}
    first = True
    try:
        stream = file.open("rb")
    except OSError as exc:
        raise InputError(f"{file}: cannot read the trace file: {exc.strerror or exc}") from None
    with stream:
        for number, raw in enumerate(stream, start=1):
            if len(raw) > MAX_BODY_BYTES:
                check_size(len(raw), f"{file}:{number}")
            if not raw.strip():
                continue
            if first:
                first = False
                if not _closes(raw.removeprefix(_BOM)):
                    return None
            # A line names its trace once per span: each id written is read once a line.
            for written in set(_TRACE_ID.findall(raw)):
                last[normalized_id(written)] = number
    return last


def _closes(raw: bytes) -> bool:
    """Whether a first line is a JSON document of its own (else the file is one document)."""
    try:
        parse_json(raw.decode("utf-8", "replace"), source="first line", unique_keys=False)
    except JsonInputError:
        return False
    return True


def _by_trace(
    spans: list[Span], logs: list[LogRecord]
) -> Iterator[tuple[list[Span], list[LogRecord]]]:
    """Spans and log records of a whole-file read, grouped by trace in first-seen order."""
    grouped: OrderedDict[str, tuple[list[Span], list[LogRecord]]] = OrderedDict()
    untraced: list[LogRecord] = []
    for span in spans:
        grouped.setdefault(span.trace_id, ([], []))[0].append(span)
    for log in logs:
        if log.trace_id is None:
            untraced.append(log)
        else:
            grouped.setdefault(log.trace_id, ([], []))[1].append(log)
    yield from grouped.values()
    if untraced:
        yield [], untraced
