"""Import τ-bench result records: each trial a trajectory, its reward a ``reward`` score.

τ-bench (sierra-research/tau-bench) writes a run's results as a JSON array of records
``{"task_id", "trial", "reward", "info", "traj"}``: ``traj`` is the conversation in
OpenAI chat format (read as :mod:`~arbiter.trajectories.openai_messages` reads it),
``info.task`` the task with its gold ``actions`` and the user's ``instruction``, and
``info.error`` an error of the run (a timeout). A JSONL file of the same records, one a
line, reads too. What else a record carries (the published files' ``info.source``,
``info.user_cost``, ``info.reward_info``, the task's ``user_id`` and ``outputs``, a fork's
token counts) is kept in the trajectory's metadata, and the reward's own breakdown
(``r_actions``, ``r_outputs``) in the reward score's.

The published trajectories use a tool call id again for a later call: a result answers
the latest call of its id not answered yet, and each such repair is a warning of the
trial (see :mod:`~arbiter.trajectories.openai_messages`). A tool result starting with
``Error:`` (what the benchmark's environments return for a failed action) is a failed
call.

A trial passes when its reward is 1 within 1e-6, the benchmark's own test, so pass^k over
the trials (:func:`tau_bench_pass_hat_k`) is the benchmark's: the mean over tasks of
``C(c, k) / C(n, k)``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from arbiter.contract import Score, Trajectory
from arbiter.datasets.jsonio import iter_json_lines, json_type, parse_json, read_text
from arbiter.errors import InputError
from arbiter.stats import pass_hat_k
from arbiter.trajectories.formats import MATCH, ImportedRun, ImportOptions, TrajectoryFormat
from arbiter.trajectories.openai_messages import messages_document
from arbiter.validation import validate_document

__all__ = [
    "FORMAT",
    "TRAJECTORY_FORMAT",
    "TauBenchTrial",
    "load_tau_bench",
    "parse_tau_bench",
    "reward_passed",
    "tau_bench_pass_hat_k",
    "trial_run",
]

FORMAT = "tau_bench"
"""The ``source.format`` of the trajectories this importer makes."""

_TOLERANCE = 1e-6


@dataclass(frozen=True, slots=True)
class TauBenchTrial:
    """One trial of one τ-bench task.

    Attributes:
        task_id: The task's id, as text.
        trial: The trial's number (a repetition of the task).
        trajectory: What the agent did.
        reward: The benchmark's reward as a ``reward`` score; it passes at 1.
        expected_actions: The task's gold actions, each ``{"name", "arguments"}``.
        warnings: What the importer repaired to read the trial, one line each.
    """

    task_id: str
    trial: int
    trajectory: Trajectory
    reward: Score
    expected_actions: list[dict[str, JsonValue]]
    warnings: tuple[str, ...] = ()


def reward_passed(reward: float) -> bool:
    """Whether a reward is a success by τ-bench's test (1 within 1e-6)."""
    return abs(reward - 1.0) <= _TOLERANCE


def load_tau_bench(path: str | os.PathLike[str]) -> list[TauBenchTrial]:
    """The trials of a τ-bench results file (a JSON array, or JSONL), in file order.

    Raises:
        InputError: The file cannot be read, or a record is not a τ-bench result.
    """
    file = Path(path)
    return parse_tau_bench(read_text(file, what="τ-bench results"), source=str(file))


