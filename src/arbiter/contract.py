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
    "SCHEMA_VERSION",
    "ClassificationMetrics",
    "CohortMetrics",
    "Dataset",
    "Example",
    "Interval",
    "LabelMetrics",
    "LatencySummary",
    "Prediction",
    "Report",
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
