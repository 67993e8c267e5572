"""The expensive layer that asks the LLM judge panels about an item's agent run.

The judges cost tokens, so they are the one sampled part of online scoring: the layer
is expensive, so the pipeline runs it only on escalated items, which are every item a
cheaper layer condemned (anomalous, or flagged: a heuristic, an ungrounded claim, a
failed or danger-band trajectory score) plus the ``sample_rate`` share of the clean
rest, drawn per item id (:mod:`arbiter.online.sampling`). With ``sample_rate`` 0 the
judges run only when something is wrong. Deterministic scoring is never sampled: it is
the free ``scorers`` layer.

The online engine does not know the judges (a sibling engine): the service layer
hands this layer a :class:`JudgePanels`, which runs every applicable judge at once
under one budget (``arbiter.judges.layer.run_judges``). What the layer records against
the item, in its :class:`JudgedRun` payload: why it was judged, each judge's score, the
judges the budget silenced, and the tokens and cost of every call, summed (cut-off
calls included: they were paid for). The layer's budget floor is the panels' own
budget, so the pipeline's budget always outlasts it and a cut-off keeps what finished.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from pydantic import BaseModel, Field

from arbiter.contract import Example, ModelCalls, Output, Score
from arbiter.contract.trajectory import MAX_STEPS
from arbiter.online.layer import LayerContext, NotRun
from arbiter.online.reading import Item
from arbiter.online.run_bounds import MAX_DEPTH, UnusableRun, bounded_run
from arbiter.online.sampling import Trigger, trigger
from arbiter.online.scorers_layer import carried_run, item_example, run_output

__all__ = ["JudgePanelLayer", "JudgePanels", "JudgedRun", "PanelOutcome"]


@dataclass(frozen=True)
class PanelOutcome:
    """What the judges said of one item (what :meth:`JudgePanels.judge` returns)."""

    scores: Sequence[Score]
    """One per judge, in order: rulings, abstentions, cut-off abstentions."""
    model: ModelCalls
    """Every call of every judge, summed."""
    silenced: Sequence[str] = ()
    """Judges the budget cut off."""


class JudgePanels(Protocol):
    """The judges of the layer, each with its panel of models."""

    @property
    def names(self) -> Sequence[str]:
        """The judges, in the order they report."""
        ...

    @property
    def budget_s(self) -> float:
        """The longest one :meth:`judge` call takes (its budget after its floor)."""
        ...

    async def judge(self, example: Example, output: Output) -> PanelOutcome:
        """Every judge on one item, concurrently; never raises for a judge."""
        ...


class JudgedRun(BaseModel):
    """What the judge panels found about one item, and what asking them cost."""

    trigger: Trigger
    """Why the item reached the judges: ``anomalous``, ``flagged`` or ``sampled``."""
    reasons: list[str] = Field(default_factory=list)
    """The escalation reasons behind the trigger."""
    scores: list[Score] = Field(default_factory=list)
    """One per judge: its consensus ruling (``passed`` None: it abstained)."""
    silenced: list[str] = Field(default_factory=list)
    """Judges the budget cut off (each also an abstention in ``scores``)."""
    model: ModelCalls = Field(default_factory=ModelCalls)
    """Tokens, latency and cost of every judge call on this item, summed."""

    @property
    def rulings(self) -> dict[str, str]:
        """Each judge's verdict: ``pass``, ``fail`` or ``unknown``."""
        return {
            s.name: "unknown" if s.passed is None else "pass" if s.passed else "fail"
            for s in self.scores
        }


class JudgePanelLayer:
    """Asks the judge panels about the escalated items that carry an agent run.

    Args:
        panels: The judges (built by the service layer from the judges engine).
        max_steps: Most steps of a run shown, over its whole hand-off tree.
        max_depth: Deepest hand-off whose steps are shown.
    """

    name = "judge_panel"
    expensive = True

    def __init__(
        self, panels: JudgePanels, *, max_steps: int = MAX_STEPS, max_depth: int = MAX_DEPTH
    ) -> None:
        self.panels = panels
        self.max_steps = max_steps
        self.max_depth = max_depth

    @property
    def budget_floor(self) -> tuple[float, str] | None:
        """The panels' budget: the pipeline's must outlast it to keep their rulings."""
        return (self.panels.budget_s, "the judge panels' budget") if self.panels.names else None

    async def run(self, item: Item, context: LayerContext) -> JudgedRun:
        """Every judge's ruling on the item's run, with the cost of asking."""
        why = trigger(context.reasons)
        if why is None:  # the pipeline escalates before it runs an expensive layer
            raise NotRun("not escalated")
        found, flow = carried_run(item.doc)
        if found is None:
            raise NotRun("no trajectory or flow run to judge")
        try:
            run, _ = bounded_run(
                found, flow=flow, max_steps=self.max_steps, max_depth=self.max_depth
            )
        except UnusableRun as exc:
            raise NotRun(f"unusable run: {exc}", status="error") from None
        example = item_example(item, context.input)
        output = run_output(item.id, run)
        outcome = await self.panels.judge(example, output)
        for score in outcome.scores:
            if score.error is not None:
                context.error(f"{score.name}: {score.error}")
        if outcome.silenced:
            context.note(f"cut off by the judges' budget: {', '.join(outcome.silenced)}")
        judged = JudgedRun(
            trigger=why,
            reasons=list(context.reasons),
            scores=list(outcome.scores),
            silenced=list(outcome.silenced),
            model=outcome.model,
        )
        context.telemetry.record_judged(
            trigger=why,
            rulings=judged.rulings,
            input_tokens=judged.model.input_tokens,
            output_tokens=judged.model.output_tokens,
            cost_usd=judged.model.cost_usd,
        )
        return judged
