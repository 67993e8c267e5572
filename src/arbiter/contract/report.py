"""The report of a run: the outcome, a section per scorer, cohorts, latency, pass^k."""

from __future__ import annotations

from pydantic import BaseModel, Field

from arbiter.contract.common import SCHEMA_VERSION, Interval
from arbiter.contract.runs import RunStatus
from arbiter.contract.scores import Band, ModelCalls, ScorerSpec

__all__ = [
    "ClassificationMetrics",
    "CohortMetrics",
    "Completeness",
    "LabelMetrics",
    "LatencySummary",
    "Report",
    "ScorerSection",
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
    """The outcome within one cohort."""

    n: int
    """Number of examples in the cohort."""
    accuracy: Interval
    """Share of the cohort's decided pairs that passed, with a Wilson interval."""
    pass_k: float
    """Share of the cohort's decided examples that passed every repetition."""


class ScorerSection(BaseModel):
    """What one scorer found over the run.

    Pairs whose call failed count as failed (there was no output to pass); abstentions
    and errored scores are counted apart and enter no rate.
    """

    name: str
    """The name its scores carry."""
    spec: ScorerSpec
    """How it was built."""
    n: int
    """(example, repetition) pairs with a result."""
    passed: int
    """Pairs it passed."""
    failed: int
    """Pairs it failed, failed calls included."""
    abstained: int
    """Pairs it abstained on (nothing to judge), errored ones excluded."""
    errored: int
    """Pairs where the scorer itself failed (its error is in the pair's score)."""
    pass_rate: Interval | None
    """passed / (passed + failed) with a Wilson interval; None when it decided nothing."""
    pass_hat_k: Interval | None = None
    """Share of decided examples it passed on every repetition; bootstrap over examples."""
    classification: ClassificationMetrics | None = None
    """Its answers against the expected categories, when it reads categories (labels, the
    jury's decisions); strict comparison."""
    mapped: ClassificationMetrics | None = None
    """The same after the scorer's label map, when it has one."""
    value: Interval | None = None
    """Mean of its numeric values (per example, then over examples) with a bootstrap
    interval, when it measures: None when every value is 0 or 1 (that mean is the pass
    rate)."""
    bands: dict[Band, int] = Field(default_factory=dict)
    """Pairs per band, for banded scorers."""
    model: ModelCalls | None = None
    """Its model calls, summed, for model scorers."""


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
    scorers: list[ScorerSpec] = Field(default_factory=list)
    """The run's scorers, in order."""
    sections: dict[str, ScorerSection] = Field(default_factory=dict)
    """One section per scorer, in the run's order."""
    accuracy: Interval
    """The outcome over pairs: share of decided (example, repetition) pairs that passed
    (no gating scorer failed), failed calls counted failed; Wilson interval. For a run
    scored by ``label`` alone this is the label accuracy."""
    undecided: int = 0
    """Pairs whose outcome is unknown (every gating scorer abstained or errored)."""
    strict: ClassificationMetrics | None = None
    """Figures on labels compared exactly as predicted (the ``label`` scorer's section);
    None when the run has no ``label`` scorer."""
    mapped: ClassificationMetrics | None = None
    """Figures after the label map is applied to both sides (e.g. graded → binary)."""
    pass_hat_k: Interval
    """Share of decided examples that passed all k repetitions (pass^k), bootstrap
    interval over examples. An example with an unknown repetition and no failed one is
    undecided and left out."""
    pass_at_1: Interval
    """Mean pass@1: per decided example, the share of decided repetitions that passed."""
    undecided_examples: int = 0
    """Examples left out of pass^k as undecided."""
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
    model: ModelCalls | None = None
    """Every model call of the run's scorers, summed (cache hits counted apart)."""

    @property
    def primary(self) -> ClassificationMetrics | None:
        """The label figures to show first: mapped when a label map was given, else strict."""
        return self.mapped if self.mapped is not None else self.strict
