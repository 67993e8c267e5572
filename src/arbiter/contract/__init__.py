"""The shapes every layer speaks, one module per concept; this package imports nothing of Arbiter's.

These are Pydantic v2 models. Models that are stored carry ``schema_version`` so a reader
can tell which shape it holds. Everything the store persists is defined here, so the
store, the engines and the service layer share one vocabulary and none imports another
to learn a shape:

- :mod:`~arbiter.contract.data`: ``Output``, ``Prediction``, ``Example``, ``Dataset``;
- :mod:`~arbiter.contract.scores`: ``Score``, ``Evidence``, ``ScorerSpec``, ``ModelCalls``;
- :mod:`~arbiter.contract.runs`: ``RunConfig``, ``RunInfo``, ``PairResult``;
- :mod:`~arbiter.contract.report`: ``Report`` and its figures;
- :mod:`~arbiter.contract.jury`: ``Case``, ``Critique``, ``Verdict``, jury runs;
- :mod:`~arbiter.contract.online`: ``OnlineResult`` and what each layer reports;
- :mod:`~arbiter.contract.trajectory`: ``Trajectory`` and its steps, ``FlowRun``;
- :mod:`~arbiter.contract.trajectory_records`: ``StoredTrajectory``, a scored stored run;
- :mod:`~arbiter.contract.safety`: ``SafetyFinding``, ``SafetyScan``, red-team cases and
  the self-test's report.
"""

from arbiter.contract.agents import AGENT_CLASS_KEY, AgentCase, AgentInput
from arbiter.contract.annotations import Annotation, AnnotationLabel, FrozenRuling, RulingVerdict
from arbiter.contract.common import SCHEMA_VERSION, Bounds, Interval, StrictModel, Usage
from arbiter.contract.data import Dataset, Example, Output, Prediction
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
    ONLINE_SCHEMA_VERSION,
    ConsistencyResult,
    DisagreementResult,
    GroundingResult,
    HeuristicFinding,
    HeuristicResult,
    JudgeAttempt,
    JudgeOutcome,
    LayerName,
    LayerPayload,
    LayerResult,
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
    ScorerSection,
)
from arbiter.contract.runs import (
    PairResult,
    RunConfig,
    RunGate,
    RunInfo,
    RunSegment,
    RunStatus,
)
from arbiter.contract.scores import Band, Evidence, ModelCalls, Score, ScorerKind, ScorerSpec
from arbiter.contract.trajectory import (
    DEFAULT_AGENT_CLASSES,
    AgentIdentity,
    ChatMessage,
    Chunk,
    FlowNode,
    FlowRun,
    Handoff,
    LlmCall,
    Retrieval,
    Step,
    ToolCall,
    Totals,
    Trajectory,
    TrajectorySource,
    TrajectoryStatus,
)
from arbiter.contract.trajectory_records import (
    UNNAMED_AGENT,
    RunKind,
    StoredTrajectory,
    run_hash,
)

__all__ = [
    "AGENT_CLASS_KEY",
    "DEFAULT_AGENT_CLASSES",
    "DIMENSIONS",
    "ONLINE_SCHEMA_VERSION",
    "SCHEMA_VERSION",
    "UNNAMED_AGENT",
    "AgentCase",
    "AgentIdentity",
    "AgentInput",
    "Annotation",
    "AnnotationLabel",
    "Band",
    "Bounds",
    "Callout",
    "Case",
    "ChatMessage",
    "Chunk",
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
    "Evidence",
    "Example",
    "Finding",
    "FlowNode",
    "FlowRun",
    "FrozenRuling",
    "GroundingResult",
    "Handoff",
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
    "LayerPayload",
    "LayerResult",
    "LayerStatus",
    "LlmCall",
    "ModelCalls",
    "Neighbour",
    "OnlineResult",
    "Output",
    "PairResult",
    "Prediction",
    "Rating",
    "Report",
    "Retrieval",
    "RulingVerdict",
    "RunConfig",
    "RunGate",
    "RunInfo",
    "RunKind",
    "RunSegment",
    "RunStatus",
    "Score",
    "ScorerKind",
    "ScorerSection",
    "ScorerSpec",
    "Step",
    "StoredTrajectory",
    "StrictModel",
    "ToolCall",
    "Totals",
    "Trajectory",
    "TrajectorySource",
    "TrajectoryStatus",
    "Usage",
    "Verdict",
    "run_hash",
]
