"""A trajectory's steps on a time axis: the layout of the waterfall the trajectory page draws.

Each step is one row (a sub-agent's steps follow its hand-off, indented), placed at its
real start and end. Steps whose times overlap ran in parallel: they form a group and
each takes a lane of it, so the page draws them side by side and says so. Where the
trace has no times at all the steps are laid out one after the other, one unit each,
and :attr:`Waterfall.timed` is False: the page says the axis is order, not time. A step
with only a duration follows the one before it.

Everything here is numbers and the texts to show; the template escapes the texts.
Rows are capped (:data:`MAX_ROWS`); the layout says how many were left out.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from arbiter.contract import FlowNode, FlowRun, Handoff, LlmCall, Retrieval, ToolCall, Trajectory

__all__ = [
    "MAX_LABEL_CHARS",
    "MAX_ROWS",
    "StepRow",
    "Tick",
    "Waterfall",
    "nice_ticks",
    "waterfall",
]

MAX_ROWS = 400
"""Rows drawn; a longer run shows its first rows and says how many more it has."""
MAX_LABEL_CHARS = 80
"""Characters of a row's label; the full text is in its details."""
_DETAIL_CHARS = 4_000

_CLOCK_STEPS = tuple(
    seconds * 1000
    for seconds in (15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400)
)

RowKind = Literal["llm_call", "tool_call", "retrieval", "handoff", "node"]


@dataclass
class StepRow:
    """One row of the waterfall."""

    index: int
    """Its position in the waterfall (0-based): the anchor ``step-{index}``."""
    kind: RowKind
    label: str
    """What the bar is called: the tool, the model, the sub-agent, the node."""
    depth: int
    """Hand-off nesting: 0 for the run's own steps."""
    start: float
    """Milliseconds from the run's start (units of order when untimed)."""
    end: float
    timed: bool
    """Whether ``start`` / ``end`` are the step's own times."""
    error: str | None = None
    """Why it failed, if it did."""
    lane: int = 0
    """Its lane in its parallel group (0 when it ran alone)."""
    group: int | None = None
    """Its parallel group's number; None when it ran alone."""
    group_size: int = 1
    details: list[tuple[str, str]] = field(default_factory=list)
    """(what, text) pairs its details show: arguments, result, tokens, ..."""

    @property
    def duration(self) -> float:
        """Its length on the axis."""
        return self.end - self.start


@dataclass(frozen=True)
class Tick:
    """One mark of the time axis."""

    at: float
    label: str


@dataclass
class Waterfall:
    """The rows, the axis and what the page should say about them."""

    rows: list[StepRow]
    total: float
    """Length of the axis (milliseconds, or steps when untimed); at least 1."""
    timed: bool
    """Whether the axis is time (False: the trace had no times; steps in order)."""
    ticks: list[Tick]
    hidden: int = 0
    """Rows left out past :data:`MAX_ROWS`."""
    groups: int = 0
    """Parallel groups found."""

    def x(self, at: float, width: float) -> float:
        """Where ``at`` falls on an axis ``width`` wide."""
        return at / self.total * width


def _ms(moment: datetime | None, origin: datetime | None) -> float | None:
    if moment is None or origin is None:
        return None
    return (_aware(moment) - origin).total_seconds() * 1000


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _json(value: Any) -> str:
    if isinstance(value, str):
        return _clip(value, _DETAIL_CHARS)
    return _clip(json.dumps(value, ensure_ascii=False, indent=1), _DETAIL_CHARS)


def _flat(run: Trajectory | FlowRun) -> Iterator[tuple[int, Any]]:
    """(depth, step or node) in order, a hand-off's steps after it."""
    if isinstance(run, FlowRun):
        for node in run.nodes:
            yield 0, node
        return
    stack: list[tuple[int, Iterator[Any]]] = [(0, iter(run.steps))]
    while stack:
        depth, steps = stack[-1]
        step = next(steps, None)
        if step is None:
            stack.pop()
            continue
        yield depth, step
        if isinstance(step, Handoff):
            stack.append((depth + 1, iter(step.trajectory.steps)))


def _describe(step: Any) -> tuple[RowKind, str, str | None, list[tuple[str, str]]]:
    """Kind, label, error and details of one step or node."""
    if isinstance(step, ToolCall):
        details = [("arguments", _json(step.arguments))]
        if step.result is not None:
            details.append(("result", _json(step.result)))
        return "tool_call", step.name, step.error, details
    if isinstance(step, LlmCall):
        tokens = f"{step.input_tokens or 0:,} in / {step.output_tokens or 0:,} out"
        details = [("tokens", tokens)]
        if step.cost_usd is not None:
            details.append(("cost", f"${step.cost_usd:.4f}"))
        said = [m.content for m in step.output_messages if m.content]
        if said:
            details.append(("answered", _clip("\n".join(said), _DETAIL_CHARS)))
        return "llm_call", step.model or "model call", step.error, details
    if isinstance(step, Retrieval):
        details = [("query", _clip(step.query or "", _DETAIL_CHARS))]
        for chunk in step.chunks[:5]:
            similarity = f" ({chunk.similarity:.2f})" if chunk.similarity is not None else ""
            details.append(
                (f"chunk{similarity}", _clip(f"{chunk.source or ''} {chunk.text or ''}", 400))
            )
        return "retrieval", f"retrieval: {step.query or ''}", None, details
    if isinstance(step, Handoff):
        sub = step.trajectory
        name = sub.agent.name or "sub-agent"
        details = [("steps", str(len(sub.steps)))]
        if sub.final_answer:
            details.append(("answered", _clip(sub.final_answer, _DETAIL_CHARS)))
        return "handoff", f"→ {name}", sub.error, details
    assert isinstance(step, FlowNode)
    details = [("type", step.type or "node"), ("status", step.status)]
    if step.cost_usd is not None:
        details.append(("cost", f"${step.cost_usd:.4f}"))
    return "node", step.name or step.id, step.error, details


