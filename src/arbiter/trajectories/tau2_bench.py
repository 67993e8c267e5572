"""Import τ²-bench results: each simulation a trial with a trajectory and a ``reward`` score.

τ²-bench (sierra-research/tau2-bench) writes a run as one JSON object
``{"info", "tasks", "simulations"}``. Each simulation has ``id``, ``task_id``, ``trial``,
``messages``, ``reward_info`` (``reward`` and its checks), ``termination_reason``,
``start_time`` / ``end_time`` and the agent's and user's cost; each task its
``evaluation_criteria.actions``, the gold actions (``name``, ``arguments``, ``requestor``).
The runner's directory format (``results.json`` with no simulations, and a
``simulations/`` directory beside it of one simulation a file) reads too, and so does
one simulation's file alone (without its tasks, so without gold actions). Whatever a
simulation carries that the trajectory has no field for (its ``mode``, the agent's
``agent_usage``, a ``review``, an ``info``) is kept in the trajectory's metadata.

The messages become steps as :mod:`~arbiter.trajectories.tau2_messages` reads them; the
gold actions the simulated user must take (``requestor: user``) are not the agent's, so
they are not expected actions.

A trial passes when its reward is 1 within 1e-6, as the benchmark counts it; a
simulation that never produced an evaluable rollout (``infrastructure_error``,
``context_window_exceeded``) or has no reward abstains, and :func:`tau2_bench_pass_hat_k`
leaves it out as the benchmark's metrics do.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from arbiter.contract import Score, Trajectory
from arbiter.datasets.jsonio import json_type, parse_json, read_json_file, read_text
from arbiter.errors import InputError
from arbiter.trajectories.formats import MATCH, ImportedRun, ImportOptions, TrajectoryFormat
from arbiter.trajectories.tau2_messages import Clock, tau2_messages_document
from arbiter.trajectories.tau_bench import (
    TauBenchTrial,
    reward_passed,
    tau_bench_pass_hat_k,
    trial_run,
)
from arbiter.validation import validate_document

__all__ = [
    "FORMAT",
    "NON_EVALUABLE_TERMINATIONS",
    "TRAJECTORY_FORMAT",
    "load_tau2_bench",
    "parse_tau2_bench",
    "tau2_bench_pass_hat_k",
]

FORMAT = "tau2_bench"
"""The ``source.format`` of the trajectories this importer makes."""

NON_EVALUABLE_TERMINATIONS = frozenset({"infrastructure_error", "context_window_exceeded"})
"""Terminations τ²-bench leaves out of its metrics: the run never reached the agent's outcome."""

_STATUS = {
    "user_stop": "completed",
    "agent_stop": "completed",
    "max_steps": "incomplete",
}
_SIMULATIONS_DIR = "simulations"
_READ_KEYS = frozenset(
    {"id", "task_id", "trial", "messages", "ticks", "reward_info", "start_time", "end_time"}
)


def load_tau2_bench(path: str | os.PathLike[str]) -> list[TauBenchTrial]:
    """The trials of a τ²-bench results file, in file order.

    A results file without simulations and with a ``simulations/`` directory beside it
    (the runner's directory format) reads that directory's ``*.json`` files, sorted.

    Raises:
        InputError: The file cannot be read, or it is not τ²-bench results.
    """
    file = Path(path)
    text = read_text(file, what="τ²-bench results")
    document = parse_json(text, source=str(file))
    folder = file.parent / _SIMULATIONS_DIR
    if _is_simulation(document):
        return _trials({}, [(str(file), document)], source=str(file))
    if isinstance(document, dict) and not document.get("simulations") and folder.is_dir():
        located = [
            (str(each), read_json_file(each, what="τ²-bench simulation"))
            for each in sorted(folder.glob("*.json"))
        ]
        return _trials(document, located, source=str(file))
    return parse_tau2_bench(text, source=str(file))


def parse_tau2_bench(text: str, *, source: str) -> list[TauBenchTrial]:
    """The trials of the text of a τ²-bench results file.

    Args:
        text: The JSON text.
        source: Where it came from (a file name), for messages and ``source.file``.

    Raises:
        InputError: Invalid JSON, no ``simulations`` list, a simulation that is not one
            (named ``source: simulations[i]``), or a task's trial given twice.
    """
    document = parse_json(text, source=source)
    if not isinstance(document, dict):
        raise InputError(f"{source}: expected a τ²-bench results object, got {json_type(document)}")
    simulations = document.get("simulations")
    if not isinstance(simulations, list):
        got = json_type(simulations) if "simulations" in document else "nothing"
        raise InputError(f"{source}: 'simulations' must be a list, got {got}")
    located = [(f"{source}: simulations[{i}]", s) for i, s in enumerate(simulations)]
    return _trials(document, located, source=source)


def _is_simulation(document: Any) -> bool:
    """Whether a document is one simulation (a file of the runner's ``simulations/``)."""
    return (
        isinstance(document, dict)
        and "simulations" not in document
        and {"task_id", "termination_reason"} <= document.keys()
    )


