"""The work a run did as discrete tasks, and how much of it ran in parallel.

:func:`classify_tasks` turns a trajectory or a flow run into typed tasks, the same
way for both, so the task figures read alike for every agent:

- a trajectory's tool calls, retrievals and hand-offs to sub-agents are ``tool``
  tasks; its model calls made before any tool work (when tool work follows) are
  ``planning``; every other model call (deciding between tools, composing the answer)
  is ``reasoning``. Framework-internal tools are scaffolding, not tasks.
- a flow's nodes are classed by their type: routers, branches and planners are
  ``planning``; LLM, agent and prompt nodes are ``reasoning``; start / end / input /
  output nodes are scaffolding; every other node (SQL, HTTP, code, a tool) is ``tool``.

A task is ``parallel`` when its time span provably overlaps another task's: both have
a start and an end, and each started before the other ended. Nothing else makes a
task parallel — a trace whose steps were recorded one after another, or carry no
times, is sequential, and :func:`parallel_efficiency` then abstains instead of
reporting a speedup of 1.0 it never measured.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from arbiter.contract import (
    DEFAULT_AGENT_CLASSES,
    Evidence,
    Example,
    FlowNode,
    FlowRun,
    Output,
    Score,
    Trajectory,
)
from arbiter.scoring.base import ScoreFunction
from arbiter.trajectories.scorers.calls import clip
from arbiter.trajectories.scorers.common import banded, internal_tools, trajectory_scorer
from arbiter.trajectories.scorers.derived import shared

__all__ = [
    "TASK_CLASSES",
    "Task",
    "TaskClass",
    "TaskMode",
    "TaskSet",
    "classify_tasks",
    "internal_tools",
    "parallel_efficiency",
    "task_set",
    "tasks",
]

TaskClass = Literal["planning", "tool", "reasoning"]
"""What kind of work a task was."""
TaskMode = Literal["sequential", "parallel"]
"""Whether a task provably ran alongside another."""

TASK_CLASSES: tuple[TaskClass, ...] = ("planning", "tool", "reasoning")
"""The task classes, in the order a breakdown lists them."""

_NAME = 80

_FLOW_SCAFFOLDING = frozenset({"start", "end", "input", "output", "trigger", "note", "comment"})
_FLOW_PLANNING = frozenset(
    {"plan", "planner", "router", "route", "routing", "branch", "condition", "decision", "switch"}
)
_FLOW_REASONING = frozenset(
    {"llm", "agent", "prompt", "profile", "chat", "model", "reasoning", "summary", "summarize"}
)
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
"""The words of a node type: ``http_request``, ``HTTPRequest`` and ``http-request`` alike."""


@dataclass(frozen=True, slots=True)
class Task:
    """One discrete unit of executed work."""

    task_class: TaskClass
    """planning, tool or reasoning."""
    name: str
    """What ran: the tool, the model, the node (bounded)."""
    mode: TaskMode
    """parallel when it provably overlapped another task in time."""
    started_at: datetime | None = None
    """When it started, if known."""
    ended_at: datetime | None = None
    """When it ended, if known."""
    span: tuple[float, float] | None = None
    """Its start and end in epoch seconds, when both are known and it took time."""


def _span(started_at: datetime | None, ended_at: datetime | None) -> tuple[float, float] | None:
    if started_at is None or ended_at is None:
        return None
    # A time without a zone is read as UTC, so a trace mixing both still compares.
    if started_at.tzinfo is None:
        started_at = started_at.replace(tzinfo=UTC)
    if ended_at.tzinfo is None:
        ended_at = ended_at.replace(tzinfo=UTC)
    start, end = started_at.timestamp(), ended_at.timestamp()
    return (start, end) if end > start else None


_Draft = tuple[TaskClass, str, datetime | None, datetime | None]
"""A task before its mode is known: class, name, start, end."""


class TaskSet:
    """The tasks of one run, in the order the run did them.

    Classified from a run, it makes its :class:`Task` objects only when :attr:`tasks`
    is read: the counts, the parallel tasks and the speedup read what they were made of.

    Args:
        tasks: The tasks.
    """

    __slots__ = ("_drafts", "_parallel", "_spans", "_tasks")

    def __init__(self, tasks: Iterable[Task] = ()) -> None:
        self._tasks: tuple[Task, ...] | None = tuple(tasks)
        self._drafts: list[_Draft] = [
            (t.task_class, t.name, t.started_at, t.ended_at) for t in self._tasks
        ]
        self._spans = [t.span for t in self._tasks]
        self._parallel = frozenset(i for i, t in enumerate(self._tasks) if t.mode == "parallel")

    @classmethod
    def _classified(
        cls,
        drafts: list[_Draft],
        spans: list[tuple[float, float] | None],
        parallel: frozenset[int],
    ) -> TaskSet:
        made = cls.__new__(cls)
        made._tasks = None
        made._drafts, made._spans, made._parallel = drafts, spans, parallel
        return made

    @property
    def tasks(self) -> tuple[Task, ...]:
        """The tasks, in order."""
        if self._tasks is None:
            modes: list[TaskMode] = ["sequential"] * len(self._drafts)
            for index in self._parallel:
                modes[index] = "parallel"
            self._tasks = tuple(
                Task(kind, name, mode, start, end, span)
                for (kind, name, start, end), mode, span in zip(
                    self._drafts, modes, self._spans, strict=True
                )
            )
        return self._tasks

    def __len__(self) -> int:
        return len(self._drafts)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TaskSet) and self.tasks == other.tasks

    def __hash__(self) -> int:
        return hash(self.tasks)

    def __repr__(self) -> str:
        return f"TaskSet(tasks={self.tasks!r})"

    def counts(self) -> dict[str, int]:
        """Tasks per class, every class listed (zero included)."""
        counted = Counter(draft[0] for draft in self._drafts)
        return {name: counted[name] for name in TASK_CLASSES}

    def breakdown(self) -> list[str]:
        """The classes that occurred, as ``["1 planning", "2 tool", "2 reasoning"]``."""
        return [f"{count} {name}" for name, count in self.counts().items() if count]

    @property
    def parallel(self) -> int:
        """How many tasks provably overlapped another."""
        return len(self._parallel)

    def speedup(self) -> float | None:
        """Summed task time over the wall-clock time of its union; None without overlap.

        Only tasks with a start and an end count. 2 overlapping 1 s nodes followed by a
        1 s node give 3 s of work in 2 s: 1.5.
        """
        if not self._parallel:
            return None
        spans = sorted(span for span in self._spans if span is not None)
        busy = math.fsum(end - start for start, end in spans)
        union = 0.0
        current_start, current_end = spans[0]
        for start, end in spans[1:]:
            if start < current_end:
                current_end = max(current_end, end)
            else:
                union += current_end - current_start
                current_start, current_end = start, end
        union += current_end - current_start
        return busy / union


def _with_modes(drafts: list[_Draft]) -> TaskSet:
    """The tasks, each marked parallel when its span overlaps another's.

    Spans sorted by start form waves: a span starting before the latest end seen so
    far overlaps the span holding that end, so every member of a wave of two or more
    overlaps another member.
    """
    spans = [_span(start, end) for _, _, start, end in drafts]
    timed = sorted((*span, index) for index, span in enumerate(spans) if span is not None)
    parallel: set[int] = set()
    wave: list[int] = []
    wave_end: float | None = None
    for start, end, index in timed:
        if wave_end is not None and start < wave_end:
            wave.append(index)
            wave_end = max(wave_end, end)
            continue
        if len(wave) > 1:
            parallel.update(wave)
        wave, wave_end = [index], end
    if len(wave) > 1:
        parallel.update(wave)
    return TaskSet._classified(drafts, spans, frozenset(parallel))


def _trajectory_drafts(trajectory: Trajectory, internal: Collection[str]) -> list[_Draft]:
    steps = trajectory.steps
    first_work = next(
        (
            index
            for index, step in enumerate(steps)
            if step.kind in ("retrieval", "handoff")
            or (step.kind == "tool_call" and step.name not in internal)
        ),
        -1,  # no tool work: no model call was planning
    )
    drafts: list[_Draft] = []
    for index, step in enumerate(steps):
        if step.kind == "llm_call":
            kind: TaskClass = "planning" if index < first_work else "reasoning"
            name = step.model or "model"
        elif step.kind == "tool_call":
            if step.name in internal:
                continue
            kind, name = "tool", step.name
        elif step.kind == "retrieval":
            kind, name = "tool", "retrieval"
        else:
            kind, name = "tool", step.trajectory.agent.name or "sub-agent"
        drafts.append((kind, clip(name, _NAME), step.started_at, step.ended_at))
    return drafts


def _node_class(node: FlowNode) -> TaskClass | None:
    words = {word.casefold() for word in _WORD.findall((node.type or "")[:_NAME])}
    if words & _FLOW_SCAFFOLDING and not words - _FLOW_SCAFFOLDING:
        return None
    if words & _FLOW_PLANNING:
        return "planning"
    if words & _FLOW_REASONING:
        return "reasoning"
    return "tool"


def classify_tasks(run: Trajectory | FlowRun, *, internal_tools: Collection[str] = ()) -> TaskSet:
    """The tasks of a trajectory (its own steps) or of a flow run (its nodes).

    Args:
        run: The trajectory or flow run.
        internal_tools: Framework tools that are scaffolding, not tasks.
    """
    if isinstance(run, FlowRun):
        drafts: list[_Draft] = []
        for node in run.nodes:
            kind = _node_class(node)
            if kind is not None:
                drafts.append(
                    (kind, clip(node.name or node.id, _NAME), node.started_at, node.ended_at)
                )
        return _with_modes(drafts)
    return _with_modes(_trajectory_drafts(run, frozenset(internal_tools)))


def task_set(example: Example, run: Trajectory | FlowRun) -> TaskSet:
    """The run's tasks with the case's internal tools left out; a trajectory's are
    shared by the scorers of a case (:mod:`~arbiter.trajectories.scorers.derived`)."""
    if isinstance(run, Trajectory):
        return shared(_trajectory_tasks, example, run)
    return classify_tasks(run, internal_tools=internal_tools(example))


def _trajectory_tasks(example: Example, trajectory: Trajectory) -> TaskSet:
    return classify_tasks(trajectory, internal_tools=internal_tools(example))


def _run_of(output: Output) -> Trajectory | FlowRun:
    run = output.trajectory or output.flow
    assert run is not None  # trajectory_scorer abstains without either
    return run


def _size(run: Trajectory | FlowRun) -> int:
    return len(run.nodes) if isinstance(run, FlowRun) else len(run.steps)


@trajectory_scorer(
    name="tasks",
    dimension="tasks",
    moment="run",
    applies_to=DEFAULT_AGENT_CLASSES,
    gating=False,
    needs="either",
)
def tasks() -> ScoreFunction:
    """How many tasks the run did, with their split into planning / tool / reasoning.

    Banded by ``max_tasks``; the split is in the evidence and ``metadata["breakdown"]``.
    Abstains when the run recorded no steps (or no nodes) at all. Non-gating: a volume
    signal flags work to look at, it does not fail a release.
    """

    def score(example: Example, output: Output) -> Score:
        run = _run_of(output)
        if _size(run) == 0:
            return Score(explanation="the run recorded no steps")
        found = task_set(example, run)
        result = banded(float(len(found)), "max_tasks", example, higher_is_better=False)
        split = found.breakdown()
        result.explanation = (
            f"{len(found)} tasks"
            + (f" ({', '.join(split)})" if split else "")
            + f"; {result.explanation}"
        )
        result.evidence = [Evidence(quote=line, note="tasks of this class") for line in split]
        result.metadata.update(breakdown=dict(found.counts()), parallel=found.parallel)
        return result

    return score


@trajectory_scorer(
    name="parallel_efficiency",
    dimension="parallel_efficiency",
    moment="run",
    applies_to=DEFAULT_AGENT_CLASSES,
    gating=False,
    needs="either",
)
def parallel_efficiency() -> ScoreFunction:
    """Speedup from running tasks at once: summed task time over its wall-clock union.

    Only provable overlap counts (tasks with start and end times that overlap);
    abstains when no two tasks overlapped, never reporting an unmeasured 1.0. Banded by
    ``min_parallel_efficiency``; non-gating (a serial agent is not a failed one).
    """

    def score(example: Example, output: Output) -> Score:
        found = task_set(example, _run_of(output))
        speedup = found.speedup()
        if speedup is None:
            return Score(explanation="no two tasks provably overlapped in time")
        result = banded(speedup, "min_parallel_efficiency", example, higher_is_better=True)
        result.explanation = (
            f"{speedup:.2f}x over {found.parallel} parallel of {len(found)} tasks; "
            + result.explanation
        )
        result.metadata.update(parallel=found.parallel, tasks=len(found))
        return result

    return score
