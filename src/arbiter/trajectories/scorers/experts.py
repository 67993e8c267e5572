"""The ``expert_success`` scorer: how many of a coordinator's experts delivered.

A coordinator (the ``genie`` class) delegates to experts; each hand-off step holds the
expert's own trajectory. An expert *succeeded* when its run ended without an error
(its status is ``completed``, or ``unknown`` when the source did not say) and it
delivered a non-blank answer. The value is the share of the coordinator's own
hand-offs that succeeded (an expert's experts are its own business), banded by
``min_expert_success``.
"""

from __future__ import annotations

from arbiter.contract import Evidence, Example, Handoff, Output, Score, Trajectory
from arbiter.scoring.base import ScoreFunction
from arbiter.trajectories.scorers.common import banded, trajectory_scorer

__all__ = ["expert_succeeded", "expert_success"]

_MAX_EVIDENCE = 10


def expert_succeeded(run: Trajectory) -> tuple[bool, str]:
    """Whether an expert's run succeeded, and if not, why (one phrase)."""
    if run.error is not None or run.status not in ("completed", "unknown"):
        return False, f"ended {run.status}" + (" with an error" if run.error else "")
    if run.final_answer is None or not run.final_answer.strip():
        return False, "delivered no answer"
    return True, "delivered"


def _name(handoff: Handoff, index: int) -> str:
    agent = handoff.trajectory.agent.name
    return (agent or handoff.id or f"hand-off {index}")[:80]


@trajectory_scorer(
    name="expert_success",
    dimension="expert_success",
    moment="run",
    applies_to={"genie"},
)
def expert_success() -> ScoreFunction:
    """The share of a coordinator's experts that delivered, banded by ``min_expert_success``.

    Abstains on a run without hand-offs.
    """

    def score(example: Example, output: Output) -> Score:
        assert output.trajectory is not None
        handoffs = [s for s in output.trajectory.steps if isinstance(s, Handoff)]
        if not handoffs:
            return Score(explanation="the run handed off to no expert")
        failures: list[tuple[str, str]] = []
        for index, handoff in enumerate(handoffs):
            ok, why = expert_succeeded(handoff.trajectory)
            if not ok:
                failures.append((_name(handoff, index), why))
        delivered = len(handoffs) - len(failures)
        result = banded(
            delivered / len(handoffs), "min_expert_success", example, higher_is_better=True
        )
        result.explanation = (
            f"{delivered} of {len(handoffs)} expert(s) delivered: {result.explanation}"
        )
        result.evidence = [
            Evidence(quote=name, verified=True, note=f"the expert {why}")
            for name, why in failures[:_MAX_EVIDENCE]
        ]
        result.metadata.update({"experts": len(handoffs), "failed": len(failures)})
        return result

    return score
