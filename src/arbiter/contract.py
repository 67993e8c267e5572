"""The shapes every layer speaks: predictions, examples, datasets and reports.

These are Pydantic v2 models. Models that are stored carry ``schema_version`` so a
reader can tell which shape it holds. This module imports nothing of Arbiter's.
"""

from __future__ import annotations

import hashlib
import json
from functools import cached_property
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "DIMENSIONS",
    "SCHEMA_VERSION",
    "Callout",
    "Case",
    "ClassificationMetrics",
    "CohortMetrics",
    "CriticOutcome",
    "Critique",
    "Dataset",
    "Decision",
    "Defect",
    "Dimension",
    "Example",
    "Finding",
    "Interval",
    "LabelMetrics",
    "LatencySummary",
    "Prediction",
    "Report",
    "Score",
    "Usage",
    "Verdict",
]

SCHEMA_VERSION = 1
"""Version of the stored shapes in this module; bumped on any incompatible change."""


class Prediction(BaseModel):
    """What a system under test returns for one input."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    """Version of this shape."""
    id: str = ""
    """The system's own id for this answer (a correlation token); empty if it has none."""
    raw_output: dict[str, Any] = Field(default_factory=dict)
    """The untouched domain payload the system answered with, kept for debugging."""
    label: str
    """The normalised outcome, in the system's own vocabulary (e.g. a risk level)."""
    confidence: float | None = None
    """The system's confidence in ``label`` in [0, 1], or None if it gives none."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Anything else worth keeping with the prediction."""

    @field_validator("confidence")
    @classmethod
    def _confidence_in_unit_interval(cls, value: float | None) -> float | None:
        if value is not None and not 0.0 <= value <= 1.0:
            raise ValueError(f"confidence must be within [0, 1], got {value}")
        return value


class Example(BaseModel):
    """One labelled input of a dataset."""

    model_config = ConfigDict(extra="forbid")

    id: str
    """Unique id of the example within its dataset."""
    input: dict[str, Any]
    """The input given to the system under test, passed through as is."""
    expected_label: str
    """The correct label (ground truth)."""
    cohort: str | None = None
    """Optional group the example belongs to, for per-cohort figures and floors."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Free-form annotations (source, notes); not shown to the system under test."""

    @field_validator("id", "expected_label")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value


class Dataset(BaseModel):
    """A named, versioned list of labelled examples with unique ids."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    """Version of this shape."""
    name: str = "dataset"
    """Human-readable name, usually the file stem."""
    version: str = "1"
    """Version string chosen by the dataset's author."""
    examples: list[Example]
    """The examples, in file order."""

    @model_validator(mode="after")
    def _ids_unique_and_nonempty(self) -> Dataset:
        if not self.examples:
            raise ValueError("the dataset has no examples")
        seen: set[str] = set()
        for example in self.examples:
            if example.id in seen:
                raise ValueError(f"duplicate example id {example.id!r}")
            seen.add(example.id)
        return self

    @cached_property
    def content_hash(self) -> str:
        """sha256 of the canonical JSON of the examples (name and version excluded)."""
        payload = [e.model_dump(mode="json") for e in self.examples]
        canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    @property
    def labels(self) -> list[str]:
        """The distinct expected labels, sorted."""
        return sorted({e.expected_label for e in self.examples})


class Interval(BaseModel):
    """A point estimate with a 95% interval."""

    estimate: float
    """The point estimate."""
    low: float
    """Lower end of the 95% interval."""
    high: float
    """Upper end of the 95% interval."""
    method: Literal["wilson", "bootstrap"]
    """How the interval was computed."""
    n: int
    """Units the estimate is over: trials (Wilson) or resampled examples (bootstrap)."""


class LabelMetrics(BaseModel):
    """Precision, recall and F1 of one label (one-vs-rest), or an average of them."""

    precision: float
    """TP / (TP + FP); 0 when nothing was predicted as this label (zero_division=0)."""
    recall: float
    """TP / (TP + FN); 0 when the label never occurs in the ground truth."""
    f1: float
    """Harmonic mean of precision and recall; 0 when both are 0."""
    support: int
    """Number of ground-truth occurrences of the label."""


