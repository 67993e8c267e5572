"""Online scoring of agent runs: the trajectory scorers on every item, as a library.

:func:`agent_pipeline` builds an online pipeline whose free path holds a
:class:`~arbiter.online.scorers_layer.ScorersLayer` with every deterministic
trajectory scorer of the registry whose factory loads (:func:`trajectory_scorers`
says which did not, and why). With telemetry on, each item's verdicts go out as
OpenTelemetry ``gen_ai.evaluation.result`` events linked to the trace the run was
imported from (:func:`evaluation_events`), and counted by agent, scorer and band
(``arbiter.trajectory.verdicts``). The LLM judge panels join as an expensive layer
(``layers=``, :func:`arbiter.service.online_judges.online_pipeline` builds it from a
config's ``judge_panel``) and run on the items a scorer failed, and on the sampled ones::

    pipeline = agent_pipeline(telemetry=Telemetry.from_env())
    result = await score_trajectory(trajectory, pipeline=pipeline)
    result.payload("scorers", ScorersFinding).scores
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from arbiter.contract import UNNAMED_AGENT, FlowRun, OnlineResult, Prediction, Score, Trajectory
from arbiter.contract.trajectory import MAX_STEPS
from arbiter.errors import InputError
from arbiter.online.build import build_pipeline
from arbiter.online.config import OnlineConfig
from arbiter.online.layer import Layer
from arbiter.online.pipeline import OnlinePipeline
from arbiter.online.rules import HeuristicRules
from arbiter.online.scorers_layer import Applies, OnScores, ScorersLayer
from arbiter.scoring.base import BuiltScorer
from arbiter.scoring.registry import ScorerRegistry
from arbiter.service.scoring import scorer_registry
from arbiter.telemetry import Telemetry
from arbiter.telemetry_eval import emit_evaluation_results

if TYPE_CHECKING:
    import httpx

    from arbiter.config import Settings
    from arbiter.engines.base import CallGate

__all__ = [
    "TrajectoryScorers",
    "agent_pipeline",
    "evaluation_events",
    "score_trajectory",
    "trajectory_item",
    "trajectory_scorers",
]

_log = logging.getLogger(__name__)

AgentRun = Trajectory | FlowRun


@dataclass
class TrajectoryScorers:
    """The trajectory scorers an online pipeline runs, and those it could not build."""

    scorers: list[BuiltScorer] = field(default_factory=list)
    """Built with their defaults, in catalogue order."""
    applies: dict[str, Applies] = field(default_factory=dict)
    """Per scorer, whether it measures runs of an agent class (the registry's rule)."""
    skipped: dict[str, str] = field(default_factory=dict)
    """Scorers left out, with why: not loadable, needing arguments, or asking a model."""


def trajectory_scorers(
    registry: ScorerRegistry | None = None, *, names: Sequence[str] | None = None
) -> TrajectoryScorers:
    """Every deterministic trajectory scorer whose factory loads, built with its defaults.

    A scorer that cannot be loaded (its module missing or broken), that needs
    arguments, or that asks a model is left out and named in ``skipped``; none raises.

    Args:
        registry: Where the names are looked up; None: :func:`scorer_registry`.
        names: The scorers wanted; None: the whole trajectory catalogue.
    """
    from arbiter.trajectories.scorers import TRAJECTORY_SCORERS

    registry = registry or scorer_registry()
    found = TrajectoryScorers()
    for name in TRAJECTORY_SCORERS if names is None else names:
        try:
            factory = registry.factory_of(name)
            built = factory()
        except InputError as exc:
            found.skipped[name] = str(exc)
            continue
        except Exception as exc:  # a scorer module's own bug must not stop the others
            found.skipped[name] = f"cannot be built: {type(exc).__name__}: {exc}"
            continue
        if factory.kind != "deterministic":
            found.skipped[name] = "asks a model: the judge layer's, not this one's"
            continue
        found.scorers.append(built)
        found.applies[built.name] = factory.applies_to_class
    return found


def evaluation_events(telemetry: Telemetry) -> OnScores:
    """A hook emitting a run's scores as ``gen_ai.evaluation.result`` events.

    The events are parented to the run's own span: the first of
    ``source.span_ids`` (the span the importer built the run from) in
    ``source.trace_id``. Each score is also counted in ``arbiter.trajectory.verdicts``
    by agent, scorer, band and outcome. Never raises.
    """

    def emit(run: AgentRun, scores: Sequence[Score]) -> None:
        agent = run.agent.name or UNNAMED_AGENT
        for score in scores:
            outcome = "abstain" if score.passed is None else "pass" if score.passed else "fail"
            telemetry.record_verdict(
                agent=agent, scorer=score.name, band=score.band or "none", outcome=outcome
            )
        source = run.source
        span_ids = source.span_ids if source is not None else []
        attributes: dict[str, str | int | float | bool] = {}
        if run.agent.name:
            attributes["gen_ai.agent.name"] = run.agent.name
        if run.agent.version:
            attributes["gen_ai.agent.version"] = run.agent.version
        if isinstance(run, Trajectory) and run.conversation_id:
            attributes["gen_ai.conversation.id"] = run.conversation_id
        emit_evaluation_results(
            scores,
            trace_id=source.trace_id if source is not None else None,
            span_id=span_ids[0] if span_ids else None,
            telemetry=telemetry,
            attributes=attributes,
        )

    return emit


def agent_pipeline(
    config: OnlineConfig | None = None,
    *,
    scorers: TrajectoryScorers | None = None,
    registry: ScorerRegistry | None = None,
    telemetry: Telemetry | None = None,
    assertions: Mapping[str, Any] | None = None,
    max_steps: int = MAX_STEPS,
    time_budget_s: float = 2.0,
    agent_classes: Collection[str] | None = None,
    layers: Sequence[Layer] = (),
    settings: Settings | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    closers: Sequence[object] = (),
    gate: CallGate | None = None,
) -> OnlinePipeline:
    """An online pipeline scoring each item's agent run with the trajectory scorers.

    Args:
        config: The rest of the pipeline (rules, sampling, judges); None: no
            classifier rules and no grounding, only the scorers.
        scorers: The scorers; None: :func:`trajectory_scorers` of ``registry``
            (those left out are logged once, as a warning).
        registry: Where the scorers are looked up when ``scorers`` is None.
        telemetry: Spans and metrics; when enabled, every item's verdicts are also
            emitted as evaluation events.
        assertions: Assertions every item is scored with (an item's own override them).
        max_steps: Most steps of a run scored, over its hand-off tree.
        time_budget_s: Bound on one item's scoring.
        agent_classes: Agent classes a run may declare; None: the contract's default.
        layers: More layers: an expensive one (a trajectory judge) runs on the items a
            scorer failed, and on the sampled ones.
        settings: Keys and URLs for the layers ``config`` names.
        transport: An httpx transport for them (tests).
        closers: Backends of ``layers`` the pipeline closes with its own.
        gate: What the judge chain's model calls pass, by provider name (``online score
            --rate-limit``); None: they pass at once. The ``layers`` hold their own.

    Raises:
        InputError: ``config`` names something that cannot be built.
    """
    config = config or OnlineConfig(rules=HeuristicRules(rules=[]), grounding=None)
    selection = scorers or trajectory_scorers(registry)
    if scorers is None and selection.skipped:
        _log.warning(
            "online agent scoring runs %d trajectory scorers; left out: %s",
            len(selection.scorers),
            "; ".join(f"{name} ({_brief(why)})" for name, why in selection.skipped.items()),
        )
    on_scores = (
        evaluation_events(telemetry) if telemetry is not None and telemetry.enabled else None
    )
    layer = ScorersLayer(
        selection.scorers,
        applies=selection.applies,
        assertions=assertions,
        max_steps=max_steps,
        time_budget_s=time_budget_s,
        agent_classes=agent_classes,
        on_scores=on_scores,
    )
    return build_pipeline(
        config,
        settings,
        telemetry=telemetry,
        transport=transport,
        layers=[layer, *layers],
        closers=closers,
        gate=gate,
    )


def trajectory_item(
    run: AgentRun,
    *,
    input: Mapping[str, Any] | None = None,
    assertions: Mapping[str, Any] | None = None,
) -> Prediction:
    """An agent run as an online item: its status is the label, the run in metadata.

    Args:
        run: The trajectory or flow run.
        input: The query, for the scorers that read it.
        assertions: The case's assertions for this run.
    """
    metadata: dict[str, Any] = {"flow" if isinstance(run, FlowRun) else "trajectory": run}
    if input is not None:
        metadata["input"] = dict(input)
    if assertions is not None:
        metadata["assertions"] = dict(assertions)
    return Prediction(id=_run_id(run), label=run.status, metadata=metadata)


async def score_trajectory(
    run: AgentRun,
    *,
    pipeline: OnlinePipeline,
    input: Mapping[str, Any] | None = None,
    assertions: Mapping[str, Any] | None = None,
) -> OnlineResult:
    """Score one agent run online; never raises (the pipeline's guarantee).

    Args:
        run: The trajectory or flow run.
        pipeline: Built once with :func:`agent_pipeline`.
        input: The query, for the scorers that read it.
        assertions: The case's assertions for this run.
    """
    item = trajectory_item(run, input=input, assertions=assertions)
    return await pipeline.evaluate(item, input=input)


def _run_id(run: AgentRun) -> str:
    """The run's id, else its trace's, else a content hash."""
    if run.id:
        return run.id
    if run.source is not None and run.source.trace_id:
        return run.source.trace_id
    digest = hashlib.sha256(run.model_dump_json().encode("utf-8")).hexdigest()[:32]
    return f"sha256:{digest}"


def _brief(reason: str, limit: int = 160) -> str:
    line = " ".join(reason.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