def parse_tau_bench(text: str, *, source: str) -> list[TauBenchTrial]:
    """The trials of τ-bench results text: a JSON array of records, or one record a line.

    Args:
        text: The text.
        source: Where it came from (a file name), for messages and ``source.file``.

    Raises:
        InputError: Invalid JSON, a record that is not a τ-bench result (named
            ``source: record [i]`` in an array, ``source:line`` in JSONL), or a task's
            trial given twice.
    """
    located: list[tuple[str, int | None, Any]]
    if text.lstrip().startswith("["):
        records = parse_json(text, source=source)
        located = [(f"{source}: record [{i}]", None, r) for i, r in enumerate(records)]
    else:
        located = [(f"{source}:{n}", n, r) for n, r in iter_json_lines(text, source=source)]
    trials: list[TauBenchTrial] = []
    seen: set[tuple[str, int]] = set()
    for where, line, record in located:
        trial = _trial(record, where=where, source=source, line=line)
        if (trial.task_id, trial.trial) in seen:
            raise InputError(f"{where}: task {trial.task_id!r} trial {trial.trial} is given twice")
        seen.add((trial.task_id, trial.trial))
        trials.append(trial)
    return trials


def tau_bench_pass_hat_k(trials: Sequence[TauBenchTrial], k: int) -> float:
    """pass^k of the trials as τ-bench computes it: mean over tasks of C(c, k) / C(n, k).

    Raises:
        ValueError: No trials, or ``k`` is not within ``[1, fewest trials of a task]``.
    """
    counts: dict[str, list[int]] = {}
    for trial in trials:
        n_c = counts.setdefault(trial.task_id, [0, 0])
        n_c[0] += 1
        n_c[1] += trial.reward.passed is True
    if not counts:
        raise ValueError("The 'trials' parameter of tau_bench_pass_hat_k is empty.")
    n, c = zip(*counts.values(), strict=True)
    return pass_hat_k(list(n), list(c), k)


def _trial(record: Any, *, where: str, source: str, line: int | None) -> TauBenchTrial:
    if not isinstance(record, dict):
        raise InputError(f"{where}: expected a τ-bench result object, got {json_type(record)}")
    task_id, trial, reward = record.get("task_id"), record.get("trial"), record.get("reward")
    if isinstance(task_id, bool) or not isinstance(task_id, int | str):
        raise InputError(f"{where}: 'task_id' must be a number or a string")
    if isinstance(trial, bool) or not isinstance(trial, int) or trial < 0:
        raise InputError(f"{where}: 'trial' must be a non-negative integer")
    if isinstance(reward, bool) or not isinstance(reward, int | float) or not math.isfinite(reward):
        raise InputError(f"{where}: 'reward' must be a number")
    info, traj = record.get("info", {}), record.get("traj")
    if not isinstance(info, dict):
        raise InputError(f"{where}: 'info' must be an object, got {json_type(info)}")
    if not isinstance(traj, list):
        raise InputError(f"{where}: 'traj' must be a list of messages, got {json_type(traj)}")
    task: dict[str, Any] = info["task"] if isinstance(info.get("task"), dict) else {}
    error = info.get("error")
    warnings: list[str] = []
    document: dict[str, Any] = {
        "id": f"{task_id}/{trial}",
        "agent": {"agent_class": "conversation_with_tools"},
        **messages_document(traj, where=where, key="traj", warnings=warnings),
        "source": {"format": FORMAT, "file": source, "line": line},
        "metadata": _metadata(record, info, task, task_id=task_id, trial=trial),
    }
    # A τ-bench conversation ends on the user's stop, not on an answer: it is over unless
    # the run failed.
    document["status"] = "completed" if error is None else "error"
    if error is not None:
        document["error"] = str(error)
    passed = reward_passed(float(reward))
    return TauBenchTrial(
        task_id=str(task_id),
        trial=trial,
        trajectory=validate_document(Trajectory, document, where=where),
        reward=Score(
            name="reward",
            value=float(reward),
            passed=passed,
            explanation=f"τ-bench reward {float(reward):g} ({'1: success' if passed else 'not 1'})",
            metadata=_reward_details(info.get("reward_info")),
        ),
        expected_actions=_actions(task.get("actions", []), where),
        warnings=tuple(warnings),
    )


_RECORD_KEYS = frozenset({"task_id", "trial", "reward", "info", "traj"})
_INFO_KEYS = frozenset({"task", "error"})
_TASK_KEYS = frozenset({"actions", "instruction"})


