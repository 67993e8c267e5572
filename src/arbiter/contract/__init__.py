"""The shapes every layer speaks, one module per concept; this package imports nothing of Arbiter's.

These are Pydantic v2 models. Models that are stored carry ``schema_version`` so a reader
can tell which shape it holds. Everything the store persists is defined here, so the
store, the engines and the service layer share one vocabulary and none imports another
to learn a shape:

- :mod:`~arbiter.contract.data`: ``Prediction``, ``Example``, ``Dataset``;
- :mod:`~arbiter.contract.runs`: ``RunConfig``, ``RunInfo``, ``PairResult``;
- :mod:`~arbiter.contract.report`: ``Report`` and its figures;
- :mod:`~arbiter.contract.jury`: ``Case``, ``Critique``, ``Verdict``, jury runs;
- :mod:`~arbiter.contract.online`: ``OnlineResult`` and what each layer reports.
"""

from arbiter.contract.common import SCHEMA_VERSION, Interval, Usage
from arbiter.contract.data import Dataset, Example, Prediction
from arbiter.contract.jury import (
    DIMENSIONS,
    Callout,
    Case,
    CriticOutcome,
    Critique,
    Decision,
    Defect,
    Dimension,
    Finding,
    Judgment,
    JuryRunInfo,
    JuryRunKind,
    JuryRunStatus,
    Rating,
    Verdict,
)
from arbiter.contract.online import (
    ConsistencyResult,
    DisagreementResult,
    GroundingResult,
    HeuristicFinding,
    HeuristicResult,
    JudgeAttempt,
    JudgeOutcome,
    LayerName,
    LayerReport,
    LayerStatus,
    Neighbour,
    OnlineResult,
)
from arbiter.contract.report import (
    ClassificationMetrics,
    CohortMetrics,
    Completeness,
    LabelMetrics,
    LatencySummary,
    Report,
)
from arbiter.contract.runs import PairResult, RunConfig, RunInfo, RunSegment, RunStatus

__all__ = [
    "DIMENSIONS",
    "SCHEMA_VERSION",
    "Callout",
    "Case",
    "ClassificationMetrics",
    "CohortMetrics",
    "Completeness",
    "ConsistencyResult",
    "CriticOutcome",
    "Critique",
    "Dataset",
    "Decision",
    "Defect",
    "Dimension",
    "DisagreementResult",
    "Example",
    "Finding",
    "GroundingResult",
    "HeuristicFinding",
    "HeuristicResult",
    "Interval",
    "JudgeAttempt",
    "JudgeOutcome",
    "Judgment",
    "JuryRunInfo",
    "JuryRunKind",
    "JuryRunStatus",
    "LabelMetrics",
    "LatencySummary",
    "LayerName",
    "LayerReport",
    "LayerStatus",
    "Neighbour",
    "OnlineResult",
    "PairResult",
    "Prediction",
    "Rating",
    "Report",
    "RunConfig",
    "RunInfo",
    "RunSegment",
    "RunStatus",
    "Usage",
    "Verdict",
]