def tau2_bench_pass_hat_k(trials: Sequence[TauBenchTrial], k: int) -> float:
    """pass^k as τ²-bench computes it: mean over tasks of C(c, k) / C(n, k).

    Trials whose reward abstains (not evaluable, or no reward) count in neither n nor c.

    Raises:
        ValueError: No evaluable trials, or ``k`` is not within ``[1, fewest trials]``.
    """
    return tau_bench_pass_hat_k([t for t in trials if t.reward.passed is not None], k)


def _trials(
    document: dict[str, Any], located: list[tuple[str, Any]], *, source: str
) -> list[TauBenchTrial]:
    info = _object(document.get("info"))
    tasks = _tasks(document.get("tasks", []), source)
    trials: list[TauBenchTrial] = []
    seen: set[tuple[str, int]] = set()
    counts: dict[str, int] = {}
    for where, simulation in located:
        trial = _trial(
            simulation, where=where, source=source, info=info, tasks=tasks, counts=counts
        )
        if (trial.task_id, trial.trial) in seen:
            raise InputError(f"{where}: task {trial.task_id!r} trial {trial.trial} is given twice")
        seen.add((trial.task_id, trial.trial))
        trials.append(trial)
    return trials


def _tasks(tasks: Any, source: str) -> dict[str, dict[str, Any]]:
    if not isinstance(tasks, list):
        raise InputError(f"{source}: 'tasks' must be a list, got {json_type(tasks)}")
    by_id: dict[str, dict[str, Any]] = {}
    for index, task in enumerate(tasks):
        if not isinstance(task, dict) or not _is_id(task.get("id")):
            raise InputError(f"{source}: tasks[{index}]: a task must be an object with an 'id'")
        by_id[str(task["id"])] = task
    return by_id


def _is_id(value: Any) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool)


def _trial(
    simulation: Any,
    *,
    where: str,
    source: str,
    info: dict[str, Any],
    tasks: dict[str, dict[str, Any]],
    counts: dict[str, int],
) -> TauBenchTrial:
    if not isinstance(simulation, dict):
        raise InputError(f"{where}: expected a simulation object, got {json_type(simulation)}")
    task_id: str | int = simulation.get("task_id")  # type: ignore[assignment]  # checked next
    trial = simulation.get("trial")
    if not _is_id(task_id):
        raise InputError(f"{where}: 'task_id' must be a string or a number")
    if trial is None:  # older runs number no trials: they come in order
        trial = counts.get(str(task_id), 0)
    elif isinstance(trial, bool) or not isinstance(trial, int) or trial < 0:
        raise InputError(f"{where}: 'trial' must be a non-negative integer")
    counts[str(task_id)] = max(counts.get(str(task_id), 0), trial + 1)
    messages = simulation.get("messages")
    messages = [] if messages is None else messages  # full-duplex runs keep ticks instead
    if not isinstance(messages, list):
        raise InputError(f"{where}: 'messages' must be a list, got {json_type(messages)}")
    agent_info = _object(info.get("agent_info"))
    warnings: list[str] = []
    clock = Clock(where)
    started_at = clock.read(simulation.get("start_time"), "start_time")
    ended_at = clock.read(simulation.get("end_time"), "end_time")
    if started_at is not None and ended_at is not None and ended_at < started_at:
        raise InputError(
            f"{where}: end_time: {ended_at.isoformat()} is before start_time "
            f"{started_at.isoformat()}: a simulation cannot end before it starts"
        )
    steps = tau2_messages_document(
        messages, where=where, model=_text(agent_info.get("llm")), warnings=warnings, clock=clock
    )
    termination = simulation.get("termination_reason")
    termination = termination if isinstance(termination, str) else None
    task = tasks.get(str(task_id), {})
    document: dict[str, Any] = {
        "id": _text(simulation.get("id")) or f"{task_id}/{trial}",
        "agent": {
            "name": _text(agent_info.get("implementation")),
            "agent_class": "conversation_with_tools",
        },
        **steps,
        "status": _STATUS.get(termination, "error") if termination else "unknown",
        "started_at": started_at,
        "ended_at": ended_at,
        "source": {"format": FORMAT, "file": source},
        "metadata": _metadata(simulation, task, task_id=task_id, trial=trial, info=info),
    }
    if document["status"] == "error":
        document["error"] = f"the simulation ended with {termination}"
    return TauBenchTrial(
        task_id=str(task_id),
        trial=trial,
        trajectory=validate_document(Trajectory, document, where=where),
        reward=_reward(simulation.get("reward_info"), termination, where),
        expected_actions=_actions(task, where),
        warnings=tuple(warnings),
    )


