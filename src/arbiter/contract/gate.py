"""The grounding gate's records: the trusted scope, each decision, parked answers, reviews.

A :class:`GateDecision` is what the gate did with one answer and why: stored, exported as
telemetry, and, in ``review`` mode, the holder of the withheld original
(:class:`ParkedAnswer`) until a human resolves it. A resolution is a :class:`GateReview`,
appended beside the decision and never changing it: the decision says what the gate did,
the reviews say what people did afterwards.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from arbiter.contract.scores import ModelCalls
from arbiter.contract.trajectory import ToolCall

__all__ = [
    "GATE_MODES",
    "GateAction",
    "GateDecision",
    "GateJudgeOutcome",
    "GateMode",
    "GateRequest",
    "GateReview",
    "GateScope",
    "ParkedAnswer",
    "ParkedItem",
    "ParkedStatus",
    "ReviewResolution",
    "TriggerReason",
]

GateMode = Literal["off", "observe", "annotate", "enforce", "review"]
"""How far the gate may act on an answer (see :mod:`arbiter.judges.grounding_gate`)."""
GATE_MODES: tuple[GateMode, ...] = ("off", "observe", "annotate", "enforce", "review")
GateAction = Literal["deliver", "deliver_annotated", "withhold", "park_for_review"]
"""What the gate did with the answer."""
GateJudgeOutcome = Literal["not_called", "faithful", "drifted", "unknown", "unavailable", "timeout"]
"""The scope judge's ruling, or why there is none (``unavailable``: no judge, or it failed)."""
TriggerReason = Literal["tool_call_out_of_scope", "answer_reference_out_of_scope"]
"""Why the trigger fired: a tool call touched, or the answer named, an undeclared source."""
ReviewResolution = Literal["release", "discard"]
"""What a reviewer did with a parked answer: deliver the original after all, or drop it."""
ParkedStatus = Literal["pending", "released", "discarded"]
"""Where a parked answer stands: awaiting a reviewer, or resolved one way."""


def _new_id() -> str:
    return uuid.uuid4().hex


def _now() -> datetime:
    return datetime.now(UTC)


class GateScope(BaseModel):
    """The trusted scope an answer is held to."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    databases: tuple[str, ...] = ()
    """Declared databases (and hosts); a dotted prefix covers its tables."""
    entities: tuple[str, ...] = ()
    """In-scope table or concept names (a knowledge graph's entities)."""
    description: str = Field(default="", max_length=10_000)
    """The scope in words, as the scope judge reads it."""

    @property
    def declared(self) -> bool:
        """Whether any database or entity is declared (without one the gate abstains)."""
        return bool(self.databases or self.entities)


class GateRequest(BaseModel):
    """An answer to check before it is delivered: what a service hands the gate."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(default="", max_length=200)
    """The caller's name for it (a turn id); empty when it has none."""
    question: str = Field(default="", max_length=100_000)
    """What the user asked (the scope judge reads it)."""
    answer: str = Field(max_length=1_000_000)
    """The answer about to be delivered."""
    tool_calls: tuple[ToolCall, ...] = ()
    """The calls the agent made for it."""
    scope: GateScope
    """The trusted scope it is held to."""


class ParkedAnswer(BaseModel):
    """A withheld answer kept for a human reviewer (mode ``review``)."""

    model_config = ConfigDict(frozen=True)

    owner: str | None
    """Who the answer belongs to (an API key's id; None from the command line): only
    they, or an administrator, may see or resolve it."""
    question: str
    """What was asked."""
    answer: str
    """The withheld original, verbatim."""


class GateDecision(BaseModel):
    """One decision of the gate: what it found, what the judge ruled, what it delivered."""

    model_config = ConfigDict(frozen=True)

    schema_version: Literal[1] = 1
    """Version of this record's shape."""
    id: str = Field(default_factory=_new_id, min_length=1, max_length=64)
    """The decision's id (a random hex string), the same in the store and in telemetry."""
    created_at: datetime = Field(default_factory=_now)
    """When the gate decided (UTC)."""
    mode: GateMode
    """The mode the gate ran in."""
    action: GateAction
    """What it did with the answer."""
    delivered: str
    """The text delivered to the user."""
    needs_judge: bool = False
    """Whether the trigger fired."""
    reasons: tuple[TriggerReason, ...] = ()
    """Why the trigger fired."""
    out_of_scope_sources: tuple[str, ...] = ()
    """Sources the tool calls touched outside the scope."""
    references: tuple[str, ...] = ()
    """The answer's structural data references."""
    out_of_scope_references: tuple[str, ...] = ()
    """Those the scope does not cover."""
    unsupported_figures: int = 0
    """Figures no tool result holds (observe-only)."""
    scope_declared: bool = True
    """False when no scope was declared: the gate abstained."""
    judge: GateJudgeOutcome = "not_called"
    """The scope judge's ruling, or why there is none."""
    judge_reasoning: str = ""
    """The judge's reasoning, clipped (model text: untrusted)."""
    judge_calls: ModelCalls | None = None
    """What the judge's model calls cost (tokens, time, dollars); None when it was not
    asked, or when it was cut off before it could say."""
    owner: str | None = None
    """Whose answer this is: the API key id that asked; None from the command line."""
    parked: ParkedAnswer | None = None
    """The withheld original, when the answer was parked for review."""
    errors: tuple[str, ...] = ()
    """What failed (trigger, judge, sink, telemetry); a gate error delivered the original."""

    @property
    def altered(self) -> bool:
        """Whether the user got something other than the answer as written."""
        return self.action != "deliver"


class GateReview(BaseModel):
    """A human's resolution of a parked answer; appended, never changed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1] = 1
    """Version of this record's shape."""
    decision_id: str = Field(min_length=1, max_length=64)
    """The decision whose parked answer was resolved."""
    resolution: ReviewResolution
    """``release`` (deliver the original) or ``discard`` (keep it withheld)."""
    reviewer: str = Field(min_length=1, max_length=200)
    """Who resolved it."""
    note: str = Field(default="", max_length=10_000)
    """Why, in the reviewer's words."""
    created_at: datetime = Field(default_factory=_now)
    """When it was resolved (UTC)."""


class ParkedItem(BaseModel):
    """A parked answer as a reviewer sees it: the decision and where it stands."""

    model_config = ConfigDict(frozen=True)

    decision: GateDecision
    """The decision that parked it (its ``parked`` holds the original)."""
    status: ParkedStatus
    """``pending`` until a review resolves it."""
    review: GateReview | None = None
    """The resolution, once there is one."""

    @property
    def parked(self) -> ParkedAnswer:
        """The withheld original."""
        assert self.decision.parked is not None  # only parking decisions are items
        return self.decision.parked
