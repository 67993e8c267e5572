"""Agent runs: a ``Trajectory`` of typed steps, and a ``FlowRun`` of named nodes.

A trajectory is what an agent did for one query, in order: LLM calls, tool calls,
retrievals and hand-offs to sub-agents (each with its own trajectory, so a coordinator
with experts is a tree), then its final answer. Importers of traces (OTLP, OpenInference,
OpenAI messages, τ-bench) produce it; the trajectory scorers read it.

Everything here may come from an untrusted trace, so text is bounded in size
(:data:`MAX_TEXT_CHARS`, :data:`MAX_NAME_CHARS`), a run holds at most
:data:`MAX_STEPS` steps, and every number is bounded (:data:`MAX_COST_USD`,
:data:`MAX_MILLIS`, :data:`MAX_COUNT`, :data:`MAX_SIMILARITY`) so that no sum of them,
over any run a request can carry, overflows a float. A run's times are all with a time
zone or all without one: zoned and zoneless times cannot be ordered, so a run mixing
them is refused, naming the first time that breaks the rule.

The agent class is checked against a configurable set: :data:`DEFAULT_AGENT_CLASSES`
unless the validation context names others::

    Trajectory.model_validate(doc, context={"agent_classes": {"planner", "flow"}})
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    JsonValue,
    ValidationInfo,
    field_validator,
    model_validator,
)

from arbiter.contract.common import SCHEMA_VERSION, StrictModel

__all__ = [
    "DEFAULT_AGENT_CLASSES",
    "MAX_COST_USD",
    "MAX_COUNT",
    "MAX_MILLIS",
    "MAX_NAME_CHARS",
    "MAX_SIMILARITY",
    "MAX_STEPS",
    "MAX_TEXT_CHARS",
    "AgentIdentity",
    "ChatMessage",
    "Chunk",
    "FlowNode",
    "FlowRun",
    "Handoff",
    "LlmCall",
    "Retrieval",
    "Step",
    "ToolCall",
    "Totals",
    "Trajectory",
    "TrajectorySource",
    "TrajectoryStatus",
]

DEFAULT_AGENT_CLASSES = frozenset(
    {"llm_only", "rag_focused", "tool_enabled", "genie", "conversation_with_tools", "flow"}
)
"""The reference's five profile classes, plus ``flow`` for flow runs."""

MAX_TEXT_CHARS = 1_000_000
"""Longest free text (a message, a result, an answer) a trajectory holds."""
MAX_NAME_CHARS = 1_000
"""Longest name, id, model or role."""
MAX_STEPS = 10_000
"""Most steps (or flow nodes) in one run, hand-offs' own steps not counted."""

MAX_COST_USD = 1e9
"""Largest cost of one model call, node or run, in US dollars."""
MAX_MILLIS = 1e13
"""Longest duration of one step or node, in milliseconds (about 317 years)."""
MAX_COUNT = 10**12
"""Largest token count of one model call or node."""
MAX_SIMILARITY = 1e9
"""Largest similarity (in absolute value) a retrieved chunk may carry."""

Text = Annotated[str, Field(max_length=MAX_TEXT_CHARS)]
Name = Annotated[str, Field(max_length=MAX_NAME_CHARS)]
Count = Annotated[int, Field(ge=0, le=MAX_COUNT)]
Cost = Annotated[float, Field(ge=0, le=MAX_COST_USD, allow_inf_nan=False)]
Millis = Annotated[float, Field(ge=0, le=MAX_MILLIS, allow_inf_nan=False)]

TrajectoryStatus = Literal["completed", "error", "cancelled", "incomplete", "unknown"]
"""How a run ended: ``unknown`` when the source does not say."""


def check_times(started_at: datetime | None, ended_at: datetime | None) -> None:
    """Refuse an end before its start (either may be unknown), and a start and end of
    which one has a time zone and the other none (they cannot be ordered)."""
    if started_at is None or ended_at is None:
        return
    if _zoned(started_at) != _zoned(ended_at):
        said, other = ("a", "none") if _zoned(started_at) else ("no", "one")
        raise ValueError(
            f"started_at has {said} time zone but ended_at has {other}: they cannot be ordered"
        )
    if ended_at < started_at:
        raise ValueError("ended_at is before started_at")


def _zoned(moment: datetime) -> bool:
    return moment.utcoffset() is not None


