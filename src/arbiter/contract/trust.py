"""Shapes of the trust loop: the evidence a trust state is built from, and what it says.

A trust state is computed per agent *and owner*: two API keys whose agents share a name
are two agents. The evidence of one stored run is a :class:`RunEvidence` (small and
flat, so a fleet's history fits in memory); what the pure core in :mod:`arbiter.trust`
concludes is a :class:`TrustStatus`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from arbiter.contract.common import Bounds
from arbiter.contract.scores import ModelCalls

__all__ = [
    "TRUST_STATES",
    "AgentJudgeSetting",
    "BreakerAction",
    "BreakerMemory",
    "BreakerMode",
    "EventNote",
    "Freeze",
    "Integrity",
    "JudgeRuling",
    "RunEvidence",
    "Severity",
    "SignatureCheck",
    "TrustEvent",
    "TrustEventKind",
    "TrustState",
    "TrustStatus",
    "Vote",
    "VoteValue",
    "WebhookDelivery",
]

TrustState = Literal["provisional", "at_risk", "watch", "proven", "trusted"]
"""The ladder, lowest rank first: not enough evidence yet, then conduct bands."""
TRUST_STATES: tuple[TrustState, ...] = ("provisional", "at_risk", "watch", "proven", "trusted")
Integrity = Literal["signed", "unsigned", "changed", "unknown"]
"""What Arbiter's own signatures say of an agent's scored records."""
SignatureCheck = Literal["verified", "missing", "failed"]
"""The outcome of checking one record's signature."""
BreakerMode = Literal["off", "notify", "freeze"]
"""What the breaker does when an agent falls into at_risk."""
BreakerAction = Literal["none", "notify", "freeze"]
"""What one breaker decision does."""


@dataclass(frozen=True, slots=True)
class RunEvidence:
    """What one stored, scored run tells about its agent's conduct."""

    run_id: str
    """The stored run's id."""
    at: datetime
    """When it was stored (timezone-aware)."""
    passed: bool | None
    """The run's verdict (the gating pass); None when it was not evaluated."""
    dimensions: tuple[tuple[str, bool | None], ...] = ()
    """Verdicts of the run's scorers by name (only those the reader asked for)."""


@dataclass(frozen=True, slots=True)
class BreakerMemory:
    """What the breaker remembers of one agent between decisions."""

    in_at_risk: bool = False
    """Whether the last decision saw the agent at_risk (a bad streak is under way)."""
    trips: int = 0
    """How many times it has tripped."""


class TrustStatus(BaseModel):
    """One agent's trust: conduct, the state on the ladder, integrity and any cap."""

    model_config = ConfigDict(extra="forbid")

    agent: str
    """The agent's name."""
    owner: str | None = None
    """The API key id owning its runs; None: runs nobody owns (stored at the terminal)."""
    state: TrustState
    """The state after the integrity cap."""
    behaviour_state: TrustState
    """The state conduct alone earns."""
    conduct: float | None = None
    """Recency-weighted conduct in [0, 1]; None without evaluated runs."""
    gating_rate: float | None = None
    """Recency-weighted share of evaluated runs that passed."""
    dimension_rate: float | None = None
    """Recency-weighted share of trust-critical dimension verdicts that passed; None
    when none of them gave a verdict."""
    interval: Bounds = (0.0, 1.0)
    """95% Wilson interval of the conduct over ``runs`` runs."""
    runs: int = 0
    """Evaluated runs in the window: the evidence count."""
    abstained: int = 0
    """Runs left out because no scorer gave them a verdict."""
    newest_at: datetime | None = None
    """When the newest evidence was stored."""
    stale: bool = False
    """The newest evidence is older than the policy's stale days (trusted is capped)."""
    integrity: Integrity = "unknown"
    """What Arbiter's signatures say of the window's records."""
    cap: TrustState | None = None
    """The highest state integrity allows; None: no cap."""
    capped: bool = False
    """Whether the cap lowered the state."""
    reasons: list[str] = Field(default_factory=list)
    """Why the state is what it is, in plain words."""
    frozen: bool = False
    """The breaker (or a person) froze autonomous use."""
    autonomous: bool = True
    """Whether a platform may let the agent act unattended: False while frozen."""
    breaker_mode: BreakerMode = "off"
    """The breaker's mode for this agent."""


