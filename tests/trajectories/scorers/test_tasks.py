"""Tasks of a run (trajectory or flow) with their classes and modes, and the speedup
measured only from provable overlap."""

from __future__ import annotations

from datetime import datetime

import pytest

from arbiter.contract import Chunk, FlowRun, Handoff, LlmCall, Retrieval, ToolCall, Trajectory
from arbiter.scoring.base import ScorerFactory
from arbiter.trajectories.scorers.tasks import (
    Task,
    classify_tasks,
    parallel_efficiency,
    tasks,
)
from tests.trajectories.scorers.runs import at, grade, llm, node, run, tool


def _classes(trajectory: Trajectory | FlowRun, *internal: str) -> list[str]:
    return [t.task_class for t in classify_tasks(trajectory, internal_tools=internal).tasks]


def test_a_planned_turn_is_planning_then_tools_then_reasoning() -> None:
    # The reference's example: a 2-phase plan (one data query, the final report) is
    # 3 tasks: the planner call, the data tool, the synthesis; logging is scaffolding.
    turn = run(llm(), tool("TDA_SystemLog"), tool("base_readQuery", {"sql": "select 1"}), llm())
    found = classify_tasks(turn, internal_tools={"TDA_SystemLog"})
    assert [t.task_class for t in found.tasks] == ["planning", "tool", "reasoning"]
    assert found.breakdown() == ["1 planning", "1 tool", "1 reasoning"]
    assert found.counts() == {"planning": 1, "tool": 1, "reasoning": 1}


@pytest.mark.parametrize(
    ("steps", "classes"),
    [
        ([llm()], ["reasoning"]),  # no tool work: nothing was planned
        (
            [llm(), tool("a"), llm(), tool("b"), llm()],
            ["planning", "tool", "reasoning", "tool", "reasoning"],
        ),
        ([tool("a"), llm()], ["tool", "reasoning"]),
        ([Retrieval(query="q", chunks=[Chunk(text="t")]), llm()], ["tool", "reasoning"]),
        ([llm(), Handoff(trajectory=run(llm(), tool("x"), llm()))], ["planning", "tool"]),
        ([], []),
    ],
)
def test_steps_are_classed_by_where_they_sit_around_the_tool_work(
    steps: list[LlmCall | ToolCall | Retrieval | Handoff], classes: list[str]
) -> None:
    assert _classes(run(*steps)) == classes


@pytest.mark.parametrize(
    ("node_type", "task_class"),
    [
        ("sql", "tool"),
        ("http_request", "tool"),
        (None, "tool"),
        ("llm", "reasoning"),
        ("AgentNode", "reasoning"),
        ("LLMNode", "reasoning"),
        ("HTTPRequest", "tool"),
        ("agents", "tool"),  # words are matched whole
        ("agent", "reasoning"),
        ("profile-agent", "reasoning"),
        ("router", "planning"),
        ("if_condition", "planning"),
        ("start", None),
        ("end", None),
        ("output", None),
    ],
)
def test_flow_nodes_are_classed_by_their_type(
    node_type: str | None, task_class: str | None
) -> None:
    flow = FlowRun(nodes=[node("n1", node_type, None, None)])
    assert _classes(flow) == ([] if task_class is None else [task_class])


def _spans(found: list[Task]) -> list[str]:
    return [t.mode for t in found]


@pytest.mark.parametrize(
    ("spans", "modes"),
    [
        ([(0, 1), (1, 2)], ["sequential", "sequential"]),  # touching is not overlapping
        ([(0, 2), (1, 3)], ["parallel", "parallel"]),
        ([(0, 2), (1, 3), (2.5, 4), (5, 6)], ["parallel", "parallel", "parallel", "sequential"]),
        ([(0, 10), (2, 3), (4, 5)], ["parallel", "parallel", "parallel"]),
        ([(0, 1), (None, None), (0.5, 2)], ["parallel", "sequential", "parallel"]),
        ([(0, 0), (0, 0)], ["sequential", "sequential"]),  # took no time: nothing to overlap
    ],
)
def test_a_task_is_parallel_only_when_its_span_provably_overlaps_another(
    spans: list[tuple[float | None, float | None]], modes: list[str]
) -> None:
    trajectory = run(*(tool(f"t{i}", start=s, end=e) for i, (s, e) in enumerate(spans)))
    assert _spans(list(classify_tasks(trajectory).tasks)) == modes


def _flow(*spans: tuple[str, str | None, float | None, float | None]) -> FlowRun:
    return FlowRun(nodes=[node(*span) for span in spans])


def test_two_overlapping_sql_nodes_and_an_llm_node_are_a_one_and_a_half_speedup() -> None:
    # 1 s + 1 s side by side, then 1 s: 3 s of work in 2 s of wall clock.
    flow = _flow(
        ("start", "start", 0, 0.0),
        ("orders", "sql", 0, 1),
        ("returns", "sql", 0, 1),
        ("summary", "llm", 1, 2),
        ("end", "end", 2, 2),
    )
    assert classify_tasks(flow).breakdown() == ["2 tool", "1 reasoning"]
    score = grade(parallel_efficiency, flow)
    assert score.value == 1.5
    assert (score.band, score.passed) == ("healthy", True)
    assert score.explanation.startswith("1.50x over 2 parallel of 3 tasks")