def _metadata(
    record: dict[str, Any],
    info: dict[str, Any],
    task: dict[str, Any],
    *,
    task_id: str | int,
    trial: int,
) -> dict[str, Any]:
    """The run's metadata: its task and trial, the instruction, and whatever else the
    record carries that the trajectory has no field for (nothing the file holds is lost)."""
    metadata: dict[str, Any] = {"task_id": task_id, "trial": trial}
    if isinstance(task.get("instruction"), str):
        metadata["instruction"] = task["instruction"]
    extras = [
        *((k, v) for k, v in task.items() if k not in _TASK_KEYS),
        *((k, v) for k, v in info.items() if k not in _INFO_KEYS),
        *((k, v) for k, v in record.items() if k not in _RECORD_KEYS),
    ]
    for key, value in extras:
        metadata.setdefault(key, value)
    return metadata


def _reward_details(reward_info: Any) -> dict[str, JsonValue]:
    """The reward's breakdown the benchmark recorded (``r_actions``, ``r_outputs``)."""
    details = reward_info.get("info") if isinstance(reward_info, dict) else None
    if not isinstance(details, dict):
        return {}
    return {
        key: value
        for key, value in details.items()
        if isinstance(value, int | float | str | bool) and key.startswith("r_")
    }


def _actions(actions: Any, where: str) -> list[dict[str, JsonValue]]:
    if not isinstance(actions, list):
        raise InputError(f"{where}: info.task.actions must be a list, got {json_type(actions)}")
    expected: list[dict[str, JsonValue]] = []
    for index, action in enumerate(actions):
        at = f"{where}: info.task.actions[{index}]"
        if not isinstance(action, dict) or not isinstance(action.get("name"), str):
            raise InputError(f"{at}: an action must be an object with a string 'name'")
        kwargs = action.get("kwargs", {})
        if not isinstance(kwargs, dict):
            raise InputError(f"{at}.kwargs: must be an object, got {json_type(kwargs)}")
        expected.append({"name": action["name"], "arguments": kwargs})
    return expected


def trial_run(trial: TauBenchTrial, format: str) -> ImportedRun:
    """A benchmark trial as a run: its reward imported as a score, its gold actions as
    the ``expected_tool_calls`` assertion."""
    assertions: dict[str, JsonValue] = {}
    if trial.expected_actions:
        assertions["expected_tool_calls"] = list(trial.expected_actions)
    return ImportedRun(
        trajectory=trial.trajectory,
        flow=None,
        case_id=trial.task_id,
        repetition=trial.trial,
        scores=[trial.reward],
        assertions=assertions,
        source_format=format,
        warnings=list(trial.warnings),
    )


def _read_file(file: Path, options: ImportOptions) -> Iterator[ImportedRun]:
    return (trial_run(trial, FORMAT) for trial in load_tau_bench(file))


def _read_record(record: Any, options: ImportOptions) -> list[ImportedRun]:
    text = json.dumps(record, ensure_ascii=False)
    return [trial_run(trial, FORMAT) for trial in parse_tau_bench(text, source=options.source)]


_KEYS = ("task_id", "reward", "traj")


def _resemblance(record: Any) -> float:
    """A result record (alone or first of an array); partly: two of its three keys."""
    if isinstance(record, list):
        record = record[0] if record else None
    if not isinstance(record, dict):
        return 0.0
    present = sum(key in record for key in _KEYS)
    return MATCH if present == len(_KEYS) else 0.6 if present == 2 else 0.0


TRAJECTORY_FORMAT = TrajectoryFormat(
    name=FORMAT,
    summary="τ-bench results (`task_id`, `trial`, `reward`, `info`, `traj`)",
    read_file=_read_file,
    read_record=_read_record,
    resemblance=_resemblance,
)
"""The ``tau_bench`` trajectory format."""
