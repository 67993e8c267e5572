"""Mine golden agent cases from anomalous trajectories, assertions pre-filled from the run.

A run is anomalous when it errored (its status, or a tool call's error), when it failed
(its gating verdict), or when the agent corrected itself at least twice (a failed tool
call followed by a successful one of the same tool). Golden sets grow from real
failures, not imagination: each mined case carries the run's query and what the run
showed it can do, for a person to review and tighten:

- ``require_tools_subset``: the tools that succeeded;
- ``must_not_call``: empty (nothing observed says what is forbidden);
- ``expected_tool_calls``: the successful calls, with their arguments, in order;
- ``max_cost_usd`` and ``max_latency_ms``: the observed figure times a margin.

Why a case was mined is in its ``metadata["mined"]``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import JsonValue

from arbiter.contract import LlmCall, ToolCall, Trajectory

__all__ = [
    "DEFAULT_MARGIN",
    "MIN_SELF_CORRECTIONS",
    "MiningReason",
    "case_from_trajectory",
    "first_user_message",
    "mining_reasons",
    "retried_failures",
]

MiningReason = Literal["errored", "tool_error", "failed", "self_corrections"]
"""Why a run was mined: it errored, a tool call failed, its verdict failed, or the agent
corrected itself at least :data:`MIN_SELF_CORRECTIONS` times."""

MIN_SELF_CORRECTIONS = 2
"""Self-corrections from which a run counts as anomalous (the reference's threshold)."""

DEFAULT_MARGIN = 1.5
"""Observed cost and latency are multiplied by this to make a mined case's ceilings."""


def retried_failures(calls: Sequence[ToolCall]) -> int:
    """Self-corrections: successful calls of a tool that follow a failure of that tool.

    The count when no ``self_correction`` score says otherwise (the same rule as that
    scorer): a run of failures then a success is one correction.
    """
    failing: set[str] = set()
    corrected = 0
    for call in calls:
        if not call.succeeded:
            failing.add(call.name)
        elif call.name in failing:
            failing.discard(call.name)
            corrected += 1
    return corrected


def mining_reasons(
    trajectory: Trajectory,
    *,
    passed: bool | None,
    self_corrections: int | None = None,
    min_self_corrections: int = MIN_SELF_CORRECTIONS,
) -> list[MiningReason]:
    """Why a run is anomalous, in a fixed order; empty when it is not.

    Args:
        trajectory: The run.
        passed: Its gating verdict (None: unknown, which is not a failure).
        self_corrections: Its self-corrections as a scorer counted them; None: the
            failures corrected by a later success (:func:`retried_failures`).
        min_self_corrections: Self-corrections from which the run is anomalous.
    """
    calls = [step for step in trajectory.walk() if isinstance(step, ToolCall)]
    reasons: list[MiningReason] = []
    if trajectory.status == "error" or trajectory.error is not None:
        reasons.append("errored")
    if any(not call.succeeded for call in calls):
        reasons.append("tool_error")
    if passed is False:
        reasons.append("failed")
    corrections = retried_failures(calls) if self_corrections is None else self_corrections
    if corrections >= min_self_corrections:
        reasons.append("self_corrections")
    return reasons


def first_user_message(trajectory: Trajectory) -> str | None:
    """The first user message the run's LLM calls were sent, if they captured one."""
    for step in trajectory.steps:
        if isinstance(step, LlmCall):
            for message in step.input_messages:
                if message.role == "user" and message.content and message.content.strip():
                    return message.content
    return None


def case_from_trajectory(
    trajectory: Trajectory,
    *,
    case_id: str,
    reasons: Sequence[MiningReason],
    margin: float = DEFAULT_MARGIN,
    query: str | None = None,
    provenance: dict[str, JsonValue] | None = None,
) -> dict[str, Any]:
    """An agent case (the JSON of one case-file line) from an anomalous run.

    Args:
        trajectory: The run.
        case_id: The new case's id.
        reasons: Why it was mined (:func:`mining_reasons`).
        margin: Observed cost and latency times this make the case's ceilings.
        query: The case's query; None: the run's first user message (empty if none).
        provenance: Where the run came from (file, line, run id), kept in the metadata.

    Raises:
        ValueError: ``margin`` is not a finite number of at least 1.
    """
    if not math.isfinite(margin) or margin < 1:
        raise ValueError(f"The 'margin' parameter must be a number of at least 1. Got {margin!r}.")
    calls = [step for step in trajectory.steps if isinstance(step, ToolCall)]
    succeeded = [call for call in calls if call.succeeded]
    assertions: dict[str, JsonValue] = {
        "require_tools_subset": list(dict.fromkeys(call.name for call in succeeded)),
        "must_not_call": [],
        "expected_tool_calls": [
            {"name": call.name, "arguments": call.arguments} for call in succeeded
        ],
    }
    totals = trajectory.totals()
    if totals.cost_usd is not None:
        assertions["max_cost_usd"] = _ceiling(totals.cost_usd * margin, digits=6)
    if totals.duration_ms is not None:
        assertions["max_latency_ms"] = _ceiling(totals.duration_ms * margin, digits=0)
    mined: dict[str, JsonValue] = {
        "reasons": list(reasons),
        "status": trajectory.status,
        "tool_errors": [
            {"name": call.name, "error": call.error} for call in calls if not call.succeeded
        ],
        **(provenance or {}),
    }
    if trajectory.error is not None:
        mined["error"] = trajectory.error
    case: dict[str, Any] = {
        "id": case_id,
        "input": {"query": query if query is not None else first_user_message(trajectory) or ""},
        "assertions": assertions,
        "metadata": {"mined": mined},
    }
    if trajectory.agent.agent_class is not None:
        case["agent_class"] = trajectory.agent.agent_class
    return case


def _ceiling(value: float, *, digits: int) -> float:
    """``value`` rounded up at ``digits`` decimals, so the ceiling never falls below it."""
    scale = 10.0**digits
    return math.ceil(value * scale) / scale