def check_one_kind_of_time(times: Iterator[tuple[str, datetime]]) -> None:
    """Refuse times of one run of which some have a time zone and some none.

    Args:
        times: ``(where, time)`` pairs in the run's order (``steps[3].started_at``).

    Raises:
        ValueError: Naming the first time unlike the ones before it.
    """
    first: tuple[str, bool] | None = None
    for where, moment in times:
        zoned = _zoned(moment)
        if first is None:
            first = (where, zoned)
        elif zoned != first[1]:
            said = "has a time zone" if zoned else "has no time zone"
            other = "has none" if zoned else "has one"
            raise ValueError(
                f"{where} {said} but {first[0]} {other}: a run's times are all zoned "
                "or all zoneless"
            )


class _Timed(StrictModel):
    """Start and end of a step or node, and its duration when known without them."""

    started_at: datetime | None = None
    """When it started."""
    ended_at: datetime | None = None
    """When it ended."""
    duration_ms: Millis | None = None
    """Its duration in milliseconds, when the source reports one without the times."""

    @model_validator(mode="after")
    def _ends_after_start(self) -> Any:
        check_times(self.started_at, self.ended_at)
        return self

    @property
    def duration(self) -> float | None:
        """Milliseconds from start to end, else ``duration_ms``, else None."""
        if self.started_at is not None and self.ended_at is not None:
            return (self.ended_at - self.started_at).total_seconds() * 1000
        return self.duration_ms


class ChatMessage(StrictModel):
    """One chat message sent to or received from a model."""

    role: Name
    """``system``, ``user``, ``assistant``, ``tool``, ..."""
    content: Text | None = None
    """Its text; None when it carried none (an assistant turn of tool calls only)."""
    name: Name | None = None
    """The name the message carried (a tool's, a participant's), if any."""


class LlmCall(_Timed):
    """One call of a model."""

    kind: Literal["llm_call"] = "llm_call"
    """Step discriminator."""
    id: Name | None = None
    """The source's id for the call (a span id), if any."""
    model: Name | None = None
    """The model called, when known."""
    input_messages: list[ChatMessage] = Field(default_factory=list, max_length=MAX_STEPS)
    """The messages sent, when the source captured them."""
    output_messages: list[ChatMessage] = Field(default_factory=list, max_length=MAX_STEPS)
    """The messages answered, when the source captured them."""
    input_tokens: Count | None = None
    """Prompt tokens."""
    output_tokens: Count | None = None
    """Completion tokens."""
    cost_usd: Cost | None = None
    """Cost in US dollars, when known."""
    error: Text | None = None
    """Why the call failed; None when it did not."""


class ToolCall(_Timed):
    """One call of a tool, with what it was given and what it returned."""

    kind: Literal["tool_call"] = "tool_call"
    """Step discriminator."""
    id: Name | None = None
    """The source's id for the step (a span id), if any."""
    name: Name
    """The tool's name."""
    call_id: Name | None = None
    """The model's id for the call, tying it to its result."""
    arguments: JsonValue = None
    """The arguments, decoded from JSON where the source gave a JSON text."""
    result: JsonValue = None
    """What the tool returned; None when no result was recorded."""
    error: Text | None = None
    """Why the call failed; None when it did not."""

    @property
    def succeeded(self) -> bool:
        """Whether the call returned without an error."""
        return self.error is None


class Chunk(StrictModel):
    """One retrieved passage."""

    source: Name | None = None
    """Where it came from (a document id, a URL)."""
    text: Text | None = None
    """Its text, when captured."""
    similarity: float | None = Field(
        default=None, ge=-MAX_SIMILARITY, le=MAX_SIMILARITY, allow_inf_nan=False
    )
    """Its similarity to the query as the retriever scored it."""


class Retrieval(_Timed):
    """One lookup in a retriever or vector store."""

    kind: Literal["retrieval"] = "retrieval"
    """Step discriminator."""
    id: Name | None = None
    """The source's id for the step (a span id), if any."""
    query: Text | None = None
    """What was looked up."""
    chunks: list[Chunk] = Field(default_factory=list, max_length=MAX_STEPS)
    """What came back, in rank order."""


class Handoff(_Timed):
    """A hand-off to a sub-agent, with the sub-agent's own run."""

    kind: Literal["handoff"] = "handoff"
    """Step discriminator."""
    id: Name | None = None
    """The source's id for the step (a span id), if any."""
    trajectory: Trajectory
    """What the sub-agent did."""


Step = Annotated[LlmCall | ToolCall | Retrieval | Handoff, Field(discriminator="kind")]
"""One step of a trajectory, told apart by its ``kind``."""