@pytest.mark.parametrize(
    ("spans", "speedup"),
    [
        ([(0, 10), (8, 10)], 1.2),  # 12 s of work in 10 s
        ([(0, 10), (9, 10)], 1.1),
        ([(0, 2), (1, 3), (2.5, 4), (5, 6)], 6.5 / 5),  # a wave of three, then a lone task
        ([(0, 4), (0, 4), (0, 4), (0, 4)], 4.0),
    ],
)
def test_the_speedup_is_summed_time_over_the_union_of_the_spans(
    spans: list[tuple[float, float]], speedup: float
) -> None:
    trajectory = run(*(tool(f"t{i}", start=s, end=e) for i, (s, e) in enumerate(spans)))
    assert classify_tasks(trajectory).speedup() == pytest.approx(speedup)
    assert grade(parallel_efficiency, trajectory).value == pytest.approx(speedup)


@pytest.mark.parametrize(
    ("trajectory", "why"),
    [
        (run(tool("a", start=0, end=1), tool("b", start=1, end=2)), "serial"),
        (run(tool("a"), tool("b")), "untimed"),
        (run(), "empty"),
    ],
)
def test_parallel_efficiency_abstains_without_overlap_never_reporting_one(
    trajectory: Trajectory, why: str
) -> None:
    score = grade(parallel_efficiency, trajectory)
    assert (score.passed, score.value, score.band) == (None, None, None), why
    assert score.explanation == "no two tasks provably overlapped in time"


@pytest.mark.parametrize(
    ("spans", "case", "band"),
    [
        ([(0, 10), (9, 10)], {}, "review"),  # 1.1: between danger 1.0 and healthy 1.2
        ([(0, 10), (8, 10)], {}, "healthy"),  # 1.2: on the healthy line
        ([(0, 10), (8, 10)], {"min_parallel_efficiency": 1.3}, "danger"),
        ([(0, 10), (9, 10)], {"min_parallel_efficiency": 1.1}, "healthy"),
    ],
)
def test_parallel_efficiency_is_banded_by_min_parallel_efficiency(
    spans: list[tuple[float, float]], case: dict[str, float], band: str
) -> None:
    trajectory = run(*(tool(f"t{i}", start=s, end=e) for i, (s, e) in enumerate(spans)))
    score = grade(parallel_efficiency, trajectory, case)
    assert (score.band, score.passed) == (band, band != "danger")


def test_a_run_with_times_with_and_without_a_zone_never_reaches_the_scorers() -> None:
    naive = ToolCall(
        name="a", started_at=datetime(2026, 1, 1), ended_at=datetime(2026, 1, 1, 0, 0, 2)
    )
    aware = ToolCall(name="b", started_at=at(1), ended_at=at(3))
    with pytest.raises(ValueError, match="all zoned or all zoneless"):
        run(naive, aware)


@pytest.mark.parametrize(
    ("count", "band"),
    [(1, "healthy"), (10, "healthy"), (11, "review"), (25, "review"), (26, "danger")],
)
def test_tasks_is_banded_by_max_tasks_with_its_breakdown_as_evidence(count: int, band: str) -> None:
    trajectory = (
        run(llm(), *(tool(f"t{i}") for i in range(count - 2)), llm()) if count > 1 else run(llm())
    )
    score = grade(tasks, trajectory)
    assert (score.value, score.band) == (float(count), band)
    assert score.metadata["breakdown"] == classify_tasks(trajectory).counts()
    assert [e.quote for e in score.evidence] == classify_tasks(trajectory).breakdown()


def test_tasks_reads_a_flow_run_and_abstains_on_a_run_with_no_steps() -> None:
    flow = _flow(("a", "sql", 0, 1), ("b", "sql", 0, 1), ("c", "llm", 1, 2))
    score = grade(tasks, flow)
    assert score.value == 3.0
    assert score.explanation.startswith("3 tasks (2 tool, 1 reasoning); ")
    assert score.metadata["parallel"] == 2
    assert grade(tasks, run()).explanation == "the run recorded no steps"
    assert grade(tasks, FlowRun()).explanation == "the run recorded no steps"


def test_a_case_threshold_and_internal_tools_change_the_count() -> None:
    trajectory = run(llm(), tool("log"), tool("fetch"), llm())
    assert grade(tasks, trajectory).value == 4.0
    score = grade(tasks, trajectory, {"internal_tools": ["log"], "max_tasks": 2})
    assert (score.value, score.band) == (3.0, "danger")


@pytest.mark.parametrize("factory", [tasks, parallel_efficiency])
def test_the_task_scorers_apply_to_flows_and_every_profile_class_without_gating(
    factory: ScorerFactory,
) -> None:
    assert all(factory.applies_to_class(c) for c in ("flow", "llm_only", "genie", None))
    assert factory.gating is False
