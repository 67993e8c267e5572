"""What each tool of the MCP server takes and answers: typed input and output shapes.

Every tool's input schema and output schema (``tools/list``) is the JSON schema of these
models, and every answer is validated against its output model before it is sent. Inputs
forbid unknown keys and bound every text, so a wrong argument is refused with one line
naming it instead of being ignored.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from arbiter.contract import Band, Interval, Report, RunInfo, RunStatus, Score, Verdict
from arbiter.contract.trust import TrustStatus
from arbiter.harness.diff import RunDiff
from arbiter.judges.calibration import CalibrationReport

__all__ = [
    "MAX_TEXT",
    "ArbitrateIn",
    "ArbitrateOut",
    "CalibrationIn",
    "CalibrationOut",
    "CompareRunsIn",
    "ComparisonOut",
    "EvaluateIn",
    "EvaluateOut",
    "FailuresIn",
    "GateOut",
    "GetReportIn",
    "ListRunsIn",
    "RunReportOut",
    "RunsOut",
    "ScoreIn",
    "ScoreTrajectoryIn",
    "TrajectoriesOut",
    "TrajectoryVerdict",
    "TrustIn",
    "TrustOut",
    "VerificationOut",
    "VerifyIn",
    "VerifyOut",
]

MAX_TEXT = 200_000
"""The longest task, context, output or artifact accepted (characters)."""

RunRef = Annotated[
    str, Field(min_length=1, max_length=40, description="A run id, or a unique prefix of one.")
]
Name = Annotated[str, Field(min_length=1, max_length=200)]


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ArbitrateIn(_In):
    """One output to judge, with the task it answers and the source it must stay faithful to."""

    task: str = Field(max_length=MAX_TEXT, description="What the LLM was asked to do.")
    context: str = Field(
        max_length=MAX_TEXT, description="The source the output must stay faithful to."
    )
    output: str = Field(max_length=MAX_TEXT, description="The LLM output under judgement.")
    id: Name | None = Field(default=None, description="A case id of yours (default: made up).")


class ArbitrateOut(BaseModel):
    """The jury's stored verdict."""

    verdict_id: int
    """The stored verdict's id (``arbiter verify VERDICT_ID``, the page ``/verdicts/{id}``)."""
    run_id: str
    """The jury run it belongs to."""
    case_id: str
    """The judged case's id."""
    verdict: Verdict
    """The decision, confidence, flip margin, ESCALATE flag, quoted findings, critiques."""


class ScoreIn(_In):
    """One output and the scorer to score it with."""

    scorer: str = Field(
        min_length=1,
        max_length=500,
        description="A registered scorer (`arbiter scorers`), optionally with arguments: "
        "`f1_tokens:threshold=0.5`.",
    )
    output: JsonValue = Field(
        description="What the system produced: a string (its label and text), an object "
        "with label / text / raw / confidence, or any JSON."
    )
    args: dict[str, JsonValue] = Field(
        default_factory=dict, description="The scorer's arguments (over those in `scorer`)."
    )
    expected: JsonValue = Field(
        default=None, description="The reference to compare with: a text, a number, any JSON."
    )
    expected_label: Name | None = Field(default=None, description="The right label.")
    input: dict[str, JsonValue] = Field(
        default_factory=dict, description="The input the output answers."
    )


class ScoreTrajectoryIn(_In):
    """One agent run, in any registered trajectory format."""

    record: JsonValue = Field(
        description="The record: a Trajectory or FlowRun document, or a record of a "
        "registered format (an OpenAI conversation, a τ-bench result, an OTLP export, ...)."
    )
    format: Annotated[str, Field(max_length=100)] | None = Field(
        default=None, description="Its format (`arbiter agent formats`); default: told apart."
    )
    mapping: Annotated[str, Field(max_length=100)] | None = Field(
        default=None, description="A shipped mapping, for the `mapping` format."
    )
    store: bool = Field(default=True, description="Keep the scored runs in the store.")


