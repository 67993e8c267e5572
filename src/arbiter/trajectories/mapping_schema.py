"""The mapping file of the mapping importer: where each trajectory field lives in a record.

See :mod:`arbiter.trajectories.mapping` for how a mapping reads records; this module is
its shape (Pydantic, unknown keys refused) and :func:`load_mapping`, whose errors name the
mapping file's line and key.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from arbiter.contract import TrajectoryStatus
from arbiter.datasets.tomlio import read_toml_file
from arbiter.errors import InputError
from arbiter.validation import describe_validation_error

__all__ = [
    "BUILTIN_MAPPINGS",
    "AgentPaths",
    "ChunkPaths",
    "LlmCallPaths",
    "RecordMapping",
    "RetrievalPaths",
    "StepPaths",
    "StepsMapping",
    "ToolCallPaths",
    "TrajectoryPaths",
    "load_mapping",
]

BUILTIN_MAPPINGS = ("uderia_turn",)
"""Mappings shipped in ``arbiter/trajectories/data``, loadable by name."""

MatchValue = str | int | float | bool
RecordPath = Annotated[str, Field(min_length=1, max_length=1_000, pattern=r"^[^.]+(\.[^.]+)*$")]
"""A dotted path: keys (and list indices) joined by dots, none empty."""


class _Paths(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AgentPaths(_Paths):
    """Where the agent's identity lives in a record."""

    name: RecordPath | None = None
    """Path of the agent's name (a profile tag)."""
    version: RecordPath | None = None
    """Path of its version."""
    agent_class: RecordPath | None = None
    """Path of its class (one of the configured agent classes)."""
    default_class: str | None = None
    """The class when the record says none (a constant, not a path)."""


class TrajectoryPaths(_Paths):
    """Where a run's own fields live in a record."""

    id: RecordPath | None = None
    """Path of the run's id (a turn id)."""
    conversation_id: RecordPath | None = None
    """Path of the conversation or session id."""
    final_answer: RecordPath | None = None
    """Path of the answer delivered."""
    status: RecordPath | None = None
    """Path of the run's status."""
    status_values: dict[str, TrajectoryStatus] = {}
    """The record's status values as trajectory statuses (``{success = "completed"}``)."""
    error: RecordPath | None = None
    """Path of the run's error message."""
    started_at: RecordPath | None = None
    """Path of the start time (ISO 8601, or Unix seconds)."""
    ended_at: RecordPath | None = None
    """Path of the end time."""
    model: RecordPath | None = None
    """Path of the model, for the totals step."""
    input_tokens: RecordPath | None = None
    """Path of the turn's prompt tokens in total."""
    output_tokens: RecordPath | None = None
    """Path of the turn's completion tokens in total."""
    cost_usd: RecordPath | None = None
    """Path of the turn's cost in US dollars in total."""
    agent: AgentPaths = AgentPaths()
    """Where the agent's identity lives."""
    metadata: dict[str, RecordPath] = {}
    """Metadata keys and the paths of their values (``query = "user_query"``)."""


class StepPaths(_Paths):
    """What every step kind has: which steps it takes, and their id and times."""

    match: dict[RecordPath, MatchValue] = {}
    """Step fields (paths) and the values they must equal for a step to be of this kind."""
    id: RecordPath | None = None
    """Path of the step's id."""
    started_at: RecordPath | None = None
    """Path of its start time."""
    ended_at: RecordPath | None = None
    """Path of its end time."""
    duration_ms: RecordPath | None = None
    """Path of its duration in milliseconds."""


class ToolCallPaths(StepPaths):
    """Which steps are tool calls, and where their fields are."""

    name: RecordPath
    """Path of the tool's name."""
    call_id: RecordPath | None = None
    """Path of the model's id for the call."""
    arguments: RecordPath | None = None
    """Path of the arguments."""
    result: RecordPath | None = None
    """Path of what the tool returned."""
    error: RecordPath | None = None
    """Path of the error: a message, ``true`` for a failure, or an object (kept as JSON)."""


class LlmCallPaths(StepPaths):
    """Which steps are LLM calls, and where their fields are."""

    model: RecordPath | None = None
    """Path of the model called."""
    output: RecordPath | None = None
    """Path of the text the model answered."""
    input_tokens: RecordPath | None = None
    """Path of the prompt tokens."""
    output_tokens: RecordPath | None = None
    """Path of the completion tokens."""
    cost_usd: RecordPath | None = None
    """Path of the call's cost."""
    error: RecordPath | None = None
    """Path of the call's error message."""


class ChunkPaths(_Paths):
    """Where a retrieved chunk's fields are, relative to the chunk."""

    source: RecordPath | None = "source"
    """Path of the chunk's source (a document id)."""
    text: RecordPath | None = "text"
    """Path of its text."""
    similarity: RecordPath | None = "similarity"
    """Path of its similarity score."""


class RetrievalPaths(StepPaths):
    """Which steps are retrievals, and where their fields are."""

    query: RecordPath | None = None
    """Path of what was looked up."""
    chunks: RecordPath | None = None
    """Path of the list of chunks returned."""
    chunk: ChunkPaths = ChunkPaths()
    """Where each chunk's fields are."""


class StepsMapping(_Paths):
    """Where a record's steps are, and how each kind of step reads."""

    path: RecordPath
    """Path of the list of steps."""
    tool_call: ToolCallPaths | None = None
    """Tool call steps."""
    llm_call: LlmCallPaths | None = None
    """LLM call steps."""
    retrieval: RetrievalPaths | None = None
    """Retrieval steps."""


class RecordMapping(_Paths):
    """A mapping of one platform's JSON turn records onto trajectories."""

    name: str | None = None
    """What the mapping maps (``uderia_turn``), for ``source`` and messages."""
    trajectory: TrajectoryPaths = TrajectoryPaths()
    """Where the run's own fields are."""
    steps: StepsMapping | None = None
    """Where its steps are; None when records carry no steps."""


def load_mapping(path: str | os.PathLike[str]) -> RecordMapping:
    """Read a mapping file, or a shipped mapping by name (:data:`BUILTIN_MAPPINGS`).

    Raises:
        InputError: The file is missing, not TOML, or a key is unknown or of the wrong
            type (``file:line: field 'key': why``).
    """
    file = Path(path)
    if str(path) in BUILTIN_MAPPINGS and not file.exists():
        file = Path(str(resources.files("arbiter.trajectories").joinpath("data", f"{path}.toml")))
    elif not file.exists():
        shipped = ", ".join(BUILTIN_MAPPINGS)
        raise InputError(f"{path}: no such mapping file (nor a shipped mapping: {shipped})")
    document = read_toml_file(file, what="mapping file")
    try:
        return RecordMapping.model_validate(document.data)
    except ValidationError as exc:
        location = exc.errors(include_url=False)[0]["loc"]
        reason = describe_validation_error(exc, RecordMapping)
        raise InputError(f"{document.where(location)}: {reason}") from None
