"""The agent service: scoring imported runs (verdicts, pass^k, tallies), mining, diffing."""

from __future__ import annotations

import asyncio
import json
from math import comb
from pathlib import Path
from typing import Any

import pytest

from arbiter.contract import (
    AgentCase,
    ChatMessage,
    Example,
    LlmCall,
    Output,
    Score,
    ToolCall,
    Trajectory,
)
from arbiter.errors import InputError
from arbiter.scoring.base import BuiltScorer, ScoreFunction
from arbiter.scoring.registry import ScorerRegistry
from arbiter.service.agent_diff import diff_json, diff_runs
from arbiter.service.agent_mining import mine_runs
from arbiter.service.agents import AgentScoreReport, GateOn, score_agent_runs
from arbiter.trajectories.loader import ImportedRun, load_runs
from arbiter.trajectories.scorers.common import assertions, trajectory_scorer
from arbiter.trajectories.tau_bench import load_tau_bench, tau_bench_pass_hat_k


@trajectory_scorer(name="has_answer", dimension="answer", moment="deliver")
def has_answer() -> ScoreFunction:
    """The run delivered an answer."""

    def score(example: Example, output: Output) -> Score:
        assert output.trajectory is not None
        return Score(passed=bool(output.trajectory.final_answer))

    return score


@trajectory_scorer(name="calls_expected", dimension="tools", moment="act", gating=False)
def calls_expected() -> ScoreFunction:
    """Every expected tool was called; abstains without expected calls."""

    def score(example: Example, output: Output) -> Score:
        expected = assertions(example).get("expected_tool_calls")
        if not isinstance(expected, list):
            return Score()
        assert output.trajectory is not None
        called = {c.name for c in output.trajectory.tool_calls}
        wanted = {e["name"] for e in expected if isinstance(e, dict)}
        passed = wanted <= called
        return Score(passed=passed, band="healthy" if passed else "danger")

    return score


@trajectory_scorer(name="broken", dimension="bugs", moment="run")
def broken() -> ScoreFunction:
    """Always raises."""

    def score(example: Example, output: Output) -> Score:
        raise RuntimeError("bug")

    return score


def _registry() -> ScorerRegistry:
    registry = ScorerRegistry.default(plugins=False)
    for factory in (has_answer, calls_expected, broken):
        registry.register_scorer(factory)
    return registry


def _scorers(*names: str) -> list[BuiltScorer]:
    registry = _registry()
    return [registry.build(registry.spec_of(name)) for name in names]


def _trajectory(answer: str | None = "done", *tools: str, status: str = "completed") -> Trajectory:
    ask = LlmCall(input_messages=[ChatMessage(role="user", content="Refund order 1042")])
    steps: list[Any] = [ask, *(ToolCall(name=t, arguments={"order": 1}) for t in tools)]
    return Trajectory(steps=steps, final_answer=answer, status=status)


def _run(case: str, rep: int, trajectory: Trajectory, reward: bool | None = None) -> ImportedRun:
    scores = [] if reward is None else [Score(name="reward", value=float(reward), passed=reward)]
    return ImportedRun(trajectory, None, case, rep, scores=scores)


def _score(runs: list[ImportedRun], *names: str, gate_on: GateOn | None = None) -> AgentScoreReport:
    return asyncio.run(
        score_agent_runs(runs, _scorers(*names), gate_on=gate_on, registry=_registry())
    )


def _tau_file(path: Path, correct: list[int], trials: int = 4) -> Path:
    records = []
    for task, c in enumerate(correct):
        for trial in range(trials):
            traj = [
                {"role": "user", "content": f"task {task}"},
                {"role": "assistant", "content": "done"},
            ]
            records.append(
                {
                    "task_id": task,
                    "trial": trial,
                    "reward": float(trial < c),
                    "info": {},
                    "traj": traj,
                }
            )
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


# ------------------------------------------------------------------------------ pass^k


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_pass_hat_k_of_a_tau_bench_file_is_the_benchmarks_formula(tmp_path: Path, k: int) -> None:
    correct = [4, 3, 1, 0, 2]
    path = _tau_file(tmp_path / "results.json", correct)
    report = _score(load_runs([path]), "has_answer")
    by_hand = sum(comb(c, k) / comb(4, k) for c in correct) / len(correct)
    figure = report.to_json()["pass_hat_k"][str(k)]
    assert figure["estimate"] == pytest.approx(by_hand, abs=1e-12)
    assert figure["estimate"] == pytest.approx(tau_bench_pass_hat_k(load_tau_bench(path), k))
    assert figure["low"] <= figure["estimate"] <= figure["high"]
    assert figure["n"] == len(correct)
    assert report.n_trajectories == 20
    assert report.n_tasks == 5
    assert report.gate_on == "reward"


