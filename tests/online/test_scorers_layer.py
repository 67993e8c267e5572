"""The scorers layer: every applicable deterministic scorer on every item's run, bounded."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from arbiter.contract import (
    Example,
    FlowRun,
    OnlineResult,
    Output,
    Prediction,
    Score,
    Trajectory,
)
from arbiter.contract.trajectory import MAX_STEPS, MAX_TEXT_CHARS
from arbiter.errors import InvalidParameter
from arbiter.online.pipeline import OnlinePipeline
from arbiter.online.rules import HeuristicRules
from arbiter.online.run_bounds import UnusableRun, bounded_run
from arbiter.online.scorers_layer import ScorersFinding, ScorersLayer
from arbiter.scoring.base import BuiltScorer, scorer

Check = Callable[[Example, Output], Any]


def make_scorer(name: str, check: Check, *, kind: str = "deterministic") -> BuiltScorer:
    @scorer(name=name, kind=kind)  # type: ignore[arg-type]
    def factory() -> Check:
        return check

    return factory()


def _completed(example: Example, output: Output) -> Score:
    assert output.trajectory is not None
    done = output.trajectory.status == "completed"
    return Score(value=float(done), passed=done)


def _step_count(example: Example, output: Output) -> Score:
    assert output.trajectory is not None
    return Score(value=float(len(list(output.trajectory.walk()))))


def _flow_nodes(example: Example, output: Output) -> Score:
    assert output.flow is not None
    return Score(value=float(len(output.flow.nodes)), passed=True)


def _boom(example: Example, output: Output) -> Score:
    raise RuntimeError("scorer bug")


COMPLETED = make_scorer("completed", _completed)
STEPS = make_scorer("steps", _step_count)
BOOM = make_scorer("boom", _boom)
FLOW_NODES = make_scorer("flow_nodes", _flow_nodes)


def _tool(name: str) -> dict[str, Any]:
    return {"kind": "tool_call", "name": name, "arguments": {"q": 1}}


TRAJECTORY: dict[str, Any] = {
    "id": "run-1",
    "agent": {"name": "planner", "agent_class": "tool_enabled"},
    "steps": [_tool("search"), _tool("fetch")],
    "final_answer": "42",
    "status": "completed",
}


def _pipeline(layer: ScorersLayer) -> OnlinePipeline:
    return OnlinePipeline(rules=HeuristicRules(rules=[]), grounding=None, layers=[layer])


def _evaluate(layer: ScorersLayer, item: Any, **options: Any) -> OnlineResult:
    return asyncio.run(_pipeline(layer).evaluate(item, **options))


def _payload(result: OnlineResult) -> ScorersFinding:
    found = result.payload("scorers", ScorersFinding)
    assert found is not None, result.layers["scorers"]
    return found


def _item(trajectory: Any, **extra: Any) -> dict[str, Any]:
    return {"id": "turn-1", "label": "completed", "trajectory": trajectory, **extra}


def test_a_trajectory_item_gets_every_scorer_s_verdict() -> None:
    result = _evaluate(ScorersLayer([COMPLETED, STEPS]), _item(TRAJECTORY))

    found = _payload(result)
    assert result.layers["scorers"].status == "ran"
    assert [(s.name, s.value, s.passed) for s in found.scores] == [
        ("completed", 1.0, True),
        ("steps", 2.0, None),
    ]
    assert (found.run_id, found.agent_class, found.flagged) == ("run-1", "tool_enabled", False)
    assert result.errors == []


def test_a_prediction_carries_its_trajectory_in_metadata() -> None:
    trajectory = Trajectory.model_validate(TRAJECTORY)
    prediction = Prediction(id="p-1", label="completed", metadata={"trajectory": trajectory})

    found = _payload(_evaluate(ScorersLayer([STEPS]), prediction))

    assert [s.value for s in found.scores] == [2.0]


def test_a_flow_item_gets_the_scorers_that_apply_to_flows() -> None:
    layer = ScorersLayer(
        [COMPLETED, FLOW_NODES],
        applies={
            "completed": lambda agent_class: agent_class != "flow",
            "flow_nodes": lambda agent_class: agent_class == "flow",
        },
    )
    flow = {"id": "flow-1", "nodes": [{"id": "a"}, {"id": "b"}], "status": "completed"}

    found = _payload(_evaluate(layer, {"id": "f", "label": "completed", "flow": flow}))

    assert [(s.name, s.value) for s in found.scores] == [("flow_nodes", 2.0)]
    assert found.not_applicable == ["completed"]
    assert found.agent_class == "flow"


def test_a_scorer_that_says_it_does_not_apply_is_left_out() -> None:
    outside = make_scorer(
        "experts", lambda e, o: Score(explanation="n/a", metadata={"applicable": False})
    )

    found = _payload(_evaluate(ScorersLayer([outside, STEPS]), _item(TRAJECTORY)))

    assert [s.name for s in found.scores] == ["steps"]
    assert found.not_applicable == ["experts"]


def test_a_raising_scorer_is_an_errored_score_and_the_others_still_score() -> None:
    result = _evaluate(ScorersLayer([BOOM, COMPLETED]), _item(TRAJECTORY))

    found = _payload(result)
    boom, completed = found.scores
    assert (boom.name, boom.passed, boom.error) == ("boom", None, "RuntimeError: scorer bug")
    assert completed.passed is True
    assert result.errors == ["scorers: boom: RuntimeError: scorer bug"]


class _RawScorer:
    """A Scorer that is not a BuiltScorer: raises, or returns what is not a Score."""

    def __init__(self, name: str, outcome: Callable[[], Any]) -> None:
        self.spec = make_scorer(name, _completed).spec
        self._outcome = outcome

    async def __call__(self, example: Example, output: Output) -> Score:
        return self._outcome()  # type: ignore[no-any-return]


def _raise() -> Any:
    raise ValueError("bare scorer bug")


@pytest.mark.parametrize(
    ("outcome", "error"),
    [
        (_raise, "ValueError: bare scorer bug"),
        (lambda: 0.5, "TypeError: returned float, not a Score"),
    ],
)
def test_a_bare_scorer_failing_its_protocol_is_an_errored_score(
    outcome: Callable[[], Any], error: str
) -> None:
    found = _payload(_evaluate(ScorersLayer([_RawScorer("raw", outcome)]), _item(TRAJECTORY)))

    assert [(s.name, s.error) for s in found.scores] == [("raw", error)]


def test_a_failed_score_flags_and_escalates_the_item() -> None:
    failed = {**TRAJECTORY, "status": "error"}

    result = _evaluate(ScorersLayer([COMPLETED, STEPS]), _item(failed))

    assert _payload(result).flagged is True
    assert result.escalated is True
    assert result.escalation_reasons == ["scorers: failed completed"]


def test_many_failures_are_named_in_one_bounded_reason() -> None:
    failing = [
        make_scorer(f"check_{i}", lambda e, o: Score(value=0.0, passed=False)) for i in range(8)
    ]

    result = _evaluate(ScorersLayer(failing), _item(TRAJECTORY))

    assert result.escalation_reasons == [
        "scorers: failed check_0, check_1, check_2, check_3, check_4 and 3 more"
    ]


def test_an_item_without_a_run_abstains() -> None:
    result = _evaluate(ScorersLayer([COMPLETED]), {"id": "x", "label": "completed"})

    assert result.layers["scorers"].status == "abstained"
    assert result.layers["scorers"].reason == "no trajectory or flow run"


@pytest.mark.parametrize(
    ("trajectory", "reason"),
    [
        (42, "unusable trajectory: the trajectory is a int, not an object"),
        ({"status": "exploded"}, "unusable trajectory: field 'status'"),
        ({"steps": [{"kind": "teleport"}]}, "unusable trajectory: field 'steps[0]'"),
        ({**TRAJECTORY, "surprise": 1}, "unusable trajectory: field 'surprise'"),
    ],
)
def test_an_unusable_run_is_an_error_status_never_an_exception(
    trajectory: Any, reason: str
) -> None:
    result = _evaluate(ScorersLayer([COMPLETED]), _item(trajectory))

    report = result.layers["scorers"]
    assert report.status == "error"
    assert report.reason is not None
    assert report.reason.startswith(reason)


def test_an_oversized_trajectory_is_cut_to_the_contract_s_bound() -> None:
    huge = {**TRAJECTORY, "steps": [_tool("search")] * (MAX_STEPS + 7)}

    result = _evaluate(ScorersLayer([STEPS]), _item(huge))

    found = _payload(result)
    assert [s.value for s in found.scores] == [float(MAX_STEPS)]
    assert found.cut == [f"7 steps past the bound of {MAX_STEPS} dropped"]
    assert result.layers["scorers"].reason == found.cut[0]


def test_steps_are_bounded_over_the_whole_hand_off_tree() -> None:
    expert = {**TRAJECTORY, "steps": [_tool("lookup")] * 5}
    coordinator = {**TRAJECTORY, "steps": [{"kind": "handoff", "trajectory": expert}] * 3}

    found = _payload(_evaluate(ScorersLayer([STEPS], max_steps=10), _item(coordinator)))

    # Depth first: hand-off 1 and its 5, hand-off 2 and 3 of its steps; the third is cut.
    assert [s.value for s in found.scores] == [10.0]
    assert found.cut == ["3 steps past the bound of 10 dropped"]


def test_hand_offs_nested_too_deep_keep_no_steps() -> None:
    nested: dict[str, Any] = {**TRAJECTORY, "steps": [_tool("leaf")]}
    for _ in range(4):
        nested = {**TRAJECTORY, "steps": [{"kind": "handoff", "trajectory": nested}]}

    found = _payload(_evaluate(ScorersLayer([STEPS], max_depth=2), _item(nested)))

    assert [s.value for s in found.scores] == [3.0]  # three hand-offs, nothing below
    assert found.cut == ["1 hand-offs deeper than 2 kept without steps"]


def test_texts_over_the_contract_s_bound_are_cut() -> None:
    long_answer = {**TRAJECTORY, "final_answer": "a" * (MAX_TEXT_CHARS + 10)}
    long_answer["steps"] = [{"kind": "tool_call", "name": "n" * 5_000}]
    seen: list[int] = []

    def answer_length(example: Example, output: Output) -> Score:
        assert output.trajectory is not None
        (tool,) = output.trajectory.tool_calls
        seen.extend([len(output.trajectory.final_answer or ""), len(tool.name)])
        return Score(passed=True)

    found = _payload(
        _evaluate(ScorersLayer([make_scorer("length", answer_length)]), _item(long_answer))
    )

    assert seen == [MAX_TEXT_CHARS, 1_000]
    assert found.cut == ["2 texts or lists cut to the contract's bounds"]


def test_cutting_leaves_the_caller_s_document_as_it_was() -> None:
    doc = {**TRAJECTORY, "steps": [{"kind": "tool_call", "name": "n" * 5_000}] * 3}
    before = copy.deepcopy(doc)

    bounded_run(doc, max_steps=2)

    assert doc == before


def test_a_validated_trajectory_over_the_bound_is_cut_too() -> None:
    trajectory = Trajectory.model_validate({**TRAJECTORY, "steps": [_tool("a")] * 5})

    run, cut = bounded_run(trajectory, max_steps=3)

    assert isinstance(run, Trajectory)
    assert len(run.steps) == 3
    assert cut == ["2 steps past the bound of 3 dropped"]


def test_a_run_within_bounds_is_used_as_is() -> None:
    trajectory = Trajectory.model_validate(TRAJECTORY)

    run, cut = bounded_run(trajectory)

    assert run is trajectory
    assert cut == []


def test_a_flow_run_s_nodes_are_bounded() -> None:
    run, cut = bounded_run({"nodes": [{"id": "n"}] * 6}, flow=True, max_steps=4)

    assert isinstance(run, FlowRun)
    assert len(run.nodes) == 4
    assert cut == ["2 steps past the bound of 4 dropped"]


def test_an_unknown_agent_class_is_unusable_unless_configured() -> None:
    doc = {**TRAJECTORY, "agent": {"agent_class": "planner"}}

    with pytest.raises(UnusableRun, match="unknown agent class"):
        bounded_run(doc)
    run, _ = bounded_run(doc, agent_classes={"planner"})
    assert isinstance(run, Trajectory)
    assert run.agent.agent_class == "planner"


class _Clock:
    """Advances one second per reading."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def test_scorers_past_the_time_budget_are_cut_off_abstentions() -> None:
    layer = ScorersLayer([COMPLETED, STEPS, BOOM], time_budget_s=2.5, clock=_Clock())

    result = _evaluate(layer, _item(TRAJECTORY))

    found = _payload(result)
    assert result.layers["scorers"].reason == "1 scorers cut off at the 2.5s budget"
    assert [(s.name, s.passed, s.metadata.get("cut_off")) for s in found.scores] == [
        ("completed", True, None),
        ("steps", None, None),
        ("boom", None, True),
    ]
    assert found.scores[2].explanation == "cut off: the item's 2.5s scoring budget ran out"