def _metadata(
    simulation: dict[str, Any],
    task: dict[str, Any],
    *,
    task_id: str | int,
    trial: int,
    info: dict[str, Any],
) -> dict[str, JsonValue]:
    metadata: dict[str, JsonValue] = {"task_id": task_id, "trial": trial}
    for key in ("termination_reason", "agent_cost", "user_cost", "duration", "seed"):
        value = simulation.get(key)
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            metadata[key] = value
    for key, value in simulation.items():
        # What the simulation carries that the trajectory has no field for (its mode, the
        # agent's usage, a review) is kept; what became the run itself is not repeated.
        if key not in _READ_KEYS and value is not None:
            metadata.setdefault(key, value)
    domain = _object(info.get("environment_info")).get("domain_name")
    if isinstance(domain, str):
        metadata["domain"] = domain
    instructions = _object(task.get("user_scenario")).get("instructions")
    if isinstance(instructions, dict):
        instructions = instructions.get("task_instructions")
    if isinstance(instructions, str):
        metadata["instruction"] = instructions
    return metadata


def _reward(reward_info: Any, termination: str | None, where: str) -> Score:
    if reward_info is not None and not isinstance(reward_info, dict):
        raise InputError(f"{where}: 'reward_info' must be an object, got {json_type(reward_info)}")
    raw = (reward_info or {}).get("reward")
    if raw is not None and (
        isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw)
    ):
        raise InputError(f"{where}: reward_info.reward must be a number")
    details = _reward_details(reward_info or {})
    if termination in NON_EVALUABLE_TERMINATIONS:
        why = f"not evaluable ({termination}): left out, as τ²-bench leaves it out of its metrics"
        value = None if raw is None else float(raw)
        return Score(name="reward", value=value, explanation=why, metadata=details)
    if raw is None:
        return Score(name="reward", explanation="no reward recorded", metadata=details)
    reward = float(raw)
    passed = reward_passed(reward)
    return Score(
        name="reward",
        value=reward,
        passed=passed,
        explanation=f"τ²-bench reward {reward:g} ({'1: success' if passed else 'not 1'})",
        metadata=details,
    )


def _reward_details(reward_info: dict[str, Any]) -> dict[str, JsonValue]:
    """What the benchmark checked, in brief: the database match and the actions matched."""
    details: dict[str, JsonValue] = {}
    db_check = reward_info.get("db_check")
    if isinstance(db_check, dict) and isinstance(db_check.get("db_match"), bool):
        details["db_match"] = db_check["db_match"]
    checks = reward_info.get("action_checks")
    if isinstance(checks, list):
        matched = [c.get("action_match") for c in checks if isinstance(c, dict)]
        details["actions_matched"] = sum(m is True for m in matched)
        details["actions_checked"] = len(matched)
    basis = reward_info.get("reward_basis")
    if isinstance(basis, list) and all(isinstance(b, str) for b in basis):
        details["reward_basis"] = list(basis)
    return details


def _actions(task: dict[str, Any], where: str) -> list[dict[str, JsonValue]]:
    actions = _object(task.get("evaluation_criteria")).get("actions")
    if actions is None:
        return []
    at = f"{where}: task {str(task.get('id'))[:80]!r} evaluation_criteria.actions"
    if not isinstance(actions, list):
        raise InputError(f"{at}: must be a list, got {json_type(actions)}")
    expected: list[dict[str, JsonValue]] = []
    for index, action in enumerate(actions):
        if not isinstance(action, dict) or not isinstance(action.get("name"), str):
            raise InputError(f"{at}[{index}]: an action must be an object with a string 'name'")
        arguments = action.get("arguments", {})
        if not isinstance(arguments, dict):
            raise InputError(f"{at}[{index}].arguments: must be an object")
        if action.get("requestor", "assistant") == "assistant":
            expected.append({"name": action["name"], "arguments": arguments})
    return expected


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _read_file(file: Path, options: ImportOptions) -> Iterator[ImportedRun]:
    return (trial_run(trial, FORMAT) for trial in load_tau2_bench(file))


def _read_record(record: Any, options: ImportOptions) -> list[ImportedRun]:
    text = json.dumps(record, ensure_ascii=False)
    return [trial_run(trial, FORMAT) for trial in parse_tau2_bench(text, source=options.source)]


def _resemblance(record: Any) -> float:
    """A results document: its ``simulations``, or (the runner's directory format) its
    ``info`` and ``tasks`` alone; partly: ``simulations`` that is not a list."""
    if not isinstance(record, dict):
        return 0.0
    if isinstance(record.get("simulations"), list):
        return MATCH
    if isinstance(record.get("info"), dict) and isinstance(record.get("tasks"), list):
        return MATCH
    if _is_simulation(record):
        return MATCH + 0.25  # it has messages too, but says whose: more than a conversation
    return 0.5 if "simulations" in record else 0.0


TRAJECTORY_FORMAT = TrajectoryFormat(
    name=FORMAT,
    summary="τ²-bench results JSON (`simulations`, or `results.json` beside a "
    "`simulations/` directory)",
    read_file=_read_file,
    read_record=_read_record,
    resemblance=_resemblance,
)
"""The ``tau2_bench`` trajectory format."""
