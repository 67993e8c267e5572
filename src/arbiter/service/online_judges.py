"""The LLM judge panels in the online pipeline: the judges engine behind the online seam.

The online engine's :class:`~arbiter.online.judge_panel.JudgePanelLayer` asks a
:class:`~arbiter.online.judge_panel.JudgePanels` about each escalated item; this module
is that object, made of the decomposed judges (:mod:`arbiter.judges.judges`) and the
judge layer's :func:`~arbiter.judges.layer.run_judges`: every judge at once, isolated,
under one budget that always holds one full call, every call through the model-call
layer (cache, retries, price table), its tokens and cost counted as it returns.

:func:`online_pipeline` builds a config's pipeline with its ``judge_panel``, so the
judges run on every anomalous or flagged item and on the ``sample_rate`` share of the
clean rest::

    config = OnlineConfig.load("online.json")   # {"judge_panel": {"panel": [...]}, ...}
    pipeline = online_pipeline(config)
    result = await pipeline.evaluate(trajectory_item(run))
    result.payload("judge_panel", JudgedRun).model   # tokens and cost of this item
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from arbiter.contract import Example, Output
from arbiter.errors import InputError
from arbiter.judges.judges import JUDGES, Judge
from arbiter.judges.layer import DEFAULT_MARGIN, effective_budget, run_judges
from arbiter.judges.panel import PanelModel, build_panel
from arbiter.online.build import build_pipeline
from arbiter.online.config import JudgePanelConfig, OnlineConfig
from arbiter.online.judge_panel import JudgePanelLayer, PanelOutcome
from arbiter.online.pipeline import OnlinePipeline
from arbiter.scoring.base import ScoringContext
from arbiter.service.online_agents import TrajectoryScorers, agent_pipeline
from arbiter.telemetry import Telemetry

if TYPE_CHECKING:
    import httpx

    from arbiter.config import Settings
    from arbiter.engines.base import CallGate

__all__ = [
    "OnlineJudges",
    "judge_panel_layer",
    "online_judges",
    "online_pipeline",
]


@dataclass(frozen=True)
class OnlineJudges:
    """Decomposed judges with their panels, asked together under one budget."""

    judges: Sequence[Judge]
    """The judges, in the order they report."""
    budget: float = 25.0
    """The configured budget of one item's judging (raised to its floor)."""
    margin: float = DEFAULT_MARGIN
    """Seconds over the longest call timeout the floor allows."""

    @property
    def names(self) -> Sequence[str]:
        """The judges' names."""
        return [judge.name for judge in self.judges]

    @property
    def budget_s(self) -> float:
        """The budget after its floor: never less than one full call plus the margin."""
        longest = max((judge.call_timeout for judge in self.judges), default=0.0)
        return effective_budget(self.budget, longest, self.margin)

    async def judge(self, example: Example, output: Output) -> PanelOutcome:
        """Every judge on one item at once; a failing or silenced judge abstains."""
        result = await run_judges(
            self.judges, example, output, budget=self.budget, margin=self.margin
        )
        return PanelOutcome(scores=result.scores, model=result.model, silenced=result.silenced)


def online_judges(config: JudgePanelConfig, *, context: ScoringContext) -> OnlineJudges:
    """The judges a ``judge_panel`` config names, each with the panel it describes.

    Args:
        config: Which judges, which models, the budget.
        context: Where the models' providers come from (settings, cache, registry).

    Raises:
        InputError: An unknown judge or a malformed model configuration, named by field.
    """
    names = config.judges if config.judges is not None else list(JUDGES)
    for index, name in enumerate(names):
        if name not in JUDGES:
            known = ", ".join(JUDGES)
            raise InputError(f"judge_panel.judges[{index}]: no judge {name!r}; judges: {known}")
    models: list[PanelModel] = []
    for index, model in enumerate(config.panel):
        try:
            models.append(PanelModel.parse(model))
        except ValueError as exc:
            reason = " ".join(str(exc).split())
            raise InputError(f"judge_panel.panel[{index}]: {reason}") from None
    panel = build_panel(
        models,
        max_members=config.max_members,
        settings=context.resolved_settings(),
        context=context,
    )
    judges = [Judge(JUDGES[name], panel, context) for name in dict.fromkeys(names)]
    return OnlineJudges(judges, budget=config.budget_s, margin=config.margin_s)


def judge_panel_layer(config: JudgePanelConfig, *, context: ScoringContext) -> JudgePanelLayer:
    """The online layer asking the judges of ``config`` (see :func:`online_judges`)."""
    return JudgePanelLayer(online_judges(config, context=context))


def online_pipeline(
    config: OnlineConfig | None = None,
    settings: Settings | None = None,
    *,
    telemetry: Telemetry | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    context: ScoringContext | None = None,
    scorers: TrajectoryScorers | None = None,
    gate: CallGate | None = None,
) -> OnlinePipeline:
    """A config's online pipeline, its ``judge_panel`` included when it has one.

    With a ``judge_panel`` the pipeline is :func:`~arbiter.service.online_agents.agent_pipeline`'s
    (the deterministic trajectory scorers on every item, so that a failed one flags it),
    plus the judges; without one it is :func:`~arbiter.online.build.build_pipeline`'s.

    Args:
        config: What to run; None: heuristics (bundled rules) and grounding only.
        settings: Keys and URLs; read from the environment when needed.
        telemetry: Spans and metrics.
        transport: An httpx transport for the configured layers' backends (tests).
        context: Where the judges' models come from; None: one built from ``settings``
            with the model-call cache, closed with the pipeline.
        scorers: The deterministic trajectory scorers; None: the registry's.
        gate: What every model call of the judges passes, by provider name (``online
            score --rate-limit``: a :class:`~arbiter.engines.rate.LocalGate` here, a
            Ray worker's cluster-wide gate); None: calls pass at once. A ``context``
            given is used as it is (its own gate).

    Raises:
        InputError: ``config`` names something that cannot be built.
    """
    config = config or OnlineConfig()
    if config.judge_panel is None:
        return build_pipeline(config, settings, telemetry=telemetry, transport=transport, gate=gate)
    owned = context is None
    context = context or ScoringContext(settings=settings, gate=gate)
    layer = judge_panel_layer(config.judge_panel, context=context)
    return agent_pipeline(
        config,
        telemetry=telemetry,
        settings=settings,
        transport=transport,
        scorers=scorers,
        layers=[layer],
        closers=[context] if owned else [],
        gate=gate,
    )
