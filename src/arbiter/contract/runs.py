"""Offline runs as they are stored: how a run is executed, its header, its per-pair results."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from arbiter.contract.data import Output
from arbiter.contract.scores import Score, ScorerSpec

__all__ = [
    "DEFAULT_MAX_ERROR_RATE",
    "DEFAULT_MAX_UNDECIDED_RATE",
    "DEFAULT_MIN_DECIDED",
    "PairResult",
    "RunConfig",
    "RunGate",
    "RunInfo",
    "RunSegment",
    "RunStatus",
]

RunStatus = Literal["running", "completed", "interrupted", "failed"]
"""Where a run is: ``completed`` only when every (example, repetition) pair has a result."""


DEFAULT_MAX_ERROR_RATE = 0.2
"""Share of (example, repetition) pairs whose call failed above which a run fails the
gate: past it the run measured the system's outages, not its answers."""
DEFAULT_MAX_UNDECIDED_RATE = 0.5
"""Share of pairs with no decided outcome (every gating scorer abstained or errored)
above which a run fails the gate: its pass rate would speak for a minority of pairs."""
DEFAULT_MIN_DECIDED = 1
"""Fewest decided pairs a run needs to pass the gate: by default one, so a run that
decided nothing fails; a golden set of a few cases still gates. Raise it to refuse a
verdict on too little data."""


class RunGate(BaseModel):
    """The gate a run was started with (an eval file's ``[gate]``): applied when it
    completes, on the first start or on a resume."""

    min_accuracy: float | None = Field(default=None, ge=0, le=1)
    """Floor on the share of decided pairs that passed."""
    min_pass_k: float | None = Field(default=None, ge=0, le=1)
    """Floor on pass^k."""
    cohorts: dict[str, float] = Field(default_factory=dict)
    """Floor per cohort."""
    baseline: str | None = None
    """A stored run to compare with (significant regressions fail)."""
    epsilon: float = Field(default=0.0, ge=0)
    """Drop against the baseline tolerated even when significant."""
    max_error_rate: float = Field(default=DEFAULT_MAX_ERROR_RATE, ge=0, le=1)
    """Run check: the largest share of pairs whose call failed (docs/architecture.md
    §Glossary, release gate); a run past it fails whatever the floors."""
    max_undecided_rate: float = Field(default=DEFAULT_MAX_UNDECIDED_RATE, ge=0, le=1)
    """Run check: the largest share of pairs without a decided outcome."""
    min_decided: int = Field(default=DEFAULT_MIN_DECIDED, ge=0)
    """Run check: the fewest decided pairs the run needs to pass."""


class RunConfig(BaseModel):
    """How a run is executed; stored with the run so a resume repeats it exactly."""

    k: int = Field(default=1, ge=1)
    """Repetitions per example."""
    concurrency: int = Field(default=16, ge=1)
    """Calls in flight at once."""
    timeout: float = Field(default=30.0, gt=0, allow_inf_nan=False)
    """Seconds one call may take."""
    retries: int = Field(default=2, ge=0)
    """Extra attempts for a retryable failure (connect, timeout, 429, 5xx)."""
    retry_budget: float | None = Field(default=0.2, ge=0)
    """Retries the run may spend per first attempt, beyond ten (so a service that is down
    is not hammered k x retries times); None: no cap."""
    label_map: dict[str, str] | None = None
    """Mapping applied to both expected and predicted labels before comparison."""
    limit: int | None = Field(default=None, ge=1)
    """Only the first ``limit`` examples of the dataset."""
    seed: int = 0
    """Seed of the bootstrap intervals and of the retry jitter."""
    scorers: list[ScorerSpec] = Field(default_factory=list)
    """The scorers of the run, in order; empty: the ``label`` scorer with ``label_map``
    (every run stored before scorers existed)."""
    cache: bool | None = None
    """Whether model scorers' requests may be answered from the cache; None: only when
    k is 1 (repetitions meant to sample ask for fresh answers)."""
    eval_file_hash: str | None = None
    """sha256 of the eval file the run was started from, if any."""
    gate: RunGate | None = None
    """The gate the run must pass (an eval file's ``[gate]``); None: none. A resume
    applies it too, since the file may have changed or be gone."""
    engine: Literal["local", "ray"] = "local"
    """Where the run was started: this process, or a Ray cluster. A resume may run on
    either; no result depends on where a pair ran."""

    @property
    def uses_cache(self) -> bool:
        """Whether model calls of this run may come from the cache."""
        return self.cache if self.cache is not None else self.k == 1