def waterfall(run: Trajectory | FlowRun) -> Waterfall:
    """Lay ``run``'s steps (or nodes) out on a time axis.

    Raises nothing on odd times: a step ending before the run's first start is clamped
    to it, and zoned and zoneless times are both read as UTC.
    """
    flat = list(_flat(run))
    hidden = max(len(flat) - MAX_ROWS, 0)
    flat = flat[:MAX_ROWS]
    starts = [_aware(s.started_at) for _, s in flat if s.started_at is not None]
    origin = min([*starts, _aware(run.started_at)] if run.started_at else starts, default=None)
    timed = origin is not None or any(s.duration_ms is not None for _, s in flat)
    rows: list[StepRow] = []
    cursor = 0.0
    for index, (depth, step) in enumerate(flat):
        kind, label, error, details = _describe(step)
        start = _ms(step.started_at, origin)
        end = _ms(step.ended_at, origin)
        own = start is not None and end is not None
        if start is None:
            start = cursor
        if end is None:
            length = step.duration_ms if step.duration_ms is not None else (0.0 if timed else 1.0)
            end = start + length
        start, end = max(start, 0.0), max(end, start, 0.0)
        cursor = max(cursor, end) if own or not timed else end
        rows.append(
            StepRow(
                index=index,
                kind=kind,
                label=_clip(label, MAX_LABEL_CHARS),
                depth=depth,
                start=start,
                end=end,
                timed=own or (timed and step.duration_ms is not None),
                error=error,
                details=details,
            )
        )
    groups = _mark_parallel(rows) if timed else 0
    total = max([r.end for r in rows] + [_ms(run.ended_at, origin) or 0.0, 0.0])
    total = total if total > 0 else 1.0
    return Waterfall(
        rows=rows,
        total=total,
        timed=timed,
        ticks=nice_ticks(total, timed=timed),
        hidden=hidden,
        groups=groups,
    )


def _mark_parallel(rows: list[StepRow]) -> int:
    """Group rows of one depth whose times overlap; return how many groups there are.

    Sweeps the rows of each depth in start order: a row starting before the running end
    of the current cluster joins it. Linear after the sort.
    """
    by_depth: dict[int, list[StepRow]] = {}
    for row in rows:
        if row.timed and row.duration > 0:
            by_depth.setdefault(row.depth, []).append(row)
    groups = 0
    for members in by_depth.values():
        members.sort(key=lambda r: (r.start, r.index))
        clusters: list[list[StepRow]] = []
        reach = -math.inf
        for row in members:
            if clusters and row.start < reach:
                clusters[-1].append(row)
                reach = max(reach, row.end)
            else:
                clusters.append([row])
                reach = row.end
        for cluster in clusters:
            if len(cluster) > 1:
                for lane, member in enumerate(cluster):
                    member.lane, member.group, member.group_size = lane, groups, len(cluster)
                groups += 1
    return groups


def nice_ticks(total: float, *, timed: bool = True, count: int = 6) -> list[Tick]:
    """About ``count`` round marks from 0 to ``total``.

    Examples:
        >>> [t.label for t in nice_ticks(1000)]
        ['0', '200 ms', '400 ms', '600 ms', '800 ms', '1.0 s']
        >>> [t.label for t in nice_ticks(3, timed=False)]
        ['0', '1', '2', '3']
    """
    if total <= 0:
        return [Tick(0.0, "0")]
    raw = total / max(count - 1, 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    if not timed:
        step = max(round(step), 1)
    elif raw > 10_000:  # past ten seconds, steps a clock reads: 15 s, 30 s, 1 min, 5 min ...
        step = next((c for c in _CLOCK_STEPS if c >= raw), step)
    ticks = []
    at = 0.0
    while at <= total + step * 1e-9:
        ticks.append(Tick(at, _label(at, timed)))
        at += step
    return ticks


def _label(at: float, timed: bool) -> str:
    if at == 0:
        return "0"
    if not timed:
        return f"{at:g}"
    if at < 1000:
        return f"{at:g} ms"
    if at < 10_000:
        return f"{at / 1000:.1f} s"
    if at < 120_000:
        return f"{at / 1000:.0f} s"
    if at < 7_200_000:
        return f"{at / 60_000:g} min"
    return f"{at / 3_600_000:g} h"
