"""Shapes of the online pipeline: what each layer reports and what the caller gets."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from arbiter.contract.common import SCHEMA_VERSION

__all__ = [
    "ConsistencyResult",
    "DisagreementResult",
    "GroundingResult",
    "HeuristicFinding",
    "HeuristicResult",
    "JudgeAttempt",
    "JudgeOutcome",
    "LayerName",
    "LayerReport",
    "LayerStatus",
    "Neighbour",
    "OnlineResult",
]

LayerName = Literal["heuristics", "grounding", "disagreement", "consistency", "judge"]
LayerStatus = Literal["ran", "not_configured", "not_escalated", "abstained", "error"]


class LayerReport(BaseModel):
    """What happened to one layer for one item."""

    status: LayerStatus
    """ran; not_configured (its dependency was not given); not_escalated (the item was not
    escalated); abstained (silenced by the budget's cut-off); error (it raised)."""
    reason: str | None = None
    """Why it did not run, or the error, one line."""
    latency_ms: float = 0.0
    """Time the layer took (0 when it did not run)."""
    cut_off: bool = False
    """Abstained because the escalation budget ran out (not for a reason of its own)."""


class HeuristicFinding(BaseModel):
    """One rule that fired."""

    rule: str
    """The rule's name from the rule set."""
    message: str
    """What is wrong, one line."""


class HeuristicResult(BaseModel):
    """Layer 1: free, deterministic rules over the prediction."""

    flagged: bool
    """Any rule fired."""
    findings: list[HeuristicFinding] = Field(default_factory=list)
    """The rules that fired, in rule-set order."""


class GroundingResult(BaseModel):
    """Layer 1b: are citation-shaped claims of the free text backed by declared references?"""

    flagged: bool
    """Some claim is not grounded."""
    claims: list[str] = Field(default_factory=list)
    """Citation-shaped claims found (stage 1), normalised."""
    keywords: list[str] = Field(default_factory=list)
    """Regulatory keywords found (stage 2)."""
    ungrounded: list[str] = Field(default_factory=list)
    """Claims or keywords with no matching declared reference."""
    best_policy_similarity: float | None = None
    """Stage 3: best similarity in the policies namespace, when an embedder was given."""
    stages: list[int] = Field(default_factory=list)
    """Which stages ran (1, 2, 3)."""


class DisagreementResult(BaseModel):
    """Layer 2: the same input to several providers or systems."""

    labels_by_provider: dict[str, str] = Field(default_factory=dict)
    """The label each one answered."""
    errors_by_provider: dict[str, str] = Field(default_factory=dict)
    """Every failure, one line each; never dropped."""
    agreed: bool | None = None
    """True only when every one answered and all labels are equal; None if none answered."""


class Neighbour(BaseModel):
    """One nearest neighbour from the vector store."""

    id: str
    """Id of the stored item."""
    similarity: float
    """Cosine similarity to the item."""
    label: str | None = None
    """Its label, from the stored metadata."""


class ConsistencyResult(BaseModel):
    """Layer 3: does the label agree with similar past items?"""

    neighbours: list[Neighbour] = Field(default_factory=list)
    """Nearest neighbours, most similar first."""
    threshold: float
    """Similarity above which a neighbour counts."""
    agrees: bool | None = None
    """Whether the label equals the majority label of neighbours above threshold; None if none."""


class JudgeAttempt(BaseModel):
    """One judge tried in the chain."""

    source: str
    """The judge's name."""
    outcome: Literal["ok", "failed", "skipped_open_circuit"]
    """What happened."""
    error: str | None = None
    """Why it failed."""
    latency_ms: float = 0.0
    """Time spent."""


class JudgeOutcome(BaseModel):
    """Layer 4: an LLM judge's label, or the fallback's."""

    label: str | None
    """The judge's label, within the vocabulary; None when only the fallback answered."""
    source: str
    """Which source resolved it: a judge's name or ``heuristics_fallback``."""
    agrees: bool | None = None
    """Whether the judge's label equals the prediction's."""
    attempts: list[JudgeAttempt] = Field(default_factory=list)
    """Every judge tried, in order."""


class OnlineResult(BaseModel):
    """Everything the pipeline found about one prediction. Never raised, always returned."""

    schema_version: int = SCHEMA_VERSION
    """Version of this shape."""
    prediction_id: str
    """The prediction's id (or a content hash when it had none)."""
    label: str | None
    """The prediction's label, if it had a usable one."""
    heuristics: HeuristicResult | None = None
    """Layer 1 (always runs unless the prediction could not be read)."""
    grounding: GroundingResult | None = None
    """Layer 1b (always runs when free-text fields are configured)."""
    disagreement: DisagreementResult | None = None
    """Layer 2, when escalated and configured."""
    consistency: ConsistencyResult | None = None
    """Layer 3, when escalated and configured."""
    judge: JudgeOutcome | None = None
    """Layer 4, when escalated and configured."""
    escalated: bool = False
    """Whether the expensive layers were called for."""
    escalation_reasons: list[str] = Field(default_factory=list)
    """Why: heuristic flags, grounding flags, anomalous, sampled."""
    layers: dict[str, LayerReport] = Field(default_factory=dict)
    """Per layer: ran or why not, and its latency."""
    errors: list[str] = Field(default_factory=list)
    """Every failure inside the pipeline, recorded instead of raised."""
    total_ms: float = 0.0
    """Wall time of the whole evaluation."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Anything the caller attached."""

    @property
    def flagged(self) -> bool:
        """Whether the free layers (heuristics, grounding) flagged the item."""
        return bool(
            (self.heuristics is not None and self.heuristics.flagged)
            or (self.grounding is not None and self.grounding.flagged)
        )

    def error_kinds(self) -> list[str]:
        """What went wrong with the item, as short kinds (empty when nothing did).

        An unreadable input line carries its kind in ``metadata["error_kind"]``
        (``invalid_json``, ...). Otherwise each recorded failure is named by where it
        happened, the prefix of its line: ``invalid_prediction`` for a prediction that
        failed validation (a NaN confidence, a missing label), else the layer
        (``judge``, ``disagreement``, ``grounding_stage_3``, ``pipeline``, ...).
        """
        kind = self.metadata.get("error_kind")
        if isinstance(kind, str):
            return [kind]
        kinds: dict[str, None] = {}
        for line in self.errors:
            prefix, found, _ = line.partition(":")
            where = "_".join(prefix.split()) if found and prefix.strip() else "error"
            kinds["invalid_prediction" if where == "prediction" else where] = None
        for name, report in self.layers.items():
            if report.status == "error" and not any(k.startswith(name) for k in kinds):
                kinds[name] = None
        return list(kinds)
