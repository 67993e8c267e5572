"""Diff two sets of agent runs case by case: what ``arbiter agent diff A B`` does.

Runs are paired by (case id, repetition). For each pair, the tool calls are aligned
(:func:`~arbiter.trajectories.diff.diff_calls`) and both sides are scored with the same
scorers, so the verdicts that flipped are listed beside the calls that differ.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from arbiter.contract import ToolCall, Trajectory
from arbiter.scoring.base import BuiltScorer
from arbiter.service.agents import ScoredRun, score_runs
from arbiter.trajectories.diff import CallDiff, VerdictFlip, diff_calls, flipped_verdicts
from arbiter.trajectories.loader import ImportedRun

__all__ = ["AgentDiff", "CaseDiff", "diff_json", "diff_runs"]


@dataclass
class CaseDiff:
    """One case (and repetition) seen in both sets, or in one only."""

    case_id: str
    """The case."""
    repetition: int
    """The repetition compared."""
    in_a: bool
    """Whether set A has it."""
    in_b: bool
    """Whether set B has it."""
    status_a: str | None = None
    """How A's run ended."""
    status_b: str | None = None
    """How B's run ended."""
    calls: CallDiff = field(default_factory=CallDiff)
    """The tool calls, aligned (empty when one side is missing)."""
    flips: list[VerdictFlip] = field(default_factory=list)
    """Scorers whose verdict or band differs."""
    answer_changed: bool = False
    """Whether the final answers differ."""

    @property
    def identical(self) -> bool:
        """Both sides present, same calls, same verdicts, same answer."""
        return (
            self.in_a
            and self.in_b
            and not self.calls.changes
            and not self.flips
            and not self.answer_changed
        )


@dataclass
class AgentDiff:
    """Every case of two sets of runs, compared."""

    cases: list[CaseDiff]
    """In A's order, then the cases only B has."""

    @property
    def changed(self) -> list[CaseDiff]:
        """The cases that differ (or that one side lacks)."""
        return [case for case in self.cases if not case.identical]


async def diff_runs(
    runs_a: Sequence[ImportedRun], runs_b: Sequence[ImportedRun], scorers: Sequence[BuiltScorer]
) -> AgentDiff:
    """Compare two sets of runs case by case, scoring both sides with ``scorers``."""
    scored_a = {_key(s): s for s in await score_runs(runs_a, scorers)}
    scored_b = {_key(s): s for s in await score_runs(runs_b, scorers)}
    cases = []
    for key in dict.fromkeys([*scored_a, *scored_b]):
        cases.append(_case(key, scored_a.get(key), scored_b.get(key)))
    return AgentDiff(cases)


def _key(scored: ScoredRun) -> tuple[str, int]:
    return scored.run.case_id, scored.run.repetition


def _case(key: tuple[str, int], a: ScoredRun | None, b: ScoredRun | None) -> CaseDiff:
    case = CaseDiff(key[0], key[1], in_a=a is not None, in_b=b is not None)
    trajectory_a = a.run.trajectory if a is not None else None
    trajectory_b = b.run.trajectory if b is not None else None
    case.status_a = _status(a)
    case.status_b = _status(b)
    if a is None or b is None:
        return case
    case.calls = diff_calls(_calls(trajectory_a), _calls(trajectory_b))
    case.flips = flipped_verdicts([*a.imported, *a.scores], [*b.imported, *b.scores])
    answer_a = trajectory_a.final_answer if trajectory_a is not None else None
    answer_b = trajectory_b.final_answer if trajectory_b is not None else None
    case.answer_changed = answer_a != answer_b
    return case


def _calls(trajectory: Trajectory | None) -> list[ToolCall]:
    return trajectory.tool_calls if trajectory is not None else []


def _status(scored: ScoredRun | None) -> str | None:
    if scored is None:
        return None
    if scored.run.trajectory is not None:
        return scored.run.trajectory.status
    return scored.run.flow.status if scored.run.flow is not None else None


def diff_json(diff: AgentDiff) -> dict[str, Any]:
    """The diff as a JSON document (``agent diff --json``): every case, every row."""
    return {
        "n_cases": len(diff.cases),
        "n_changed": len(diff.changed),
        "cases": [_case_json(case) for case in diff.cases],
    }


def _case_json(case: CaseDiff) -> dict[str, Any]:
    return {
        "case_id": case.case_id,
        "repetition": case.repetition,
        "in_a": case.in_a,
        "in_b": case.in_b,
        "identical": case.identical,
        "status": {"a": case.status_a, "b": case.status_b},
        "answer_changed": case.answer_changed,
        "calls": [asdict(row) for row in case.calls.rows],
        "positional_from": case.calls.positional_from,
        "flips": [{**asdict(flip), "direction": flip.direction} for flip in case.flips],
    }
