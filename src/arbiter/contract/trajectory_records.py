"""A stored agent run: the run itself, the score set it got, and its verdict.

Runs reach the store through ``POST /v1/trajectories``, ``POST /v1/traces`` (OTLP) or
``arbiter demo``; each is scored online by the deterministic trajectory scorers and kept
as one :class:`StoredTrajectory`. ``trajectory_hash`` binds the score set to the exact
run it grades: the sha256 of the run's canonical JSON (:func:`run_hash`).
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from arbiter.contract.common import SCHEMA_VERSION
from arbiter.contract.scores import Band, Score, ScorerSpec
from arbiter.contract.trajectory import FlowRun, Trajectory, TrajectoryStatus

__all__ = ["UNNAMED_AGENT", "RunKind", "StoredTrajectory", "run_hash"]

RunKind = Literal["trajectory", "flow"]
"""The two agent types: a trajectory of steps, or a flow run of named nodes."""

UNNAMED_AGENT = "unnamed"
"""The agent name of a run whose source names no agent."""


def run_hash(run: Trajectory | FlowRun) -> str:
    """``sha256:<hex>`` of the run's canonical JSON (sorted keys, no spaces, UTF-8)."""
    document = run.model_dump(mode="json")
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class StoredTrajectory(BaseModel):
    """One agent run as stored, with every verdict the trajectory scorers gave it."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    """Version of this shape."""
    id: str
    """The stored run's id (``tr-`` and 24 hex digits)."""
    created_at: datetime
    """When it was stored."""
    kind: RunKind
    """A trajectory or a flow run."""
    agent: str
    """The agent's name (the flow's, for a flow run); :data:`UNNAMED_AGENT` when the
    source names none."""
    agent_class: str | None = None
    """The agent's class, when the run says."""
    agent_version: str | None = None
    """The agent's version, when the run says."""
    conversation_id: str | None = None
    """The conversation the run belongs to, if any."""
    source_format: str
    """How it arrived: ``trajectory`` (the contract's own shape), ``flow``, or an
    importer's format (``otlp_protobuf``, ``openai_messages``, ``tau_bench``, ...)."""
    trace_id: str | None = None
    """The trace it was imported from, for span-based formats."""
    trajectory_hash: str
    """``sha256:<hex>`` of the run's canonical JSON (:func:`run_hash`)."""
    status: TrajectoryStatus
    """How the run ended."""
    passed: bool | None
    """The run's verdict: False when a rule convicted it (a deterministic scorer failed
    it or put it in the danger band), True when a scorer passed it and none convicted,
    None when every scorer abstained (not evaluated)."""
    band: Band | None
    """The run's band: danger when convicted, review when a scorer put it in review,
    else healthy; None when not evaluated."""
    convicted_by: list[str] = Field(default_factory=list)
    """The scorers that convicted it, in score order."""
    scores: list[Score] = Field(default_factory=list)
    """Every applicable scorer's verdict, in scorer order."""
    not_applicable: list[str] = Field(default_factory=list)
    """Scorers that do not measure runs of this agent class."""
    scorers: list[ScorerSpec] = Field(default_factory=list)
    """The specs (name, arguments, version) of the scorers that gave ``scores``."""
    notes: list[str] = Field(default_factory=list)
    """What the import repaired to read the run (a tool call id used twice, ...), then
    what the scoring noted: parts cut to bound it, errors of a layer."""
    cost_usd: float | None = None
    """The run's cost, when its steps report one."""
    duration_ms: float | None = None
    """The run's wall-clock duration, when timed."""
    total_tokens: int | None = None
    """Prompt and completion tokens of its model calls, when they report any."""
    trajectory: Trajectory | None = None
    """The run, for a trajectory."""
    flow: FlowRun | None = None
    """The run, for a flow run."""