def test_reward_gates_by_default_and_scorers_are_reported_beside_it() -> None:
    runs = [_run("t", 0, _trajectory(None), reward=True), _run("t", 1, _trajectory(), reward=False)]
    report = _score(runs, "has_answer")
    assert [r.passed for r in report.runs] == [True, False]
    assert report.scorers["has_answer"].gating is False
    assert report.scorers["reward"].gating is True
    assert "pass_hat_k_scorers" not in report.to_json()


@pytest.mark.parametrize(
    ("gate_on", "verdicts"),
    [("scorers", [False, True]), ("both", [False, False]), ("reward", [True, False])],
)
def test_gate_on_chooses_what_decides_a_repetition(gate_on: GateOn, verdicts: list[bool]) -> None:
    runs = [_run("t", 0, _trajectory(None), reward=True), _run("t", 1, _trajectory(), reward=False)]
    report = _score(runs, "has_answer", gate_on=gate_on)
    assert [r.passed for r in report.runs] == verdicts
    assert report.pass_hat_k is not None
    assert report.pass_hat_k["1"].estimate == 0.5  # still the reward's
    if gate_on == "reward":
        assert report.pass_hat_k_scorers is None
    else:
        assert report.pass_hat_k_scorers is not None
        assert report.pass_hat_k_scorers["1"].estimate == sum(verdicts) / 2
        assert report.scorers["has_answer"].gating is True


def test_without_rewards_the_scorers_gate_and_reward_gating_is_refused() -> None:
    runs = [_run("a", 0, _trajectory()), _run("b", 0, _trajectory(None))]
    report = _score(runs, "has_answer")
    assert report.gate_on == "scorers"
    assert [r.passed for r in report.runs] == [True, False]
    assert report.pass_hat_k is None  # no task has repetitions
    with pytest.raises(InputError, match="no imported run carries a reward"):
        _score(runs, "has_answer", gate_on="reward")


def test_an_undecided_repetition_counts_neither_way() -> None:
    # calls_expected abstains without expected calls and does not gate: nothing decides.
    runs = [_run("a", 0, _trajectory()), _run("a", 1, _trajectory(None))]
    report = _score(runs, "has_answer", gate_on="scorers")
    assert report.pass_rate is not None
    assert report.pass_rate.n == 2
    undecided = _score([_run("a", 0, _trajectory())], "calls_expected")
    assert undecided.runs[0].passed is None
    assert undecided.pass_rate is None


def test_tallies_count_verdicts_bands_and_errors() -> None:
    good = _run("a", 0, _trajectory("ok", "refund"))
    good.assertions["expected_tool_calls"] = [{"name": "refund"}]
    bad = _run("b", 0, _trajectory("ok"))
    bad.assertions["expected_tool_calls"] = [{"name": "refund"}]
    silent = _run("c", 0, _trajectory("ok"))
    report = _score([good, bad, silent], "calls_expected", "broken")
    tally = report.to_json()["scorers"]["calls_expected"]
    assert (tally["pass"], tally["fail"], tally["abstain"], tally["error"]) == (1, 1, 1, 0)
    assert tally["bands"] == {"healthy": 1, "review": 0, "danger": 1}
    assert (tally["dimension"], tally["moment"], tally["gating"]) == ("tools", "act", False)
    assert report.scorers["broken"].errored == 3
    assert report.runs[1].failed == ["calls_expected"]
    assert report.runs[0].errors == ["broken"]


def test_a_case_files_assertions_replace_the_importers() -> None:
    run = _run("a", 0, _trajectory("ok", "lookup"))
    run.assertions["expected_tool_calls"] = [{"name": "refund"}]
    scorers = _scorers("calls_expected")
    case = AgentCase(
        id="a", input={"query": "q"}, assertions={"expected_tool_calls": [{"name": "lookup"}]}
    )
    report = asyncio.run(score_agent_runs([run], scorers, cases={"a": case}, registry=_registry()))
    assert report.scorers["calls_expected"].passed == 1
    report = asyncio.run(score_agent_runs([run], scorers, registry=_registry()))
    assert report.scorers["calls_expected"].failed == 1


# ------------------------------------------------------------------------------ mining


def test_mining_keeps_the_anomalous_runs_with_why() -> None:
    runs = [
        _run("ok", 0, _trajectory("done", "get"), reward=True),
        _run("t", 0, _trajectory("done", "get"), reward=False),
        _run("t", 1, _trajectory(None, status="error"), reward=False),
    ]
    mined = asyncio.run(mine_runs(runs, _scorers("has_answer")))
    assert mined.examined == 3
    assert [c["id"] for c in mined.cases] == ["t-r0", "t-r1"]
    assert [c["metadata"]["mined"]["reasons"] for c in mined.cases] == [
        ["failed"],
        ["errored", "failed"],
    ]
    assert mined.cases[0]["input"] == {"query": "Refund order 1042"}
    assert mined.cases[0]["metadata"]["mined"]["failed"] == ["reward"]
    assert [json.loads(line)["id"] for line in mined.jsonl().splitlines()] == ["t-r0", "t-r1"]