TrustEventKind = Literal[
    "breaker_trip",
    "gate_withhold",
    "gate_park",
    "judge_condemnation",
    "signature_failure",
    "calibration_drop",
    "redteam_failure",
    "firewall_flag",
    "webhook_failure",
    "unfreeze",
]
"""What happened: the kinds of event the assurance inbox holds."""
Severity = Literal["info", "warning", "danger"]
VoteValue = Literal["up", "down"]


class EventNote(BaseModel):
    """Who acknowledged (or resolved) an event, when, and why."""

    model_config = ConfigDict(extra="forbid")

    by: str
    """Who: the API key id, or the name given at the terminal."""
    note: str = ""
    """In their words."""
    at: datetime
    """When."""


class TrustEvent(BaseModel):
    """One event of the assurance inbox; appended, never changed (acks sit beside it)."""

    model_config = ConfigDict(extra="forbid")

    id: int
    """The event's number (increasing)."""
    created_at: datetime
    """When it was recorded."""
    kind: TrustEventKind
    """What happened."""
    severity: Severity
    """How bad."""
    agent: str
    """The agent it is about."""
    owner: str | None = None
    """The key owning that agent; None: nobody."""
    record_kind: str | None = None
    """The kind of record it points at (``trajectory``, ``gate_decision``, ...)."""
    record_id: str | None = None
    """That record's id."""
    message: str
    """One line for a person."""
    details: dict[str, object] = Field(default_factory=dict)
    """What else the emitter knew (states, conduct, the webhook's error)."""
    acked: EventNote | None = None
    """The acknowledgement, once there is one."""
    resolved: EventNote | None = None
    """The resolution, once there is one."""


class Freeze(BaseModel):
    """A freeze (or unfreeze) of an agent's autonomous use."""

    model_config = ConfigDict(extra="forbid")

    agent: str
    """The agent."""
    owner: str | None = None
    """Whose agent."""
    frozen: bool
    """True: frozen; False: lifted."""
    by: str
    """Who (``breaker`` when the breaker froze it)."""
    reason: str
    """Why."""
    at: datetime
    """When."""


class Vote(BaseModel):
    """A person's vote on a stored run: calibration evidence, never a measurement."""

    model_config = ConfigDict(extra="forbid")

    id: int
    """The vote's number."""
    run_id: str
    """The stored run voted on."""
    agent: str
    """Its agent."""
    owner: str | None = None
    """The key that voted."""
    vote: VoteValue
    """``up`` or ``down``."""
    reason: str = ""
    """Why, in the voter's words."""
    verdict_seen: bool | None = None
    """The run's verdict when the vote was cast (None: not evaluated)."""
    created_at: datetime
    """When."""


class WebhookDelivery(BaseModel):
    """One try (with its retries) to deliver an event to a webhook."""

    model_config = ConfigDict(extra="forbid")

    event_id: int
    """The event delivered."""
    url: str
    """Where to."""
    delivered: bool
    """Whether a 2xx answer came back."""
    attempts: int
    """Requests sent."""
    error: str = ""
    """Why it failed, when it did."""
    created_at: datetime
    """When."""


class AgentJudgeSetting(BaseModel):
    """An agent's own setting of the judge panels on its ingested runs, as stored.

    Stored as it was given: the resolver reads it leniently, so a value an older
    version (or a hand) wrote that cannot be read falls back to the default.
    """

    model_config = ConfigDict(extra="forbid")

    agent: str
    """The agent."""
    owner: str | None = None
    """Whose agent."""
    judges: JsonValue = "inherit"
    """``inherit`` (the deployment default), ``on`` or ``off``."""
    sample_rate: JsonValue = None
    """Share of clean runs also judged; None: the default."""
    by: str
    """Who set it."""
    at: datetime
    """When."""


class JudgeRuling(BaseModel):
    """One judge's ruling on an ingested run (a panel's consensus), kept beside the run:
    it never changes the run's stored verdict."""

    model_config = ConfigDict(extra="forbid")

    id: int
    """The ruling's number (increasing)."""
    run_id: str
    """The stored run judged."""
    agent: str
    """Its agent."""
    owner: str | None = None
    """Whose run."""
    judge: str
    """The judge (``answer_groundedness``, ...)."""
    passed: bool | None
    """Its verdict; None: it abstained (or was cut off)."""
    explanation: str = ""
    """Its reason, clipped (model text: untrusted)."""
    trigger: str
    """Why the run was judged: ``flagged``, ``anomalous`` or ``sampled``."""
    model: ModelCalls = Field(default_factory=ModelCalls)
    """The calls this judge made on the run: tokens, latency, cost."""
    created_at: datetime
    """When."""
