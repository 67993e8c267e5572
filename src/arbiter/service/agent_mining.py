"""Mine golden agent cases from imported runs: what ``arbiter agent mine`` does.

Every run is scored (so a failed verdict is known), each anomalous one
(:func:`~arbiter.trajectories.mining.mining_reasons`) becomes an agent case with its
assertions pre-filled from what it did, and the cases are returned as JSONL text for
the caller to write.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from arbiter.scoring.base import BuiltScorer
from arbiter.service.agents import GateOn, ScoredRun, score_runs, summarize
from arbiter.trajectories.loader import ImportedRun
from arbiter.trajectories.mining import (
    DEFAULT_MARGIN,
    MIN_SELF_CORRECTIONS,
    case_from_trajectory,
    first_user_message,
    mining_reasons,
)

__all__ = ["MinedCases", "mine_runs"]

_SELF_CORRECTION = "self_correction"
"""The scorer whose value counts a run's self-corrections, when it ran."""


@dataclass
class MinedCases:
    """The cases mined from a set of runs, and what was looked at."""

    cases: list[dict[str, Any]] = field(default_factory=list)
    """Each an agent case (the JSON of one case-file line), in run order."""
    examined: int = 0
    """Runs looked at."""
    reasons: Counter[str] = field(default_factory=Counter)
    """Mined runs per reason (a run may have several)."""
    without_query: list[str] = field(default_factory=list)
    """Anomalous runs left out because no user message says what was asked."""

    def jsonl(self) -> str:
        """The cases as a case file: one JSON object a line."""
        return "".join(json.dumps(case, ensure_ascii=False) + "\n" for case in self.cases)


async def mine_runs(
    runs: Sequence[ImportedRun],
    scorers: Sequence[BuiltScorer],
    *,
    gate_on: GateOn | None = None,
    margin: float = DEFAULT_MARGIN,
    min_self_corrections: int = MIN_SELF_CORRECTIONS,
) -> MinedCases:
    """Agent cases from the anomalous runs among ``runs``.

    Args:
        runs: The imported runs.
        scorers: The scorers that decide a run's verdict (and count self-corrections).
        gate_on: What decides the verdict (as :func:`~arbiter.service.agents.summarize`).
        margin: Observed cost and latency times this make a case's ceilings.
        min_self_corrections: Self-corrections from which a run is anomalous.

    Raises:
        InputError: ``gate_on`` asks for a reward no run carries.
    """
    scored = await score_runs(runs, scorers)
    report = summarize(scored, scorers, gate_on=gate_on)
    mined = MinedCases(examined=len(scored))
    ids = Counter(s.run.case_id for s in scored)
    for run, verdict in zip(scored, report.runs, strict=True):
        trajectory = run.run.trajectory
        if trajectory is None:  # flow runs carry no query or tool calls to pre-fill
            continue
        reasons = mining_reasons(
            trajectory,
            passed=verdict.passed,
            self_corrections=_self_corrections(run),
            min_self_corrections=min_self_corrections,
        )
        if not reasons:
            continue
        case_id = run.run.case_id
        if ids[case_id] > 1:
            case_id = f"{case_id}-r{run.run.repetition}"
        query = first_user_message(trajectory)
        if query is None:
            mined.without_query.append(case_id)
            continue
        provenance: dict[str, Any] = {"case_id": run.run.case_id, "repetition": verdict.repetition}
        if verdict.source is not None:
            provenance["source"] = verdict.source
        if verdict.failed:
            provenance["failed"] = list(verdict.failed)
        mined.cases.append(
            case_from_trajectory(
                trajectory,
                case_id=case_id,
                reasons=reasons,
                margin=margin,
                query=query,
                provenance=provenance,
            )
        )
        mined.reasons.update(reasons)
    return mined


def _self_corrections(run: ScoredRun) -> int | None:
    for score in run.scores:
        if score.name == _SELF_CORRECTION and score.value is not None:
            return int(score.value)
    return None