def test_a_scorer_that_waits_forever_is_cut_off() -> None:
    class Hanging:
        spec = make_scorer("hanging", _completed).spec

        async def __call__(self, example: Example, output: Output) -> Score:
            await asyncio.Event().wait()
            raise AssertionError("unreachable")

    layer = ScorersLayer([COMPLETED, Hanging()], time_budget_s=0.01)

    found = _payload(_evaluate(layer, _item(TRAJECTORY)))

    assert [(s.name, s.metadata.get("cut_off")) for s in found.scores] == [
        ("completed", None),
        ("hanging", True),
    ]


def _expected_and_input(sink: list[tuple[Any, Any]]) -> BuiltScorer:
    def record(example: Example, output: Output) -> Score:
        sink.append((example.expected, example.input))
        return Score(passed=True)

    return make_scorer("record", record)


def test_the_item_s_assertions_override_the_layer_s_key_by_key() -> None:
    seen: list[tuple[Any, Any]] = []
    layer = ScorersLayer(
        [_expected_and_input(seen)], assertions={"max_cost_usd": 1.0, "max_steps": 20}
    )
    metadata = {"assertions": {"max_steps": 5}, "input": {"query": "weather?"}}

    _evaluate(layer, _item(TRAJECTORY, metadata=metadata))

    assert seen == [({"max_cost_usd": 1.0, "max_steps": 5}, {"query": "weather?"})]