class AgentIdentity(StrictModel):
    """Which agent ran."""

    name: Name | None = None
    """The agent's name."""
    version: Name | None = None
    """Its version (a profile revision, a release)."""
    agent_class: Name | None = None
    """Its class, one of the configured set (:data:`DEFAULT_AGENT_CLASSES` by default)."""

    @field_validator("agent_class")
    @classmethod
    def _known_class(cls, value: str | None, info: ValidationInfo) -> str | None:
        context = info.context if isinstance(info.context, dict) else {}
        known = context.get("agent_classes", DEFAULT_AGENT_CLASSES)
        if value is not None and value not in known:
            raise ValueError(f"unknown agent class {value!r}; expected one of {sorted(known)}")
        return value


class TrajectorySource(StrictModel):
    """Where a run was imported from."""

    format: Name
    """The importer's format (``openai_messages``, ``otlp_json``, ``tau_bench``, ...)."""
    file: Name | None = None
    """The file it was read from."""
    line: Annotated[int, Field(ge=1)] | None = None
    """The 1-based line of the file it was read from."""
    trace_id: Name | None = None
    """The trace it belongs to, for span-based formats."""
    span_ids: list[Name] = Field(default_factory=list, max_length=MAX_STEPS)
    """The spans it was built from."""


class Totals(StrictModel):
    """Tokens, cost and duration of a run, summed over what its steps report."""

    input_tokens: int
    """Prompt tokens of every LLM call."""
    output_tokens: int
    """Completion tokens of every LLM call."""
    cost_usd: float | None
    """Cost of the LLM calls that report one; None when none does."""
    duration_ms: float | None
    """Wall-clock time of the run; None when nothing is timed."""

    @property
    def total_tokens(self) -> int:
        """Prompt and completion tokens together."""
        return self.input_tokens + self.output_tokens


class Trajectory(StrictModel):
    """One agent run: who ran, what it did, step by step, and what it answered."""

    schema_version: int = SCHEMA_VERSION
    """Version of this shape."""
    id: Name | None = None
    """The run's id (a turn id, a trace id), if any."""
    agent: AgentIdentity = Field(default_factory=AgentIdentity)
    """Which agent ran."""
    conversation_id: Name | None = None
    """The conversation or session the run belongs to."""
    steps: list[Step] = Field(default_factory=list, max_length=MAX_STEPS)
    """What the agent did, in order."""
    final_answer: Text | None = None
    """The answer it delivered; None when it delivered none."""
    status: TrajectoryStatus = "unknown"
    """How the run ended."""
    error: Text | None = None
    """Why the run failed, if it did."""
    started_at: datetime | None = None
    """When the run started."""
    ended_at: datetime | None = None
    """When the run ended."""
    source: TrajectorySource | None = None
    """Where it was imported from."""
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    """Anything else the source carried that is worth keeping."""

    @model_validator(mode="after")
    def _ends_after_start(self) -> Trajectory:
        check_times(self.started_at, self.ended_at)
        check_one_kind_of_time(_times(self))
        return self

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The run's own tool calls, in order (a sub-agent's are in its hand-off)."""
        return [step for step in self.steps if isinstance(step, ToolCall)]

    @property
    def llm_calls(self) -> list[LlmCall]:
        """The run's own LLM calls, in order."""
        return [step for step in self.steps if isinstance(step, LlmCall)]

    def walk(self) -> Iterator[Step]:
        """Every step, depth first: a hand-off, then the sub-agent's steps, then the next."""
        stack: list[Iterator[Step]] = [iter(self.steps)]
        while stack:
            step = next(stack[-1], None)
            if step is None:
                stack.pop()
                continue
            yield step
            if isinstance(step, Handoff):
                stack.append(iter(step.trajectory.steps))

    def totals(self, *, include_handoffs: bool = True) -> Totals:
        """Tokens and cost of the LLM calls, and the run's wall-clock duration.

        Args:
            include_handoffs: Count sub-agents' calls too (the coordinator's inclusive cost).
        """
        steps = list(self.walk()) if include_handoffs else list(self.steps)
        calls = [s for s in steps if isinstance(s, LlmCall)]
        costs = [c.cost_usd for c in calls if c.cost_usd is not None]
        return Totals(
            input_tokens=sum(c.input_tokens or 0 for c in calls),
            output_tokens=sum(c.output_tokens or 0 for c in calls),
            cost_usd=math.fsum(costs) if costs else None,
            duration_ms=self.duration,
        )

    @property
    def duration(self) -> float | None:
        """Wall-clock milliseconds of the run, from its own times or its steps'.

        Raises:
            TypeError: The steps' times mix zoned and zoneless ones (they cannot be
                ordered).
        """
        return _wall_clock(self.started_at, self.ended_at, self.steps)


