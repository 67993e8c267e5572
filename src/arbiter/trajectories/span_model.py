"""The format-neutral span model the span-based importers read: spans, log records, trees.

:mod:`arbiter.trajectories.spans` decodes OTLP (JSON and protobuf) into these values;
the importers of span-based formats (OTLP GenAI, OpenInference) read them and never a
wire format. ``bytes_id``, ``check_size``, ``check_span_times`` and ``fail`` are shared by
the JSON and protobuf decoders.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, NoReturn

from arbiter.errors import InputError

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_SPANS",
    "SPAN_KINDS",
    "STATUS_CODES",
    "LogRecord",
    "Rejected",
    "Span",
    "SpanEvent",
    "SpanTree",
    "bytes_id",
    "check_size",
    "check_span_times",
    "fail",
    "group_by_trace",
    "span_tree",
]

MAX_SPANS = 1_000_000
"""Most spans (and, separately, log records) one request or file may hold."""
MAX_BODY_BYTES = 100 * 1024 * 1024
"""Largest protobuf body, or JSON line, accepted."""

SPAN_KINDS = ("UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")
STATUS_CODES = ("UNSET", "OK", "ERROR")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _datetime(ns: int | None) -> datetime | None:
    return None if ns is None else _EPOCH + timedelta(microseconds=ns // 1000)


@dataclass(frozen=True, slots=True)
class SpanEvent:
    """A timed event recorded on a span."""

    name: str
    time_ns: int | None
    attributes: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Span:
    """One span, with its attributes decoded to plain Python values.

    Attributes:
        trace_id: 32 lower-case hex digits.
        span_id: 16 lower-case hex digits.
        parent_span_id: The parent's span id; None for a root.
        kind: ``INTERNAL``, ``SERVER``, ``CLIENT``, ``PRODUCER``, ``CONSUMER`` or
            ``UNSPECIFIED``.
        status_code: ``UNSET``, ``OK`` or ``ERROR``.
        resource: The attributes of the resource that emitted it (``service.name``).
        scope: The instrumentation scope's name, if any.
    """

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    kind: str
    start_ns: int | None
    end_ns: int | None
    attributes: dict[str, Any]
    events: tuple[SpanEvent, ...] = ()
    status_code: str = "UNSET"
    status_message: str = ""
    resource: dict[str, Any] = field(default_factory=dict)
    scope: str | None = None

    @property
    def started_at(self) -> datetime | None:
        """The start, timezone-aware (microsecond precision), or None when unset."""
        return _datetime(self.start_ns)

    @property
    def ended_at(self) -> datetime | None:
        """The end, timezone-aware (microsecond precision), or None when unset."""
        return _datetime(self.end_ns)

    @property
    def error(self) -> str | None:
        """Why the span failed when its status is ``ERROR`` (message, else ``error.type``)."""
        if self.status_code != "ERROR":
            return None
        error_type = self.attributes.get("error.type")
        return self.status_message or (str(error_type) if error_type else "error")


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One OTLP log record: older GenAI instrumentations write chat messages as these.

    Attributes:
        event_name: The record's ``eventName``, else its ``event.name`` attribute.
        body: The body decoded like an attribute value.
    """

    trace_id: str | None
    span_id: str | None
    time_ns: int | None
    event_name: str | None
    attributes: dict[str, Any]
    body: Any


@dataclass(frozen=True, slots=True)
class SpanTree:
    """The spans of one trace as a forest.

    Attributes:
        roots: Spans whose parent is not in the trace, by start time.
        children: Each span id's child spans, by start time.
    """

    roots: list[Span]
    children: dict[str, list[Span]]

    def children_of(self, span: Span) -> list[Span]:
        """The span's children, by start time."""
        return self.children.get(span.span_id, [])

    def run_roots(self, is_agent: Callable[[Span], bool]) -> Iterator[Span]:
        """The outermost agent spans under each root, in order; a root without any agent
        span below it is a run itself (an agent's own sub-agents are its hand-offs)."""
        for root in self.roots:
            agents: list[Span] = []
            stack = [root]
            while stack:
                span = stack.pop()
                if is_agent(span):
                    agents.append(span)
                else:
                    stack.extend(reversed(self.children_of(span)))
            yield from agents or [root]


def group_by_trace(spans: Iterable[Span]) -> dict[str, list[Span]]:
    """Spans keyed by trace id, traces and spans in the order first seen."""
    traces: dict[str, list[Span]] = {}
    for span in spans:
        traces.setdefault(span.trace_id, []).append(span)
    return traces


def span_tree(spans: Sequence[Span]) -> SpanTree:
    """The parent/child forest of one trace's spans.

    A span whose parent is absent (or who is part of a parent cycle, which a well-formed
    trace never has) is a root, so every span appears exactly once in the forest.
    """
    ids = {span.span_id for span in spans}
    children: dict[str, list[Span]] = {}
    roots: list[Span] = []
    for span in spans:
        parent = span.parent_span_id
        if parent is None or parent not in ids or parent == span.span_id:
            roots.append(span)
        else:
            children.setdefault(parent, []).append(span)
    # Spans in a parent cycle are reachable from no root: make the earliest of each a root.
    reached = _reachable(roots, children)
    for span in spans:
        if span.span_id not in reached:
            roots.append(span)
            children[span.parent_span_id or ""].remove(span)
            reached |= _reachable([span], children)
    order = {id(span): index for index, span in enumerate(spans)}

    def by_start(span: Span) -> tuple[int, int]:
        return (span.start_ns if span.start_ns is not None else -1, order[id(span)])

    return SpanTree(
        roots=sorted(roots, key=by_start),
        children={k: sorted(v, key=by_start) for k, v in children.items() if v},
    )


def _reachable(roots: list[Span], children: Mapping[str, list[Span]]) -> set[str]:
    seen: set[str] = set()
    stack = list(roots)
    while stack:
        span = stack.pop()
        if span.span_id not in seen:
            seen.add(span.span_id)
            stack.extend(children.get(span.span_id, ()))
    return seen


@dataclass(frozen=True)
class Rejected:
    """A span (or log record) a decoder left out, and why: one bad item of a request."""

    trace_id: str | None
    """The trace it belongs to, when its id could be read (that whole trace is rejected)."""
    reason: str
    """The error, one line naming where and the field."""


def check_span_times(start: int | None, end: int | None, at: str, where: str) -> None:
    """Refuse an end before the start (either may be unset)."""
    if start is not None and end is not None and end < start:
        fail(where, f"{at}: endTimeUnixNano {end} is before startTimeUnixNano {start}")


def fail(where: str, why: str) -> NoReturn:
    raise InputError(f"{where}: {why}")


def check_size(size: int, where: str) -> None:
    if size > MAX_BODY_BYTES:
        raise InputError(
            f"{where}: the request is {size:,} bytes; at most {MAX_BODY_BYTES:,} are accepted"
        )


def bytes_id(raw: bytes, size: int, at: str, where: str, *, required: bool) -> str | None:
    if not raw:
        if required:
            fail(where, f"{at}: missing")
        return None
    if len(raw) != size:
        fail(where, f"{at}: {len(raw)} bytes; an id here is {size} bytes")
    if not any(raw):
        if required:
            fail(where, f"{at}: an all-zero id is invalid")
        return None
    return raw.hex()