class TrajectoryVerdict(BaseModel):
    """One agent run's verdict, with every scorer's band."""

    run_id: str
    """The run's id (stored under it when ``store`` was true)."""
    agent: str
    """The agent's name."""
    source_format: str
    """The format it was read as."""
    status: str
    """How the run ended."""
    passed: bool | None
    """False when a rule convicted it, True when a scorer passed it and none convicted,
    None when every scorer abstained."""
    band: Band | None
    """healthy / review / danger; None when not evaluated."""
    convicted_by: list[str]
    """The scorers that convicted it."""
    scores: list[Score]
    """Every applicable scorer's verdict, with its band and explanation."""
    notes: list[str]
    """What the import repaired or the scoring cut."""


class TrajectoriesOut(BaseModel):
    """The runs of one record, scored."""

    runs: list[TrajectoryVerdict]
    """One per agent run the record holds."""
    stored: bool
    """Whether they were stored."""


class EvaluateIn(_In):
    """A run to start: an eval file, or a dataset with a system and scorers."""

    eval_file: Annotated[str, Field(min_length=1, max_length=4096)] | None = Field(
        default=None, description="An eval file (TOML) on the server's machine."
    )
    dataset: Annotated[str, Field(min_length=1, max_length=4096)] | None = Field(
        default=None, description="A dataset file (.json, .jsonl, .csv), without an eval file."
    )
    system: Annotated[str, Field(min_length=1, max_length=100)] = Field(
        default="python", description="The system's kind (python, http, mcp, precomputed)."
    )
    target: Annotated[str, Field(min_length=1, max_length=4096)] | None = Field(
        default=None, description="What the kind calls: `pkg.module:function`, a URL."
    )
    scorers: list[Annotated[str, Field(min_length=1, max_length=500)]] = Field(
        default_factory=list, max_length=50, description="`NAME[:ARG=VALUE,...]` each."
    )
    k: int = Field(default=1, ge=1, le=100, description="Repetitions per example.")
    limit: int | None = Field(default=None, ge=1, description="Only the first examples.")
    name: Name | None = Field(default=None, description="A name for the run.")
    tags: dict[Annotated[str, Field(max_length=100)], Annotated[str, Field(max_length=200)]] = (
        Field(default_factory=dict, max_length=20, description="Tags for the run.")
    )


class GateOut(BaseModel):
    """The gate's decision on a run."""

    passed: bool
    """Whether the run passed."""
    failures: list[str]
    """One line per missed floor or significant regression."""
    warnings: list[str]
    """What is worth a look but does not fail the gate."""


class EvaluateOut(BaseModel):
    """A finished run's id and headline figures."""

    run_id: str
    """The stored run (``get_report``, ``failures``, ``arbiter report``)."""
    status: RunStatus
    """Where the run is (only ``completed`` can pass a gate)."""
    dataset: str
    """The dataset's name."""
    n_examples: int
    """Examples scored."""
    k: int
    """Repetitions per example."""
    pass_rate: Interval
    """Share of decided pairs that passed, with its 95% Wilson interval."""
    pass_hat_k: Interval
    """Share of decided examples that passed every repetition, with its 95% interval."""
    error_rate: float
    """Failed calls over pairs."""
    gate: GateOut | None
    """The eval file's gate, when it has one."""


class GetReportIn(_In):
    """Which run."""

    run_id: RunRef


class RunReportOut(BaseModel):
    """One run: its header and its report, recomputed from the stored results."""

    info: RunInfo
    """Dataset, system, options, status, tags."""
    report: Report
    """Every figure of the run, with its interval."""
    note: str | None
    """Why the run is not complete and how to finish it; null when it is."""


class ListRunsIn(_In):
    """Which runs, a page at a time."""

    tags: dict[Annotated[str, Field(max_length=100)], Annotated[str, Field(max_length=200)]] = (
        Field(default_factory=dict, max_length=20, description="Tags every run must carry.")
    )
    system: Name | None = Field(default=None, description="Text in the system's description.")
    dataset: Name | None = Field(default=None, description="The dataset's name.")
    status: RunStatus | None = Field(default=None, description="The run's status.")
    offset: int = Field(default=0, ge=0, description="Where the page starts.")
    limit: int = Field(default=20, ge=1, le=100, description="Runs a page holds.")


