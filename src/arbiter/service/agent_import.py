"""Imported agent runs for the agent commands: what they read of a run, and the import.

:class:`AgentRun` is what ``arbiter agent score | mine | diff`` read of an imported run
(the shape of the trajectories loader's ``ImportedRun``). :func:`import_runs` reads
trajectory files of every format the installed importers know.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from pydantic import JsonValue

from arbiter.contract import FlowRun, Score, Trajectory
from arbiter.errors import InputError

__all__ = ["FORMATS", "AgentRun", "ImportedAgentRun", "import_runs"]

FORMATS = ("openai_messages", "tau_bench")
"""The formats :func:`import_runs` reads."""


class AgentRun(Protocol):
    """One imported run, as the agent commands read it."""

    @property
    def trajectory(self) -> Trajectory | None:
        """What the agent did (None for a flow run)."""
        ...

    @property
    def flow(self) -> FlowRun | None:
        """The flow run, for flows."""
        ...

    @property
    def case_id(self) -> str:
        """The task it ran; runs sharing one are repetitions."""
        ...

    @property
    def repetition(self) -> int:
        """Its repetition of the task."""
        ...

    @property
    def scores(self) -> Sequence[Score]:
        """Scores the source carried (a benchmark's ``reward``)."""
        ...

    @property
    def assertions(self) -> Mapping[str, JsonValue]:
        """What the source says a right run does (τ-bench's gold actions)."""
        ...


@dataclass(frozen=True)
class ImportedAgentRun:
    """An :class:`AgentRun` read by :func:`import_runs`."""

    trajectory: Trajectory | None
    flow: FlowRun | None
    case_id: str
    repetition: int
    scores: list[Score] = field(default_factory=list)
    assertions: dict[str, JsonValue] = field(default_factory=dict)
    source_format: str = ""


def import_runs(
    paths: Sequence[str | os.PathLike[str]], *, format: str | None = None
) -> list[ImportedAgentRun]:
    """The runs of trajectory files, file by file, in file order.

    Args:
        paths: The files.
        format: Their format; None: told from each file's content.

    Raises:
        InputError: A file is missing or unreadable, its format unknown, or a record bad
            (``file:line: why``).
    """
    if format is not None and format not in FORMATS:
        raise InputError(f"--format {format!r}: unknown format; known: {', '.join(FORMATS)}")
    runs: list[ImportedAgentRun] = []
    for path in paths:
        runs.extend(_import_file(Path(path), format))
    return runs


def _import_file(path: Path, format: str | None) -> list[ImportedAgentRun]:
    from arbiter.datasets.jsonio import read_text
    from arbiter.trajectories.openai_messages import parse_openai_messages
    from arbiter.trajectories.tau_bench import parse_tau_bench

    text = read_text(path, what="trajectory file")
    chosen = format or _detect(text)
    if chosen == "tau_bench":
        return [
            ImportedAgentRun(
                trajectory=trial.trajectory,
                flow=None,
                case_id=trial.task_id,
                repetition=trial.trial,
                scores=[trial.reward],
                assertions={"expected_tool_calls": list(trial.expected_actions)},
                source_format="tau_bench",
            )
            for trial in parse_tau_bench(text, source=str(path))
        ]
    runs = []
    seen: dict[str, int] = {}
    for trajectory in parse_openai_messages(text, source=str(path)):
        line = trajectory.source.line if trajectory.source else None
        case_id = trajectory.id or f"{path.name}:{line}"
        repetition = seen[case_id] = seen.get(case_id, -1) + 1
        runs.append(
            ImportedAgentRun(trajectory, None, case_id, repetition, source_format="openai_messages")
        )
    return runs


def _detect(text: str) -> str:
    head = text.lstrip()[:4096]
    if '"task_id"' in head and '"traj"' in head:
        return "tau_bench"
    return "openai_messages"
