"""The jury's shapes: cases, critiques, callouts, verdicts, and the runs that hold them."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from arbiter.contract.common import SCHEMA_VERSION, Usage, storable_id
from arbiter.contract.scores import ModelCalls

__all__ = [
    "DIMENSIONS",
    "Callout",
    "Case",
    "CriticOutcome",
    "Critique",
    "Decision",
    "Defect",
    "Dimension",
    "Finding",
    "Judgment",
    "JuryRunInfo",
    "JuryRunKind",
    "JuryRunStatus",
    "Rating",
    "Verdict",
]

Decision = Literal["ACCEPT", "REVISE", "REJECT"]
"""A jury's verdict on one output."""
Dimension = Literal["accuracy", "consistency", "completeness"]
"""What a critic scores: faithful to the context, coherent with itself, complete for the task."""
Rating = Literal[1, 2, 3, 4, 5]
"""A critic's rating of one dimension: 1 (badly wrong) to 5 (flawless)."""
DIMENSIONS: tuple[Dimension, ...] = ("accuracy", "consistency", "completeness")
"""The dimensions, in display order."""


class Defect(BaseModel):
    """A hand-labelled defect of a case: where it is, what kind, who could catch it."""

    model_config = ConfigDict(extra="forbid")

    dimension: Dimension
    """The dimension the defect breaks."""
    kind: Literal["contradicted", "unsupported"]
    """Refuted by the context (or by the output itself), or merely without support."""
    quote: str
    """The defective span, verbatim from the output."""
    rival: str | None = None
    """For a contradiction, the competing figure or phrase (from the context or the output)."""
    detectable: Literal["string", "semantic"] = "semantic"
    """Whether a string detector could catch it in principle, or only understanding can."""
    family: str | None = None
    """Detector family it belongs to (number, polarity, list_length, ...), or 'semantic'."""


class Case(BaseModel):
    """One LLM output to be judged, with optional ground truth."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    """Version of this shape."""
    id: str
    """Unique id of the case."""
    task: str
    """What the LLM was asked to do."""
    context: str
    """The source the output must stay faithful to."""
    output: str
    """The LLM output under judgement."""
    expected: Decision | None = None
    """The right verdict, when labelled."""
    defective: bool | None = None
    """Whether the output has a defect; follows from ``expected`` when that is given."""
    defects: list[Defect] = Field(default_factory=list)
    """The labelled defects, if known."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Free-form annotations (domain, split, notes)."""

    @field_validator("id")
    @classmethod
    def _storable_id(cls, value: str) -> str:
        return storable_id(value)

    @model_validator(mode="after")
    def _defective_follows_expected(self) -> Case:
        if self.expected is not None:
            implied = self.expected != "ACCEPT"
            if self.defective is not None and self.defective != implied:
                raise ValueError(f"defective={self.defective} contradicts expected={self.expected}")
            self.defective = implied
        return self


class Callout(BaseModel):
    """One finding of a critic, with the span of the output it is about."""

    model_config = ConfigDict(extra="forbid")

    dimension: Dimension
    """The dimension the finding is about."""
    kind: Literal["contradicted", "unsupported", "opinion"]
    """Refuted by the source, without support, or (after a failed quote check) an opinion."""
    claim: str
    """What is wrong, in one sentence."""
    quote: str
    """The offending span, verbatim from the output."""
    rival: str | None = None
    """For a contradiction: the competing figure or phrase from the context (or the output)."""


class Critique(BaseModel):
    """What one critic answers: a score per dimension and the callouts behind them."""

    model_config = ConfigDict(extra="forbid")

    accuracy: Rating
    """Faithfulness to the context: 5 = nothing contradicts or goes beyond it."""
    consistency: Rating
    """Coherence with itself: 5 = no statement contradicts another."""
    completeness: Rating
    """Coverage of the task: 5 = everything asked for, within its constraints."""
    callouts: list[Callout]
    """Findings that justify any score below 5, each quoting the output."""

    def score(self, dimension: Dimension) -> int:
        """The score of one dimension."""
        return int(getattr(self, dimension))