def test_an_anomalous_run_without_a_user_message_is_left_out_and_named() -> None:
    run = _run("q", 0, Trajectory(status="error"))
    mined = asyncio.run(mine_runs([run], _scorers("has_answer")))
    assert mined.cases == []
    assert mined.without_query == ["q"]


# -------------------------------------------------------------------------------- diff


def test_diff_pairs_runs_by_case_and_repetition_and_lists_flips() -> None:
    a = [_run("same", 0, _trajectory("x", "get")), _run("c", 0, _trajectory("x", "get", "put"))]
    b = [_run("c", 0, _trajectory(None, "get")), _run("same", 0, _trajectory("x", "get"))]
    b.append(_run("new", 0, _trajectory()))
    result = asyncio.run(diff_runs(a, b, _scorers("has_answer")))
    assert [(case.case_id, case.identical) for case in result.cases] == [
        ("same", True),
        ("c", False),
        ("new", False),
    ]
    changed = result.cases[1]
    assert [row.kind for row in changed.calls.rows] == ["same", "removed"]
    assert [(f.name, f.direction) for f in changed.flips] == [("has_answer", "broken")]
    assert changed.answer_changed
    assert (result.cases[2].in_a, result.cases[2].in_b) == (False, True)
    document = diff_json(result)
    assert (document["n_cases"], document["n_changed"]) == (3, 2)
    assert document["cases"][1]["flips"][0]["direction"] == "broken"
    assert document["cases"][1]["calls"][1]["a"]["name"] == "put"


def test_turn_failed_counts_runs_a_rule_convicted_never_review() -> None:
    @trajectory_scorer(name="banded", dimension="cost", moment="run", gating=False)
    def banded() -> ScoreFunction:
        """Danger for an answerless run, review otherwise."""

        def score(example: Example, output: Output) -> Score:
            assert output.trajectory is not None
            danger = output.trajectory.final_answer is None
            return Score(passed=not danger, band="danger" if danger else "review")

        return score

    registry = _registry()
    registry.register_scorer(banded)
    scorers = [registry.build(registry.spec_of("banded"))]
    runs = [_run("a", 0, _trajectory(None), reward=True), _run("b", 0, _trajectory(), reward=True)]
    report = asyncio.run(score_agent_runs(runs, scorers, registry=registry))
    assert [r.turn_failed for r in report.runs] == [True, False]
    assert report.turn_failed == 1
    assert [r.passed for r in report.runs] == [True, True]  # the reward gates, not the rule


def test_agent_scores_are_exported_as_evaluation_events_linked_to_the_imported_span() -> None:
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import (
        InMemoryLogRecordExporter,
        SimpleLogRecordProcessor,
    )
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from arbiter.service.agents import trajectory_scorers
    from arbiter.telemetry import Telemetry

    trace_file = (
        Path(__file__).parents[1] / "trajectories" / "data" / "otlp_openai_v2_content.jsonl"
    )
    runs = load_runs([trace_file])
    [run] = runs
    assert run.trajectory is not None
    assert run.trajectory.source is not None
    spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    telemetry = Telemetry(tracer_provider=tracer_provider, logger_provider=logger_provider)
    scorers = trajectory_scorers(["completed", "tool_calls"], runs=runs)
    try:
        asyncio.run(score_agent_runs(runs, scorers, telemetry=telemetry))
    finally:
        telemetry.shutdown()
    records = [r.log_record for r in logs.get_finished_logs()]
    assert [r.attributes["gen_ai.evaluation.name"] for r in records] == ["completed", "tool_calls"]
    source = run.trajectory.source
    assert {format(r.trace_id, "032x") for r in records} == {source.trace_id}
    assert {format(r.span_id, "016x") for r in records} == {source.span_ids[0]}
    [evaluation] = spans.get_finished_spans()
    assert evaluation.attributes["arbiter.case.id"] == run.case_id
    assert format(evaluation.links[0].context.trace_id, "032x") == source.trace_id


def test_agent_scoring_without_telemetry_emits_nothing_and_scores_the_same() -> None:
    runs = load_runs(
        [Path(__file__).parents[1] / "trajectories" / "data" / "uderia_turn.jsonl"],
        mapping="uderia_turn",
    )
    from arbiter.service.agents import trajectory_scorers
    from arbiter.telemetry import Telemetry

    scorers = trajectory_scorers(["completed"], runs=runs)
    plain = asyncio.run(score_agent_runs(runs, scorers))
    off = asyncio.run(score_agent_runs(runs, scorers, telemetry=Telemetry.disabled()))
    assert plain.to_json() == off.to_json()