class RunsOut(BaseModel):
    """A page of runs, newest first."""

    items: list[RunInfo]
    """The page's runs."""
    total: int
    """Runs the whole list holds."""
    next_offset: int | None
    """Where the next page starts; null on the last."""


class CompareRunsIn(_In):
    """Two runs: the reference and the one compared with it."""

    run_a: RunRef = Field(description="The reference run (a baseline).")
    run_b: RunRef = Field(description="The run compared with it.")


class ComparisonOut(BaseModel):
    """Two runs compared over the examples they share."""

    diff: RunDiff
    """The outcome and each common scorer: paired intervals of the change, McNemar, flips."""
    warnings: list[str]
    """What makes the comparison weaker than it looks."""


class FailuresIn(_In):
    """Which run, and how many examples."""

    run_id: RunRef
    limit: int = Field(default=10, ge=1, le=100, description="Examples listed, worst first.")


class CalibrationIn(_In):
    """Which judges."""

    judge: Name | None = Field(default=None, description="Only this judge.")
    dimension: Name | None = Field(default=None, description="Only this dimension.")


class EstimateOut(BaseModel):
    """A figure with its 95% bootstrap interval; null where undefined."""

    value: float | None
    low: float | None
    high: float | None


class JudgeCalibrationOut(BaseModel):
    """How one judge agrees with the humans on one dimension."""

    judge: str
    dimension: str
    n_pairs: int
    """Pairs labelled on both sides: the n of every figure."""
    labels: list[str]
    kappa: EstimateOut
    """Cohen's kappa."""
    agreement: EstimateOut
    precision: EstimateOut
    recall: EstimateOut
    status: Literal["calibrated", "uncalibrated", "too_few_pairs"]
    reason: str


class CalibrationOut(BaseModel):
    """Every judge and dimension calibrated against the annotations the caller may see."""

    judges: list[JudgeCalibrationOut]
    min_pairs: int
    kappa_threshold: float

    @classmethod
    def of(cls, report: CalibrationReport) -> CalibrationOut:
        """The answer for a calibration report."""
        data: dict[str, Any] = report.as_dict()
        return cls.model_validate(data)


class TrustIn(_In):
    """Which agents."""

    agent: Annotated[str, Field(min_length=1, max_length=1000)] | None = Field(
        default=None, description="Only the agents of this name (default: every agent)."
    )


class TrustOut(BaseModel):
    """The trust of the agents the caller may see."""

    agents: list[TrustStatus]
    """One per agent (of each owner), by name: state, conduct with its interval,
    integrity, freezes, and whether it may act unattended."""


class VerifyIn(_In):
    """A stored record to check, or a signed artifact."""

    target: Annotated[str, Field(min_length=1, max_length=200)] | None = Field(
        default=None, description="A run id, a jury run id, or a verdict id."
    )
    artifact: Annotated[str, Field(min_length=1, max_length=MAX_TEXT)] | None = Field(
        default=None, description="A signed artifact's text (an envelope or a registration)."
    )


class VerificationOut(BaseModel):
    """One signature checked."""

    kind: str
    """What was signed (``run_report``, ``gate_decision``, ``verdict``, ...)."""
    record_id: str
    """The signed record."""
    ok: bool
    """Whether the signature holds and what it signed is what is stored now."""
    key_id: str | None
    """The key it was signed with."""
    problems: list[str]
    """Why not, one line each."""
    notes: list[str]
    """What else was checked."""


class VerifyOut(BaseModel):
    """Every signature of the target."""

    checks: list[VerificationOut]
    """One per signed record."""
    verified: bool
    """Every signature holds and the signer is trusted."""
    signer_trusted: bool
    """A configured signing key vouched for the signer (else only the embedded key did)."""