class CriticOutcome(BaseModel):
    """What became of one critic of the jury: its critique, or why it has none."""

    critic: str
    """The critic's name (unique within the roster)."""
    lens: str
    """Its lens: factual, logical, adversary or a custom one."""
    model: str
    """The model it ran on (``mock`` for the deterministic detectors)."""
    status: Literal["ok", "dead"]
    """``dead`` when the call raised, timed out or answered unusably."""
    critique: Critique | None = None
    """The parsed critique, when ``ok``."""
    error: str | None = None
    """Why the critic is dead, one line."""
    latency_ms: float = 0.0
    """Wall time of the call."""
    usage: Usage | None = None
    """Tokens and cost, when the provider reports them."""
    cached: bool = False
    """Answered from the model-call cache: no model was asked (zero tokens, no cost)."""
    raw: str | None = None
    """The provider's raw answer, kept for the audit trail."""
    calls: ModelCalls = Field(default_factory=ModelCalls)
    """The model call behind this outcome, in the shape every judged thing reports
    (none for the offline detectors; a dead juror keeps the call it made)."""


class Finding(BaseModel):
    """Callouts of one or more critics about the same span, after the quote check."""

    dimension: Dimension
    """The dimension."""
    kind: Literal["contradicted", "unsupported"]
    """What the critics found."""
    quote: str
    """The span, as the first critic quoted it."""
    rival: str | None
    """The competing figure or phrase, when a critic named one."""
    claim: str
    """The first critic's description."""
    critics: list[str]
    """Names of the critics that raised it, in roster order."""
    corroborated: bool
    """Raised by two critics or more."""


class Verdict(BaseModel):
    """The jury's decision on one output, with everything needed to audit it."""

    schema_version: int = SCHEMA_VERSION
    """Version of this shape."""
    decision: Decision
    """ACCEPT, REVISE or REJECT."""
    confidence: float
    """0.34–0.95: from the flip margin and agreement, capped when escalating or unevidenced."""
    flip_margin: int
    """Single-critic ±1 score changes the decision survives (0–2)."""
    agreement: float
    """Mean over dimensions of 1 − (max − min) / 4 of the live critics' scores."""
    escalate: bool
    """A human should look: the jury could not settle it."""
    reasons: list[str]
    """Why this decision and why (not) escalated, one line each."""
    scores: dict[str, float]
    """The aggregate score per dimension (median; a verified contradiction's low score wins)."""
    findings: list[Finding]
    """Evidence: verified callouts clustered by span, in order of appearance."""
    opinions: list[Callout]
    """Callouts whose quote is not in the output, demoted to opinions."""
    critiques: list[CriticOutcome]
    """Every critic's outcome, in roster order."""

    def model_calls(self) -> ModelCalls:
        """Every critic's model call, summed: calls, cache hits, tokens, latency, cost."""
        total = ModelCalls()
        for outcome in self.critiques:
            total = total + outcome.calls
        return total


JuryRunKind = Literal["judge", "eval", "baseline"]
"""What made a jury run: ``arbiter judge``, ``jury eval`` or one arm of ``jury baseline``."""
JuryRunStatus = Literal["running", "completed", "interrupted", "failed"]
"""Where a jury run is."""


class JuryRunInfo(BaseModel):
    """A stored jury run's header."""

    id: str
    """Run id."""
    kind: JuryRunKind
    """What made it: ``arbiter judge``, ``jury eval`` or one arm of ``jury baseline``."""
    created_at: datetime
    """When the run was created."""
    roster: list[dict[str, Any]]
    """The critics, as critic-spec dicts, in roster order."""
    config: dict[str, Any]
    """Options of the command (cases file, provider, baseline arm, ...)."""
    n_cases: int
    """Cases the run was to judge."""
    n_judged: int = 0
    """Verdicts stored so far."""
    status: JuryRunStatus
    """Where the run is."""


class Judgment(NamedTuple):
    """One stored judgment: the case's id, every critic's outcome, the verdict."""

    case_id: str
    """Id of the judged case."""
    outcomes: list[CriticOutcome]
    """Every critic's outcome, in roster order."""
    verdict: Verdict
    """The verdict as it was synthesized when stored (``critiques`` = ``outcomes``)."""