def _times(run: Trajectory, prefix: str = "") -> Iterator[tuple[str, datetime]]:
    """Every time of a run, its sub-agents' included, with where it is (one pass)."""
    if run.started_at is not None:
        yield f"{prefix}started_at", run.started_at
    if run.ended_at is not None:
        yield f"{prefix}ended_at", run.ended_at
    stack: list[tuple[str, Iterator[tuple[int, Step]]]] = [(prefix, enumerate(run.steps))]
    while stack:
        base, steps = stack[-1]
        found = next(steps, None)
        if found is None:
            stack.pop()
            continue
        index, step = found
        at = f"{base}steps[{index}]."
        if step.started_at is not None:
            yield f"{at}started_at", step.started_at
        if step.ended_at is not None:
            yield f"{at}ended_at", step.ended_at
        if isinstance(step, Handoff):
            inner = step.trajectory
            if inner.started_at is not None:
                yield f"{at}trajectory.started_at", inner.started_at
            if inner.ended_at is not None:
                yield f"{at}trajectory.ended_at", inner.ended_at
            stack.append((f"{at}trajectory.", enumerate(inner.steps)))


def _flow_times(run: FlowRun) -> Iterator[tuple[str, datetime]]:
    if run.started_at is not None:
        yield "started_at", run.started_at
    if run.ended_at is not None:
        yield "ended_at", run.ended_at
    for index, node in enumerate(run.nodes):
        if node.started_at is not None:
            yield f"nodes[{index}].started_at", node.started_at
        if node.ended_at is not None:
            yield f"nodes[{index}].ended_at", node.ended_at


def _wall_clock(
    started_at: datetime | None, ended_at: datetime | None, parts: list[Any]
) -> float | None:
    """The run's own times, else the span of its timed parts, else their durations summed."""
    if started_at is None or ended_at is None:
        starts = [p.started_at for p in parts if p.started_at is not None]
        ends = [p.ended_at for p in parts if p.ended_at is not None]
        if not (starts and ends):
            durations = [p.duration_ms for p in parts if p.duration_ms is not None]
            return math.fsum(durations) if durations else None
        started_at, ended_at = min(starts), max(ends)
    return max((ended_at - started_at).total_seconds() * 1000, 0.0)


class FlowNode(_Timed):
    """One executed node of a flow."""

    id: Name
    """The node's id in the flow."""
    name: Name | None = None
    """Its label."""
    type: Name | None = None
    """Its node type (an agent, a tool, a branch, ...)."""
    status: TrajectoryStatus = "unknown"
    """How the node ended."""
    cost_usd: Cost | None = None
    """Its cost in US dollars, when known."""
    tokens: Count | None = None
    """Tokens it used, when known."""
    error: Text | None = None
    """Why it failed, if it did."""


class FlowRun(StrictModel):
    """One run of a flow: the second agent type, judged as a whole by the flow scorers."""

    schema_version: int = SCHEMA_VERSION
    """Version of this shape."""
    id: Name | None = None
    """The run's id."""
    agent: AgentIdentity = Field(default_factory=lambda: AgentIdentity(agent_class="flow"))
    """The flow's identity (its class is ``flow``)."""
    nodes: list[FlowNode] = Field(default_factory=list, max_length=MAX_STEPS)
    """The nodes executed, in order (a node run twice in a loop appears twice)."""
    status: TrajectoryStatus = "unknown"
    """How the run ended."""
    output: Text | None = None
    """What the flow delivered, if anything."""
    error: Text | None = None
    """Why the run failed, if it did."""
    started_at: datetime | None = None
    """When the run started."""
    ended_at: datetime | None = None
    """When the run ended."""
    source: TrajectorySource | None = None
    """Where it was imported from."""
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    """Anything else the source carried that is worth keeping."""

    @model_validator(mode="after")
    def _one_kind_of_time(self) -> FlowRun:
        check_times(self.started_at, self.ended_at)
        check_one_kind_of_time(_flow_times(self))
        return self

    @property
    def cost_usd(self) -> float | None:
        """The nodes' cost summed; None when no node reports one."""
        costs = [n.cost_usd for n in self.nodes if n.cost_usd is not None]
        return math.fsum(costs) if costs else None

    @property
    def duration(self) -> float | None:
        """Wall-clock milliseconds of the run, from its own times or its nodes'."""
        return _wall_clock(self.started_at, self.ended_at, self.nodes)


Handoff.model_rebuild()