def test_the_caller_s_input_is_the_case_s_query() -> None:
    seen: list[tuple[Any, Any]] = []

    _evaluate(ScorersLayer([_expected_and_input(seen)]), _item(TRAJECTORY), input={"query": "hi"})

    assert seen == [(None, {"query": "hi"})]


def test_the_hook_receives_the_run_and_its_applicable_scores() -> None:
    received: list[tuple[str | None, list[str]]] = []

    def hook(run: Trajectory | FlowRun, scores: Sequence[Score]) -> None:
        received.append((run.id, [s.name for s in scores]))

    _evaluate(ScorersLayer([COMPLETED, STEPS], on_scores=hook), _item(TRAJECTORY))

    assert received == [("run-1", ["completed", "steps"])]


def test_a_raising_hook_is_recorded_and_the_scores_kept() -> None:
    def hook(run: Trajectory | FlowRun, scores: Sequence[Score]) -> None:
        raise OSError("collector down")

    result = _evaluate(ScorersLayer([COMPLETED], on_scores=hook), _item(TRAJECTORY))

    assert [s.name for s in _payload(result).scores] == ["completed"]
    assert result.errors == ["scorers on_scores: OSError: collector down"]


@pytest.mark.parametrize(
    ("scorers", "options", "message"),
    [
        ([make_scorer("judge", _completed, kind="model")], {}, "deterministic scorers"),
        ([COMPLETED, COMPLETED], {}, "unique names"),
        ([COMPLETED], {"max_steps": 0}, "'max_steps'"),
        ([COMPLETED], {"time_budget_s": 0.0}, "'time_budget_s'"),
    ],
)
def test_the_layer_refuses_what_it_cannot_honour(
    scorers: list[BuiltScorer], options: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidParameter, match=message):
        ScorersLayer(scorers, **options)


def test_the_result_round_trips_through_json() -> None:
    result = _evaluate(ScorersLayer([COMPLETED, BOOM]), _item(TRAJECTORY))

    again = OnlineResult.model_validate_json(result.model_dump_json())

    found = again.payload("scorers", ScorersFinding)
    assert found is not None
    assert [s.name for s in found.scores] == ["completed", "boom"]
