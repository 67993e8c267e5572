"""τ-bench result records import as trials with a reward score, and pass^k is the benchmark's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from arbiter.errors import InputError
from arbiter.trajectories import load_tau_bench, parse_tau_bench, tau_bench_pass_hat_k
from arbiter.trajectories.tau_bench import reward_passed

GOLD = [
    {"name": "find_user_id_by_zip", "kwargs": {"first_name": "Yusuf", "zip": "19122"}},
    {"name": "cancel_pending_order", "kwargs": {"order_id": "#W2378156", "reason": "no"}},
]


def _traj(answer: str) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "# Retail agent policy ..."},
        {"role": "user", "content": "Hi, I want to cancel an order."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {
                        "name": "find_user_id_by_zip",
                        "arguments": '{"first_name": "Yusuf", "zip": "19122"}',
                    },
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_a",
            "name": "find_user_id_by_zip",
            "content": "yusuf_rossi_9620",
        },
        {"role": "assistant", "content": answer},
        {"role": "user", "content": "###STOP###"},
    ]


def _record(task_id: int, trial: int, reward: float, **info: Any) -> dict[str, Any]:
    task = {
        "user_id": "yusuf_rossi_9620",
        "actions": list(GOLD),
        "instruction": "Cancel it.",
        "outputs": [],
    }
    return {
        "task_id": task_id,
        "trial": trial,
        "reward": reward,
        "info": {"task": task, "source": "user", **info},
        "traj": _traj(f"Done (task {task_id}, trial {trial})."),
    }


# Rewards per task over 4 trials: successes c = 4, 2, 0, 3. A partial reward is a failure;
# 1 within 1e-6 is a success, as the benchmark counts it.
REWARDS = {
    0: [1.0, 1.0, 1.0, 1.0000001],
    1: [1.0, 0.0, 1.0, 0.5],
    2: [0.0, 0.0, 0.0, 0.999],
    3: [1.0, 1.0, 0.0, 1.0],
}
# Mean over the 4 tasks of C(c, k) / C(4, k), by hand.
EXPECTED_PASS_HAT_K = {
    1: (4 / 4 + 2 / 4 + 0 + 3 / 4) / 4,
    2: (6 / 6 + 1 / 6 + 0 + 3 / 6) / 4,
    3: (4 / 4 + 0 + 0 + 1 / 4) / 4,
    4: (1 + 0 + 0 + 0) / 4,
}


def _results() -> str:
    # τ-bench writes trial by trial: every task of trial 0, then of trial 1, ...
    records = [_record(t, trial, REWARDS[t][trial]) for trial in range(4) for t in REWARDS]
    return json.dumps(records, indent=2)


@pytest.mark.parametrize(("k", "expected"), sorted(EXPECTED_PASS_HAT_K.items()))
def test_pass_hat_k_of_imported_trials_is_the_benchmarks_formula(k: int, expected: float) -> None:
    trials = parse_tau_bench(_results(), source="results.json")
    assert tau_bench_pass_hat_k(trials, k) == pytest.approx(expected, abs=1e-12)


def test_hand_computed_figures_are_the_ones_pinned() -> None:
    assert pytest.approx({1: 0.5625, 2: 5 / 12, 3: 0.3125, 4: 0.25}) == EXPECTED_PASS_HAT_K


def test_a_trial_is_a_trajectory_with_its_tool_calls_and_answer() -> None:
    first = parse_tau_bench(_results(), source="results.json")[0]
    trajectory = first.trajectory
    assert (first.task_id, first.trial, trajectory.id) == ("0", 0, "0/0")
    [call] = trajectory.tool_calls
    assert (call.name, call.arguments, call.result) == (
        "find_user_id_by_zip",
        {"first_name": "Yusuf", "zip": "19122"},
        "yusuf_rossi_9620",
    )
    assert trajectory.final_answer == "Done (task 0, trial 0)."
    assert trajectory.status == "completed"
    assert trajectory.metadata["instruction"] == "Cancel it."
    assert trajectory.source is not None
    assert (trajectory.source.format, trajectory.source.file) == ("tau_bench", "results.json")


def test_the_reward_is_a_reward_score() -> None:
    trials = parse_tau_bench(_results(), source="results.json")
    partial = next(t for t in trials if t.task_id == "1" and t.trial == 3)
    assert (partial.reward.name, partial.reward.value, partial.reward.passed) == (
        "reward",
        0.5,
        False,
    )
    assert trials[0].reward.passed is True


def test_gold_actions_become_expected_actions() -> None:
    [trial] = parse_tau_bench(json.dumps([_record(5, 0, 1.0)]), source="r.json")
    assert trial.expected_actions == [
        {"name": "find_user_id_by_zip", "arguments": {"first_name": "Yusuf", "zip": "19122"}},
        {"name": "cancel_pending_order", "arguments": {"order_id": "#W2378156", "reason": "no"}},
    ]


def test_a_run_error_makes_an_errored_trajectory() -> None:
    record = {**_record(7, 0, 0.0, error="timeout"), "traj": []}
    [trial] = parse_tau_bench(json.dumps([record]), source="r.json")
    assert (trial.trajectory.status, trial.trajectory.error) == ("error", "timeout")
    assert trial.trajectory.steps == []


@pytest.mark.parametrize(
    ("reward", "passed"),
    [(1.0, True), (1 - 1e-7, True), (1 + 1e-7, True), (0.99, False), (0, False)],
)
def test_reward_passes_at_one_within_the_benchmarks_tolerance(reward: float, passed: bool) -> None:
    assert reward_passed(reward) is passed


def test_jsonl_records_read_with_their_line(tmp_path: Path) -> None:
    file = tmp_path / "results.jsonl"
    file.write_text(json.dumps(_record(1, 0, 1.0)) + "\n\n" + json.dumps(_record(1, 1, 0.0)) + "\n")
    first, second = load_tau_bench(file)
    assert second.trajectory.source is not None
    assert (second.trial, second.trajectory.source.line) == (1, 3)
    assert tau_bench_pass_hat_k([first, second], 1) == 0.5


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda r: r.pop("task_id"),
            r"r\.json: record \[0\]: 'task_id' must be a number or a string",
        ),
        (lambda r: r.update(trial=-1), r"record \[0\]: 'trial' must be a non-negative integer"),
        (lambda r: r.update(reward="1"), r"record \[0\]: 'reward' must be a number"),
        (lambda r: r.update(info=[]), r"record \[0\]: 'info' must be an object, got array"),
        (lambda r: r.update(traj={}), r"record \[0\]: 'traj' must be a list of messages"),
        (
            lambda r: r["traj"].append({"role": 7, "content": ""}),
            r"record \[0\]: traj\[6\]\.role: must be a string, got number",
        ),
        (
            lambda r: r["info"]["task"]["actions"].append({"kwargs": {}}),
            r"record \[0\]: info\.task\.actions\[2\]: an action must be an object",
        ),
    ],
)
def test_a_record_that_is_not_a_result_is_named(mutate: Any, message: str) -> None:
    record = _record(0, 0, 1.0)
    mutate(record)
    with pytest.raises(InputError, match=message):
        parse_tau_bench(json.dumps([record]), source="r.json")


def test_a_trial_given_twice_is_refused() -> None:
    records = [_record(0, 0, 1.0), _record(0, 0, 0.0)]
    with pytest.raises(InputError, match=r"record \[1\]: task '0' trial 0 is given twice"):
        parse_tau_bench(json.dumps(records), source="r.json")


def test_pass_hat_k_beyond_the_trials_is_refused() -> None:
    trials = parse_tau_bench(_results(), source="results.json")
    with pytest.raises(ValueError, match="k"):
        tau_bench_pass_hat_k(trials, 5)
