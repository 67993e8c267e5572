"""τ²-bench results import as trials with a reward score, and pass^k is the benchmark's."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from arbiter.contract import LlmCall, ToolCall
from arbiter.errors import InputError
from arbiter.trajectories.tau2_bench import (
    load_tau2_bench,
    parse_tau2_bench,
    tau2_bench_pass_hat_k,
)

GOLD = [
    {
        "action_id": "0_0",
        "requestor": "assistant",
        "name": "get_user_details",
        "arguments": {"user_id": "mia_li_3668"},
        "compare_args": ["user_id"],
    },
    {
        "action_id": "0_1",
        "requestor": "assistant",
        "name": "cancel_reservation",
        "arguments": {"reservation_id": "EHGLP3"},
    },
    {"action_id": "0_2", "requestor": "user", "name": "toggle_airplane_mode", "arguments": {}},
]


def _task(task_id: str) -> dict[str, Any]:
    return {
        "id": task_id,
        "description": {"purpose": "Cancel a reservation."},
        "user_scenario": {
            "persona": None,
            "instructions": {
                "domain": "airline",
                "reason_for_call": "You want to cancel EHGLP3.",
                "task_instructions": "Cancel reservation EHGLP3.",
            },
        },
        "evaluation_criteria": {"actions": copy.deepcopy(GOLD), "reward_basis": ["DB"]},
    }


def _messages(answer: str) -> list[dict[str, Any]]:
    return [
        {"role": "assistant", "content": "Hi! How can I help you today?", "turn_idx": 0},
        {
            "role": "user",
            "content": "Please cancel EHGLP3, I am mia_li_3668.",
            "timestamp": "2025-06-01T10:00:01",
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "name": "get_user_details",
                    "arguments": {"user_id": "mia_li_3668"},
                    "requestor": "assistant",
                }
            ],
            "cost": 0.0021,
            "usage": {"prompt_tokens": 1200, "completion_tokens": 30},
            "timestamp": "2025-06-01T10:00:03",
        },
        {
            "id": "call_1",
            "role": "tool",
            "content": '{"user_id": "mia_li_3668", "reservations": ["EHGLP3"]}',
            "requestor": "assistant",
            "error": False,
            "timestamp": "2025-06-01T10:00:03.500000",
        },
        {
            "role": "assistant",
            "content": answer,
            "cost": 0.0019,
            "usage": {"prompt_tokens": 1300, "completion_tokens": 12},
            "timestamp": "2025-06-01T10:00:05",
        },
        {"role": "user", "content": "###STOP###", "timestamp": "2025-06-01T10:00:06"},
    ]


def _simulation(task_id: str, trial: int, reward: float | None, **extra: Any) -> dict[str, Any]:
    simulation: dict[str, Any] = {
        "id": f"sim-{task_id}-{trial}",
        "task_id": task_id,
        "trial": trial,
        "start_time": "2025-06-01T10:00:00",
        "end_time": "2025-06-01T10:00:06",
        "duration": 6.0,
        "termination_reason": "user_stop",
        "agent_cost": 0.004,
        "user_cost": 0.001,
        "reward_info": None
        if reward is None
        else {
            "reward": reward,
            "db_check": {"db_match": reward == 1.0, "db_reward": reward},
            "action_checks": [
                {"action": GOLD[0], "action_match": True, "action_reward": 1.0},
                {"action": GOLD[1], "action_match": reward == 1.0, "action_reward": reward},
            ],
            "reward_basis": ["DB"],
        },
        "messages": _messages(f"Reservation EHGLP3 is cancelled ({task_id}/{trial})."),
        "seed": 300 + trial,
    }
    simulation.update(extra)
    return simulation


# Rewards per task over 4 trials: successes c = 4, 1, 0, 3, 2.
REWARDS = {
    "0": [1.0, 1.0, 1.0, 1.0 - 1e-7],
    "1": [0.0, 1.0, 0.0, 0.0],
    "2": [0.0, 0.0, 0.5, 0.0],
    "3": [1.0, 0.0, 1.0, 1.0],
    "4": [1.0, 0.0, 1.0, 0.0],
}
# Mean over the 5 tasks of C(c, 4 choose k) / C(4, k), by hand.
EXPECTED_PASS_HAT_K = {
    1: (4 / 4 + 1 / 4 + 0 + 3 / 4 + 2 / 4) / 5,
    2: (6 / 6 + 0 + 0 + 3 / 6 + 1 / 6) / 5,
    3: (4 / 4 + 0 + 0 + 1 / 4 + 0) / 5,
    4: (1 + 0 + 0 + 0 + 0) / 5,
}


def _results(simulations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    if simulations is None:
        simulations = [
            _simulation(task, trial, REWARDS[task][trial]) for trial in range(4) for task in REWARDS
        ]
    return {
        "timestamp": "2025-06-01T09:59:00",
        "info": {
            "git_commit": "abc123",
            "num_trials": 4,
            "max_steps": 200,
            "max_errors": 10,
            "user_info": {"implementation": "user_simulator", "llm": "gpt-4.1"},
            "agent_info": {"implementation": "llm_agent", "llm": "gpt-4.1-mini"},
            "environment_info": {"domain_name": "airline", "policy": "..."},
            "seed": 300,
        },
        "tasks": [_task(task) for task in REWARDS],
        "simulations": simulations,
    }


def _parse(results: dict[str, Any]) -> Any:
    return parse_tau2_bench(json.dumps(results), source="results.json")


@pytest.mark.parametrize(("k", "expected"), sorted(EXPECTED_PASS_HAT_K.items()))
def test_pass_hat_k_of_imported_simulations_is_the_benchmarks_formula(
    k: int, expected: float
) -> None:
    trials = _parse(_results())
    assert tau2_bench_pass_hat_k(trials, k) == pytest.approx(expected, abs=1e-12)


def test_hand_computed_figures_are_the_ones_pinned() -> None:
    assert pytest.approx({1: 0.5, 2: 1 / 3, 3: 0.25, 4: 0.2}) == EXPECTED_PASS_HAT_K


def test_a_simulation_is_a_trial_with_its_trajectory() -> None:
    trial = _parse(_results())[0]
    trajectory = trial.trajectory
    assert (trial.task_id, trial.trial, trajectory.id) == ("0", 0, "sim-0-0")
    assert [type(step) for step in trajectory.steps] == [LlmCall, LlmCall, ToolCall, LlmCall]
    [call] = trajectory.tool_calls
    assert (call.name, call.call_id, call.arguments) == (
        "get_user_details",
        "call_1",
        {"user_id": "mia_li_3668"},
    )
    assert call.result == '{"user_id": "mia_li_3668", "reservations": ["EHGLP3"]}'
    assert call.succeeded
    assert call.duration == pytest.approx(500.0)
    assert trajectory.final_answer == "Reservation EHGLP3 is cancelled (0/0)."
    assert (trajectory.status, trajectory.agent.name) == ("completed", "llm_agent")
    assert trajectory.source is not None
    assert (trajectory.source.format, trajectory.source.file) == ("tau2_bench", "results.json")


def test_llm_calls_carry_model_tokens_and_cost() -> None:
    trajectory = _parse(_results())[0].trajectory
    second = trajectory.llm_calls[1]
    assert (second.model, second.input_tokens, second.output_tokens, second.cost_usd) == (
        "gpt-4.1-mini",
        1200,
        30,
        0.0021,
    )
    assert [m.role for m in second.input_messages] == ["user"]
    totals = trajectory.totals()
    assert (totals.input_tokens, totals.output_tokens) == (2500, 42)
    assert totals.cost_usd == pytest.approx(0.004)
    assert totals.duration_ms == pytest.approx(6000.0)


def test_metadata_keeps_the_task_and_the_run() -> None:
    metadata = _parse(_results())[0].trajectory.metadata
    assert metadata["instruction"] == "Cancel reservation EHGLP3."
    assert (metadata["domain"], metadata["termination_reason"], metadata["seed"]) == (
        "airline",
        "user_stop",
        300,
    )


def test_the_reward_is_a_reward_score_with_what_the_benchmark_checked() -> None:
    trials = _parse(_results())
    partial = next(t for t in trials if t.task_id == "2" and t.trial == 2)
    assert (partial.reward.name, partial.reward.value, partial.reward.passed) == (
        "reward",
        0.5,
        False,
    )
    assert partial.reward.metadata == {
        "db_match": False,
        "actions_matched": 1,
        "actions_checked": 2,
        "reward_basis": ["DB"],
    }
    near_one = next(t for t in trials if t.task_id == "0" and t.trial == 3)
    assert near_one.reward.passed is True


def test_the_agents_gold_actions_become_expected_actions() -> None:
    trial = _parse(_results())[0]
    assert trial.expected_actions == [
        {"name": "get_user_details", "arguments": {"user_id": "mia_li_3668"}},
        {"name": "cancel_reservation", "arguments": {"reservation_id": "EHGLP3"}},
    ]


def test_a_task_without_gold_actions_expects_none() -> None:
    results = _results([_simulation("0", 0, 1.0)])
    results["tasks"][0]["evaluation_criteria"] = {"env_assertions": [], "actions": None}
    assert _parse(results)[0].expected_actions == []


@pytest.mark.parametrize("termination", ["infrastructure_error", "context_window_exceeded"])
def test_a_non_evaluable_simulation_abstains_and_leaves_pass_hat_k(termination: str) -> None:
    simulations = [
        _simulation("0", 0, 1.0),
        _simulation("0", 1, 0.0, termination_reason=termination),
        _simulation("0", 2, 0.0),
    ]
    trials = _parse(_results(simulations))
    left_out = trials[1]
    assert left_out.reward.passed is None
    assert termination in left_out.reward.explanation
    assert (left_out.trajectory.status, left_out.trajectory.error) == (
        "error",
        f"the simulation ended with {termination}",
    )
    assert tau2_bench_pass_hat_k(trials, 1) == 0.5
    assert tau2_bench_pass_hat_k(trials, 2) == 0.0


def test_a_simulation_without_reward_abstains() -> None:
    [trial] = _parse(_results([_simulation("0", 0, None)]))
    assert (trial.reward.passed, trial.reward.value) == (None, None)
    assert trial.reward.explanation == "no reward recorded"


@pytest.mark.parametrize(
    ("termination", "status"),
    [
        ("user_stop", "completed"),
        ("agent_stop", "completed"),
        ("max_steps", "incomplete"),
        ("too_many_errors", "error"),
        ("timeout", "error"),
        (None, "unknown"),
    ],
)
def test_the_termination_reason_sets_the_status(termination: str | None, status: str) -> None:
    simulation = _simulation("0", 0, 1.0, termination_reason=termination)
    [trial] = _parse(_results([simulation]))
    assert trial.trajectory.status == status


def test_a_failed_tool_call_keeps_its_error() -> None:
    simulation = _simulation("0", 0, 0.0)
    simulation["messages"][3].update(error=True, content="Error: user not found")
    [trial] = _parse(_results([simulation]))
    [call] = trial.trajectory.tool_calls
    assert (call.succeeded, call.error, call.result) == (
        False,
        "Error: user not found",
        "Error: user not found",
    )


def test_results_of_several_tools_at_once_answer_their_calls() -> None:
    simulation = _simulation("0", 0, 1.0)
    calls = [
        {"id": "a", "name": "get_flight", "arguments": {"n": "HAT001"}},
        {"id": "b", "name": "get_flight", "arguments": {"n": "HAT002"}},
    ]
    results = {
        "role": "tool",
        "tool_messages": [
            {"id": "b", "role": "tool", "content": "two"},
            {"id": "a", "role": "tool", "content": "one"},
        ],
    }
    simulation["messages"] = [{"role": "assistant", "tool_calls": calls}, results]
    [trial] = _parse(_results([simulation]))
    assert [(c.call_id, c.result) for c in trial.trajectory.tool_calls] == [
        ("a", "one"),
        ("b", "two"),
    ]


def test_the_simulated_users_tool_calls_are_not_agent_steps() -> None:
    simulation = _simulation("0", 0, 1.0)
    user_call = {"id": "u1", "name": "toggle_airplane_mode", "arguments": {}, "requestor": "user"}
    simulation["messages"][1]["tool_calls"] = [user_call]
    simulation["messages"].insert(
        2, {"id": "u1", "role": "tool", "content": "Airplane mode off", "requestor": "user"}
    )
    [trial] = _parse(_results([simulation]))
    assert [c.name for c in trial.trajectory.tool_calls] == ["get_user_details"]
    assert [m.role for m in trial.trajectory.llm_calls[1].input_messages] == ["user", "tool"]


def test_trials_without_numbers_are_numbered_in_order() -> None:
    simulations = [_simulation("0", 0, 1.0), _simulation("0", 1, 0.0)]
    for simulation in simulations:
        simulation["trial"] = None
    assert [t.trial for t in _parse(_results(simulations))] == [0, 1]


def test_timestamps_that_do_not_parse_leave_times_unknown() -> None:
    simulation = _simulation("0", 0, 1.0, start_time="yesterday")
    for message in simulation["messages"]:
        message["timestamp"] = "not a time"
    [trial] = _parse(_results([simulation]))
    assert trial.trajectory.started_at is None
    assert all(step.started_at is None for step in trial.trajectory.steps)


def test_a_tool_result_before_its_call_keeps_only_its_end() -> None:
    simulation = _simulation("0", 0, 1.0)
    simulation["messages"][3]["timestamp"] = "2025-06-01T10:00:02"  # clock skew
    [trial] = _parse(_results([simulation]))
    [call] = trial.trajectory.tool_calls
    assert (call.started_at, call.ended_at is not None) == (None, True)


def test_hostile_text_is_kept_verbatim_as_data() -> None:
    hostile = "<script>alert(1)</script>\x1b[31m"
    simulation = _simulation("0", 0, 1.0)
    simulation["messages"][4]["content"] = hostile
    [trial] = _parse(_results([simulation]))
    assert trial.trajectory.final_answer == hostile


def test_the_directory_format_reads_the_simulations_beside_it(tmp_path: Path) -> None:
    results = _results([])
    results["simulation_index"] = [{"id": "sim-0-0", "task_id": "0", "trial": 0}]
    (tmp_path / "results.json").write_text(json.dumps(results))
    (tmp_path / "simulations").mkdir()
    for trial in (1, 0):
        simulation = _simulation("0", trial, 1.0 - trial)
        (tmp_path / "simulations" / f"sim-0-{trial}.json").write_text(json.dumps(simulation))
    trials = load_tau2_bench(tmp_path / "results.json")
    assert [(t.trial, t.reward.passed) for t in trials] == [(0, True), (1, False)]


def test_a_file_reads_from_disk(tmp_path: Path) -> None:
    file = tmp_path / "run.json"
    file.write_text(json.dumps(_results(), indent=2))
    trials = load_tau2_bench(file)
    assert len(trials) == 20
    assert trials[0].trajectory.source is not None
    assert trials[0].trajectory.source.file == str(file)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda r: r.update(simulations={}), r"r\.json: 'simulations' must be a list, got object"),
        (lambda r: r.pop("simulations"), r"r\.json: 'simulations' must be a list, got nothing"),
        (lambda r: r.update(tasks=[{}]), r"r\.json: tasks\[0\]: a task must be an object"),
        (
            lambda r: r["simulations"][0].pop("task_id"),
            r"r\.json: simulations\[0\]: 'task_id' must be a string or a number",
        ),
        (
            lambda r: r["simulations"][0].update(trial=-1),
            r"simulations\[0\]: 'trial' must be a non-negative integer",
        ),
        (
            lambda r: r["simulations"][0]["reward_info"].update(reward="1"),
            r"simulations\[0\]: reward_info\.reward must be a number",
        ),
        (
            lambda r: r["simulations"][0].update(reward_info=[]),
            r"simulations\[0\]: 'reward_info' must be an object, got array",
        ),
        (
            lambda r: r["simulations"][0].update(messages={}),
            r"simulations\[0\]: 'messages' must be a list, got object",
        ),
        (
            lambda r: r["simulations"][0]["messages"].append({"role": "tool", "id": 7}),
            r"simulations\[0\]: messages\[6\]\.id: must be a string, got number",
        ),
        (
            lambda r: r["simulations"][0]["messages"][2]["tool_calls"][0].pop("name"),
            r"messages\[2\]\.tool_calls\[0\]\.name: must be a string, got null",
        ),
        (
            lambda r: r["simulations"][0]["messages"][1].update(content=["x"]),
            r"messages\[1\]\.content: must be a string or null, got array",
        ),
        (
            lambda r: r["tasks"][0]["evaluation_criteria"]["actions"].append({"arguments": {}}),
            r"simulations\[0\]: task '0' evaluation_criteria\.actions\[3\]: an action must be",
        ),
    ],
)
def test_a_simulation_that_is_not_one_is_named(mutate: Any, message: str) -> None:
    results = _results([_simulation("0", 0, 1.0)])
    mutate(results)
    with pytest.raises(InputError, match=message):
        parse_tau2_bench(json.dumps(results), source="r.json")


def test_a_trial_given_twice_is_refused() -> None:
    simulations = [_simulation("0", 0, 1.0), _simulation("0", 0, 0.0, id="other")]
    with pytest.raises(InputError, match=r"simulations\[1\]: task '0' trial 0 is given twice"):
        _parse(_results(simulations))


def test_not_a_results_object_is_refused() -> None:
    with pytest.raises(InputError, match=r"r\.json: expected a τ²-bench results object, got array"):
        parse_tau2_bench("[]", source="r.json")