class ClassificationMetrics(BaseModel):
    """Label-level figures over every scored (example, repetition) pair."""

    labels: list[str]
    """Labels in matrix order: every label seen in ground truth or predictions, sorted."""
    n: int
    """Number of (example, repetition) pairs scored, errors included."""
    accuracy: Interval
    """Share of pairs predicted exactly right, errors counted wrong, with a Wilson interval."""
    per_label: dict[str, LabelMetrics]
    """One-vs-rest figures per label."""
    macro: LabelMetrics
    """Unweighted mean over labels."""
    micro: LabelMetrics
    """Figures from pooled counts over labels."""
    weighted: LabelMetrics
    """Mean over labels weighted by support."""
    confusion: list[list[int]]
    """Confusion matrix: row = expected label, column = predicted label, in ``labels`` order."""


class CohortMetrics(BaseModel):
    """Accuracy within one cohort."""

    n: int
    """Number of examples in the cohort."""
    accuracy: Interval
    """Share of the cohort's pairs correct, with a Wilson interval."""
    pass_k: float
    """Share of the cohort's examples correct on every repetition."""


class LatencySummary(BaseModel):
    """Latency of successful and failed calls, in milliseconds."""

    p50_ms: float
    """Median."""
    p95_ms: float
    """95th percentile."""
    p99_ms: float
    """99th percentile."""
    mean_ms: float
    """Arithmetic mean."""


class Report(BaseModel):
    """Everything a run measured. Figures scikit-learn also computes equal its output."""

    schema_version: int = SCHEMA_VERSION
    """Version of this shape."""
    run_id: str | None = None
    """The stored run the report describes, if any."""
    dataset: str
    """Dataset name."""
    dataset_hash: str
    """Content hash of the dataset."""
    system: str
    """Short description of the system under test."""
    k: int
    """Repetitions per example."""
    n_examples: int
    """Examples scored."""
    seed: int
    """Seed of every resampling behind the intervals."""
    label_map: dict[str, str] | None = None
    """Mapping applied for ``mapped``, or None if no map was given."""
    strict: ClassificationMetrics
    """Figures on labels compared exactly as predicted."""
    mapped: ClassificationMetrics | None = None
    """Figures after the label map is applied to both sides (e.g. graded → binary)."""
    pass_hat_k: Interval
    """Share of examples correct on all k repetitions (pass^k), bootstrap interval over examples."""
    pass_at_1: Interval
    """Mean pass@1: per example, the share of repetitions correct; bootstrap interval."""
    cohorts: dict[str, CohortMetrics]
    """Per-cohort figures; examples with no cohort are left out."""
    errors_by_type: dict[str, int]
    """Count of failed calls per error type."""
    error_examples: dict[str, str] = Field(default_factory=dict)
    """The first message seen of each error type, to show what went wrong."""
    error_rate: float
    """Failed (example, repetition) pairs over all pairs."""
    latency: LatencySummary | None
    """Call latency, None when no call was timed."""
    examples_per_second: float | None
    """Pairs completed per wall-clock second of the run, None when unknown."""

    @property
    def primary(self) -> ClassificationMetrics:
        """The figures the gate judges: mapped when a label map was given, else strict."""
        return self.mapped if self.mapped is not None else self.strict


# --------------------------------------------------------------------------- jury

Decision = Literal["ACCEPT", "REVISE", "REJECT"]
"""A jury's verdict on one output."""
Dimension = Literal["accuracy", "consistency", "completeness"]
"""What a critic scores: faithful to the context, coherent with itself, complete for the task."""
Score = Literal[1, 2, 3, 4, 5]
"""A critic's score of one dimension: 1 (badly wrong) to 5 (flawless)."""
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

    accuracy: Score
    """Faithfulness to the context: 5 = nothing contradicts or goes beyond it."""
    consistency: Score
    """Coherence with itself: 5 = no statement contradicts another."""
    completeness: Score
    """Coverage of the task: 5 = everything asked for, within its constraints."""
    callouts: list[Callout]
    """Findings that justify any score below 5, each quoting the output."""

    def score(self, dimension: Dimension) -> int:
        """The score of one dimension."""
        return int(getattr(self, dimension))


class Usage(BaseModel):
    """Tokens and cost of one provider call."""

    input_tokens: int = 0
    """Prompt tokens billed."""
    output_tokens: int = 0
    """Completion tokens billed."""
    cost_usd: float | None = None
    """Cost in US dollars, when the price of the model is known."""


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
    raw: str | None = None
    """The provider's raw answer, kept for the audit trail."""


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
