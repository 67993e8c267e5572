"""One entry point for every trajectory format: tell a file's format, import its runs.

:func:`load_runs` reads files of any format in :data:`FORMATS` into :class:`ImportedRun`
values: what the agent did, the case it ran and which repetition, and what the source
itself says of it (a benchmark's reward, its gold actions). :func:`detect_format` tells
a file's format from its extension and its first record:

- ``.pb`` / ``.binpb``: ``otlp`` (an OTLP protobuf export request);
- ``{"resourceSpans": ...}``: ``openinference`` when a span carries
  ``openinference.span.kind``, else ``otlp``;
- ``{"simulations": ...}``: ``tau2_bench``;
- a record with ``task_id``, ``reward`` and ``traj`` (alone or first of an array):
  ``tau_bench``;
- a record with ``messages``, or a list of chat messages: ``openai_messages``.

``mapping`` is never guessed: it needs a mapping file, and passing one selects it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from arbiter.contract import FlowRun, Score, Trajectory
from arbiter.datasets.jsonio import JsonInputError, parse_json, read_text
from arbiter.errors import InputError
from arbiter.trajectories.mapping_schema import RecordMapping, load_mapping
from arbiter.trajectories.tau_bench import TauBenchTrial

__all__ = ["FORMATS", "ImportedRun", "detect_format", "format_of_record", "load_runs", "trial_run"]

FORMATS = ("otlp", "openinference", "openai_messages", "tau_bench", "tau2_bench", "mapping")
"""The formats :func:`load_runs` reads (the values of ``--format``)."""

_PROTOBUF_SUFFIXES = frozenset({".pb", ".binpb"})
_OPENINFERENCE_KIND = "openinference.span.kind"


@dataclass
class ImportedRun:
    """One imported agent run, with what its source says of it.

    Attributes:
        trajectory: What the agent did (None for a flow run).
        flow: The flow run, for flows.
        case_id: The task it ran (τ-bench's task id; else the trajectory's conversation
            id, its id, or ``FILE:LINE``); runs sharing one are repetitions.
        repetition: Its repetition of the case (τ-bench's trial; else its order among
            the runs of the same case, from 0).
        scores: Verdicts the source carries (a benchmark's ``reward``).
        assertions: What the source says a right run does
            (``{"expected_tool_calls": [...]}`` from τ-bench's gold actions).
        source_format: The format it was read as (one of :data:`FORMATS`).
    """

    trajectory: Trajectory | None
    flow: FlowRun | None
    case_id: str
    repetition: int
    scores: list[Score] = field(default_factory=list)
    assertions: dict[str, JsonValue] = field(default_factory=dict)
    source_format: str = ""


def load_runs(
    paths: Sequence[str | os.PathLike[str]],
    *,
    format: str | None = None,
    mapping: RecordMapping | str | os.PathLike[str] | None = None,
) -> list[ImportedRun]:
    """The runs of trajectory files, file by file, in file order.

    Args:
        paths: The files.
        format: Their format (one of :data:`FORMATS`); None: ``mapping`` when a mapping
            is given, else told from each file (:func:`detect_format`).
        mapping: The mapping (or its file, or a shipped mapping's name) of the
            ``mapping`` format.

    Raises:
        InputError: An unknown format, ``mapping`` without a mapping, a file that cannot
            be read or whose format cannot be told, or a bad record (``file:line: why``).
    """
    if format is not None and format not in FORMATS:
        raise InputError(f"--format {format!r}: unknown format; expected one of {_listed()}")
    if format == "mapping" and mapping is None:
        raise InputError("--format mapping needs a mapping file (--mapping FILE)")
    if mapping is not None and not isinstance(mapping, RecordMapping):
        mapping = load_mapping(mapping)
    if format is None and mapping is not None:
        format = "mapping"
    runs: list[ImportedRun] = []
    for path in paths:
        chosen = format or detect_format(path)
        runs.extend(_load_file(Path(path), chosen, mapping))
    return runs


def detect_format(path: str | os.PathLike[str]) -> str:
    """The format of a trajectory file, from its extension and its first record.

    Raises:
        InputError: The file cannot be read, or its format cannot be told (the message
            lists the ``--format`` values).
    """
    file = Path(path)
    if file.suffix.lower() in _PROTOBUF_SUFFIXES:
        return "otlp"
    text = read_text(file, what="trajectory file")
    told = format_of_record(_first_record(text, str(file)))
    if told is None:
        raise InputError(
            f"{file}: cannot tell the format of the file; name it with --format "
            f"(one of {_listed()})"
        )
    return told


def _listed() -> str:
    return ", ".join(FORMATS)


def _first_record(text: str, source: str) -> Any:
    """The first record: the first line's JSON, else the whole file's (a pretty-printed
    document); None when neither parses."""
    first = next((line for line in text.split("\n", 64) if line.strip()), None)
    if first is None:
        return None
    try:
        return parse_json(first.rstrip("\r"), source=source)
    except JsonInputError:
        pass
    try:
        return parse_json(text, source=source)
    except JsonInputError:
        return None


def format_of_record(record: Any) -> str | None:
    """The format of one parsed record (a file's first, or a request body), as
    :func:`detect_format` tells it; None when it looks like none of them."""
    if isinstance(record, list):
        if record and isinstance(record[0], dict) and _is_tau_bench(record[0]):
            return "tau_bench"
        if record and all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in record):
            return "openai_messages"
        return None
    if not isinstance(record, dict):
        return None
    if "resourceSpans" in record:
        return "openinference" if _has_openinference_spans(record) else "otlp"
    if isinstance(record.get("simulations"), list):
        return "tau2_bench"
    if _is_tau_bench(record):
        return "tau_bench"
    if isinstance(record.get("messages"), list):
        return "openai_messages"
    return None


def _is_tau_bench(record: dict[str, Any]) -> bool:
    return {"task_id", "reward", "traj"} <= record.keys()


def _has_openinference_spans(request: dict[str, Any]) -> bool:
    for resource in _dicts(request.get("resourceSpans")):
        for scope in _dicts(resource.get("scopeSpans")):
            for span in _dicts(scope.get("spans")):
                if any(a.get("key") == _OPENINFERENCE_KIND for a in _dicts(span.get("attributes"))):
                    return True
    return False


def _dicts(value: Any) -> Iterable[dict[str, Any]]:
    return (item for item in value if isinstance(item, dict)) if isinstance(value, list) else ()


def _load_file(path: Path, format: str, mapping: RecordMapping | None) -> list[ImportedRun]:
    if format in ("tau_bench", "tau2_bench"):
        return [trial_run(trial, format) for trial in _trials(path, format)]
    if format == "otlp":
        from arbiter.trajectories.otlp import load_otlp

        trajectories = load_otlp(path)
    elif format == "openinference":
        from arbiter.trajectories.openinference import load_openinference

        trajectories = load_openinference(path)
    elif format == "openai_messages":
        from arbiter.trajectories.openai_messages import load_openai_messages

        trajectories = load_openai_messages(path)
    else:
        from arbiter.trajectories.mapping import load_mapped

        assert mapping is not None  # load_runs refuses the mapping format without one
        trajectories = load_mapped(path, mapping)
    return _numbered(trajectories, path, format)


def _trials(path: Path, format: str) -> list[TauBenchTrial]:
    if format == "tau_bench":
        from arbiter.trajectories.tau_bench import load_tau_bench

        return load_tau_bench(path)
    from arbiter.trajectories.tau2_bench import load_tau2_bench

    return load_tau2_bench(path)


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
    )


def _numbered(trajectories: list[Trajectory], path: Path, format: str) -> list[ImportedRun]:
    """Runs of plain trajectories: the case from the trajectory, repetitions in order.

    The case is the run's ``metadata["case_id"]`` when the source names one (a run made
    by ``arbiter agent run``), else the run's own id, else its conversation, else its
    place in the file. A conversation is not a case: its turns are different questions,
    so only runs that say which case they answer count as repetitions of it.
    """
    runs: list[ImportedRun] = []
    seen: dict[str, int] = {}
    for position, trajectory in enumerate(trajectories, start=1):
        line = trajectory.source.line if trajectory.source is not None else None
        named = trajectory.metadata.get("case_id")
        case_id = (
            (named if isinstance(named, str) and named else None)
            or trajectory.id
            or trajectory.conversation_id
            or f"{path}:{line or position}"
        )
        repetition = seen[case_id] = seen.get(case_id, -1) + 1
        runs.append(ImportedRun(trajectory, None, case_id, repetition, source_format=format))
    return runs
