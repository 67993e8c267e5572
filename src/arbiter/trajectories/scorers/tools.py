"""What the agent did with its tools: required and forbidden tools, success rate, loops,
volume and self-corrections.

Framework-internal tools (the defaults' ``internal_tools`` and the case's) are left out
of all of them. The two tool assertions read the whole run tree, hand-offs included —
a coordinator whose expert called a forbidden tool has called it — while the metrics
of how tools were used grade the agent's own calls.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from arbiter.contract import Evidence, Example, Output, Score, ToolCall, Trajectory
from arbiter.scoring.base import ScoreFunction
from arbiter.trajectories.scorers.calls import (
    MAX_LISTED,
    TOOL_CLASSES,
    clip,
    listed,
    quote_call,
    string_list,
)
from arbiter.trajectories.scorers.common import (
    assertions,
    banded,
    compared_calls,
    graded_calls,
    trajectory_scorer,
)

__all__ = [
    "forbidden_tools",
    "no_tool_loops",
    "required_tools",
    "self_correction",
    "tool_calls",
    "tool_success_rate",
]

_NAME = 80
"""Characters of a tool name shown in an explanation."""


def _trajectory(output: Output) -> Trajectory:
    assert output.trajectory is not None  # trajectory_scorer abstains without one
    return output.trajectory


def _names(names: list[str]) -> list[str]:
    return [clip(name, _NAME) for name in names]


@trajectory_scorer(name="required_tools", dimension="required_tools", moment="act")
def required_tools() -> ScoreFunction:
    """Every tool the case requires was called at least once.

    Reads the assertion ``require_tools_subset`` (a tool name or a list); abstains
    without it. The run may call other tools too: grade what matters, not the path.
    """

    def score(example: Example, output: Output) -> Score:
        required = string_list(assertions(example), "require_tools_subset")
        if required is None:
            return Score(explanation="the case sets no require_tools_subset")
        calls = graded_calls(_trajectory(output), example, include_handoffs=True)
        called = {call.name for call in calls}
        missing = [name for name in dict.fromkeys(required) if name not in called]
        passed = not missing
        wanted = len(dict.fromkeys(required))
        return Score(
            value=float(passed),
            passed=passed,
            explanation=(
                f"all {wanted} required tools were called"
                if passed
                else "never called: " + listed(_names(missing))
            ),
            evidence=[
                Evidence(quote=clip(name, _NAME), note="required, never called")
                for name in missing[:MAX_LISTED]
            ],
            metadata={"missing": _names(missing)},
        )

    return score


@trajectory_scorer(name="forbidden_tools", dimension="forbidden_tools", moment="act")
def forbidden_tools() -> ScoreFunction:
    """No tool the case forbids was called.

    Reads the assertion ``must_not_call`` (a tool name or a list); abstains without it.
    Its value is the number of forbidden calls made.
    """

    def score(example: Example, output: Output) -> Score:
        forbidden = string_list(assertions(example), "must_not_call")
        if forbidden is None:
            return Score(explanation="the case sets no must_not_call")
        banned = set(forbidden)
        calls = graded_calls(_trajectory(output), example, include_handoffs=True)
        hits = [call for call in calls if call.name in banned]
        passed = not hits
        names = _names(list(dict.fromkeys(call.name for call in hits)))
        return Score(
            value=float(len(hits)),
            passed=passed,
            explanation=(
                "no forbidden tool was called"
                if passed
                else f"{len(hits)} forbidden call{'' if len(hits) == 1 else 's'}: " + listed(names)
            ),
            evidence=[
                Evidence(quote=quote_call(call.name, call.arguments), note="forbidden call")
                for call in hits[:MAX_LISTED]
            ],
            metadata={"called": names},
        )

    return score


@trajectory_scorer(
    name="tool_success_rate", dimension="tool_success_rate", moment="act", applies_to=TOOL_CLASSES
)
def tool_success_rate() -> ScoreFunction:
    """The share of the agent's tool calls that returned without an error.

    Banded by ``min_tool_success_rate``; abstains when the agent called no tool.
    """

    def score(example: Example, output: Output) -> Score:
        calls = graded_calls(_trajectory(output), example)
        if not calls:
            return Score(explanation="the agent called no tool")
        failed = [call for call in calls if not call.succeeded]
        rate = (len(calls) - len(failed)) / len(calls)
        result = banded(rate, "min_tool_success_rate", example, higher_is_better=True)
        result.explanation = f"{len(calls) - len(failed)} of {len(calls)} calls succeeded; " + (
            result.explanation
        )
        result.evidence = [
            Evidence(
                quote=quote_call(call.name, call.arguments),
                note=f"failed: {clip(call.error or '', 120)}",
            )
            for call in failed[:MAX_LISTED]
        ]
        result.metadata.update(calls=len(calls), failed=len(failed))
        return result

    return score


@trajectory_scorer(
    name="no_tool_loops", dimension="no_tool_loops", moment="act", applies_to=TOOL_CLASSES
)
def no_tool_loops() -> ScoreFunction:
    """How often the agent repeated one identical tool call (same name and arguments).

    The value is the most times any one call was made (1: no repeat), banded by
    ``max_identical_tool_calls``; arguments compare as canonical JSON. Abstains when
    the agent called no tool.
    """

    def score(example: Example, output: Output) -> Score:
        calls = compared_calls(_trajectory(output), example)
        if not calls:
            return Score(explanation="the agent called no tool")
        keys = [(call.name, call.canonical) for call in calls]
        counts = Counter(keys)
        key, most = counts.most_common(1)[0]  # ties: the call made first
        first = calls[keys.index(key)]
        result = banded(float(most), "max_identical_tool_calls", example, higher_is_better=False)
        repeated = sum(1 for count in counts.values() if count > 1)
        result.explanation = (
            f"no call repeated; {result.explanation}"
            if most == 1
            else f"{first.quote} made {most} times "
            f"({repeated} distinct calls repeated); {result.explanation}"
        )
        if most > 1:
            result.evidence = [Evidence(quote=first.quote, note=f"made {most} times")]
        result.metadata.update(repeated_calls=repeated)
        return result

    return score


@trajectory_scorer(
    name="tool_calls", dimension="tool_calls", moment="act", applies_to=TOOL_CLASSES, gating=False
)
def tool_calls() -> ScoreFunction:
    """How many tool calls the agent made: raw volume, banded by ``max_tool_calls``.

    Catches brute-force thrash that ``no_tool_loops`` misses because the calls are not
    identical. Non-gating: it flags, it does not fail a release.
    """

    def score(example: Example, output: Output) -> Score:
        calls = graded_calls(_trajectory(output), example)
        result = banded(float(len(calls)), "max_tool_calls", example, higher_is_better=False)
        by_tool = Counter(call.name for call in calls)
        top = [f"{clip(name, _NAME)} x{count}" for name, count in by_tool.most_common(5)]
        result.explanation = (
            f"{len(calls)} tool calls"
            + (f" ({', '.join(top)})" if top else "")
            + (f"; {result.explanation}")
        )
        return result

    return score


def self_corrections(calls: Sequence[ToolCall]) -> list[ToolCall]:
    """The successful calls that corrected an earlier failure of the same tool.

    A failed call of a tool opens a correction; the next successful call of that tool
    closes it (counted once, however many failures came before it).
    """
    failing: set[str] = set()
    corrected: list[ToolCall] = []
    for call in calls:
        if not call.succeeded:
            failing.add(call.name)
        elif call.name in failing:
            failing.discard(call.name)
            corrected.append(call)
    return corrected


@trajectory_scorer(
    name="self_correction", dimension="self_correction", moment="act", applies_to=TOOL_CLASSES
)
def self_correction() -> ScoreFunction:
    """How often a failed tool call was followed by a successful retry of the same tool.

    Banded by ``max_self_corrections``; abstains when the agent called no tool.
    Recovering is better than failing, but each recovery cost a round trip.
    """

    def score(example: Example, output: Output) -> Score:
        calls = graded_calls(_trajectory(output), example)
        if not calls:
            return Score(explanation="the agent called no tool")
        corrected = self_corrections(calls)
        result = banded(
            float(len(corrected)), "max_self_corrections", example, higher_is_better=False
        )
        result.explanation = f"{len(corrected)} self-corrections; {result.explanation}"
        result.evidence = [
            Evidence(quote=quote_call(call.name, call.arguments), note="succeeded after a failure")
            for call in corrected[:MAX_LISTED]
        ]
        return result

    return score