class PairResult(BaseModel):
    """The outcome of one (example, repetition) pair: the output and what each scorer said."""

    example_id: str
    """Id of the example."""
    repetition: int
    """0-based repetition index."""
    output: Output | None = None
    """What the system answered; None when the call failed."""
    scores: list[Score] = Field(default_factory=list)
    """One score per scorer of the run, in the run's order; empty when the call failed."""
    passed: bool | None = None
    """The repetition's outcome: False when the call failed or a gating scorer failed;
    True when no gating scorer failed and at least one passed; None when every gating
    scorer abstained or errored (the outcome is unknown, never a pass)."""
    error_type: str | None = None
    """Class name of the error when the call failed."""
    error_message: str | None = None
    """One-line error message when the call failed."""
    latency_ms: float
    """Duration of the last attempt in milliseconds."""
    attempts: int = 1
    """Calls made, retries included."""

    @property
    def label(self) -> str | None:
        """The output's label (its text when it has no label); None when the call failed."""
        if self.output is None:
            return None
        return self.output.label if self.output.label is not None else self.output.text

    @property
    def correct(self) -> bool:
        """Whether the repetition passed (an unknown outcome is not a pass)."""
        return self.passed is True

    def score(self, name: str) -> Score | None:
        """The score of the scorer named ``name``, if it scored this pair."""
        return next((s for s in self.scores if s.name == name), None)


class RunSegment(BaseModel):
    """One stretch of a run's execution: the first start, or one resume."""

    started_at: datetime
    """When the segment started."""
    ended_at: datetime | None = None
    """When it ended; None when it was killed (or is still running)."""
    elapsed_seconds: float
    """Wall time of the segment: to its end, or, for a killed one, to its last result."""


class RunInfo(BaseModel):
    """A stored run's header, without its results."""

    id: str
    """Run id."""
    dataset_hash: str
    """Content hash of the dataset."""
    dataset_name: str
    """Dataset name."""
    system: dict[str, Any]
    """Description of the system under test (rebuildable)."""
    config: dict[str, Any]
    """Run options: k, concurrency, timeout, retries, label_map, limit, seed."""
    status: RunStatus
    """Where the run is."""
    n_pairs: int
    """(example, repetition) pairs the run must complete."""
    n_done: int = 0
    """Pairs completed so far."""
    created_at: datetime
    """When the run was created."""
    finished_at: datetime | None = None
    """When the run last finished, if it did."""
    segments: list[RunSegment] = Field(default_factory=list)
    """Each start and resume, in order, with its wall time."""
    name: str | None = None
    """A name given to the run (``--name``)."""
    tags: dict[str, str] = Field(default_factory=dict)
    """Tags given to the run (``--tag k=v``)."""
    summary: dict[str, Any] | None = None
    """Headline figures kept when the run last ended (``accuracy``, ``pass_hat_k``, ...)."""

    @property
    def elapsed_seconds(self) -> float:
        """Wall-clock seconds spent running, summed over every segment (killed ones too)."""
        return sum(segment.elapsed_seconds for segment in self.segments)

    @property
    def complete(self) -> bool:
        """Whether every (example, repetition) pair has a result."""
        return self.n_done >= self.n_pairs

    @property
    def run_config(self) -> RunConfig:
        """The stored options, as a ``RunConfig``."""
        return RunConfig.model_validate(self.config)
