"""The report of a run: classification figures, cohorts, latency, pass^k."""

from __future__ import annotations

from pydantic import BaseModel, Field

from arbiter.contract.common import SCHEMA_VERSION, Interval
from arbiter.contract.runs import RunStatus

__all__ = [
    "ClassificationMetrics",
    "CohortMetrics",
    "Completeness",
    "LabelMetrics",
    "LatencySummary",
    "Report",
]


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


class Completeness(BaseModel):
    """How much of a run has results: a run that is not complete never passes a gate."""

    done: int
    """(example, repetition) pairs with a result."""
    expected: int
    """Pairs the run must complete: examples in scope x k."""

    @property
    def complete(self) -> bool:
        """Whether every expected pair has a result."""
        return self.done >= self.expected


class Report(BaseModel):
    """Everything a run measured. Figures scikit-learn also computes equal its output."""

    schema_version: int = SCHEMA_VERSION
    """Version of this shape."""
    run_id: str | None = None
    """The stored run the report describes, if any."""
    status: RunStatus = "completed"
    """Where the run is: only a ``completed`` run can pass a gate."""
    completeness: Completeness | None = None
    """Pairs with a result over pairs expected; None in reports made before it was kept."""
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
