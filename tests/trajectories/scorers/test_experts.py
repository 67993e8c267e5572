"""expert_success: the share of a coordinator's experts that delivered."""

from __future__ import annotations

from typing import Any

import pytest

from arbiter.contract import Handoff, ToolCall, Trajectory
from arbiter.trajectories.scorers.experts import expert_success
from tests.trajectories.scorers.case_runs import score_run


def expert(name: str, **fields: Any) -> Handoff:
    return Handoff(trajectory=Trajectory(agent={"name": name}, **fields))


def coordinator(*steps: Any) -> Trajectory:
    return Trajectory(agent={"agent_class": "genie"}, steps=list(steps), final_answer="done")


TEAM = coordinator(
    expert("sales", status="completed", final_answer="Revenue 5M."),
    expert("ops", status="unknown", final_answer="Two outages."),  # the source did not say
    expert("hr", status="error", error="timeout", final_answer="partial"),
    expert("legal", status="completed", final_answer="  "),
    ToolCall(name="merge"),
)


def test_expert_success_is_the_share_of_experts_that_delivered() -> None:
    score = score_run(expert_success, TEAM, {"min_expert_success": 0.75})
    assert score.value == 0.5
    assert (score.band, score.passed) == ("danger", False)
    assert [(e.quote, e.note) for e in score.evidence] == [
        ("hr", "the expert ended error with an error"),
        ("legal", "the expert delivered no answer"),
    ]
    assert score.metadata == {"threshold_key": "min_expert_success", "experts": 4, "failed": 2}


def test_expert_success_counts_only_the_coordinators_own_hand_offs() -> None:
    nested = expert(
        "lead", status="completed", final_answer="ok", steps=[expert("sub", status="error")]
    )
    score = score_run(expert_success, coordinator(nested), {"min_expert_success": 1.0})
    assert (score.value, score.passed) == (1.0, True)


def test_expert_success_abstains_without_hand_offs_and_outside_coordinators() -> None:
    assert score_run(expert_success, coordinator(ToolCall(name="x"))).passed is None
    solo = Trajectory(agent={"agent_class": "tool_enabled"}, steps=TEAM.steps)
    score = score_run(expert_success, solo)
    assert score.metadata == {"applicable": False}


@pytest.mark.parametrize(("line", "passed"), [(0.5, True), (0.6, False)])
def test_expert_success_takes_the_case_line(line: float, passed: bool) -> None:
    assert score_run(expert_success, TEAM, {"min_expert_success": line}).passed is passed
