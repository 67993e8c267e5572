"""Hand-built runs for the trajectory scorer tests, and a direct way to score them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import JsonValue

from arbiter.contract import (
    Example,
    FlowNode,
    FlowRun,
    LlmCall,
    Output,
    Score,
    ToolCall,
    Trajectory,
)
from arbiter.scoring.base import ScorerFactory

T0 = datetime(2026, 1, 1, tzinfo=UTC)
"""The start of every timed test run."""


def at(seconds: float) -> datetime:
    """``seconds`` after :data:`T0`."""
    return T0 + timedelta(seconds=seconds)


def tool(
    name: str,
    arguments: JsonValue = None,
    *,
    error: str | None = None,
    start: float | None = None,
    end: float | None = None,
) -> ToolCall:
    """A tool call, timed from ``start`` to ``end`` seconds after T0 when given."""
    return ToolCall(
        name=name,
        arguments=arguments,
        error=error,
        started_at=None if start is None else at(start),
        ended_at=None if end is None else at(end),
    )


def llm(
    *,
    cost: float | None = None,
    tokens: tuple[int, int] | None = None,
    error: str | None = None,
    start: float | None = None,
    end: float | None = None,
) -> LlmCall:
    """A model call with an optional cost, (input, output) tokens and times."""
    return LlmCall(
        model="m",
        cost_usd=cost,
        input_tokens=None if tokens is None else tokens[0],
        output_tokens=None if tokens is None else tokens[1],
        error=error,
        started_at=None if start is None else at(start),
        ended_at=None if end is None else at(end),
    )


def run(*steps: Any, **fields: Any) -> Trajectory:
    """A trajectory of ``steps``; ``fields`` sets the rest (status, final_answer, ...)."""
    return Trajectory(steps=list(steps), **fields)


def node(node_id: str, node_type: str | None, start: float | None, end: float | None) -> FlowNode:
    """A flow node timed from ``start`` to ``end`` seconds after T0."""
    return FlowNode(
        id=node_id,
        type=node_type,
        started_at=None if start is None else at(start),
        ended_at=None if end is None else at(end),
    )


def grade(
    factory: ScorerFactory,
    subject: Trajectory | FlowRun | None,
    assertions: dict[str, Any] | None = None,
    *,
    metadata: dict[str, Any] | None = None,
    **arguments: Any,
) -> Score:
    """Score ``subject`` with the scorer ``factory(**arguments)`` against a case.

    Calls the scorer's function directly, not through the wrapper that turns an
    exception into an errored score, so a test sees anything the scorer raises.
    """
    example = Example(
        id="case", input={"query": "q"}, expected=assertions or {}, metadata=metadata or {}
    )
    is_flow = isinstance(subject, FlowRun)
    output = Output(flow=subject) if is_flow else Output(trajectory=subject)
    result = factory(**arguments).function(example, output)
    assert isinstance(result, Score)
    return result
