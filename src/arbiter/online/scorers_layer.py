"""The free layer that scores an item's agent run with deterministic scorers.

Deterministic scoring is free, so it is never sampled: every item that carries a run
gets every scorer that applies to it. The scorers are given (the online engine does not
know the trajectory scorers; the service layer builds them from the registry), as are
the rule for which apply to a run's agent class and a hook that receives the scores
(the service emits them as OpenTelemetry evaluation events).

An item carries its run as ``trajectory`` (or ``flow``) at the top of a raw item, or
under its ``metadata`` (the one place a ``Prediction`` can hold it)::

    {"id": "turn-7", "label": "completed", "trajectory": {...},
     "metadata": {"input": {"query": "..."}, "assertions": {"max_cost_usd": 0.5}}}

``metadata.assertions`` are the case's assertions for this item, over the layer's own
(the global default thresholds); ``metadata.input`` (or the caller's ``input``) is the
query. Bounded per item: the run is cut to ``max_steps`` (see
:mod:`arbiter.online.run_bounds`), and scoring stops at ``time_budget_s``, the scorers
left being recorded as cut-off abstentions. A scorer that raises gives an errored score.

The LLM judge panels are an expensive layer beside this one
(:class:`~arbiter.online.judge_panel.JudgePanelLayer`): a failed score (a danger band
or a failed check) flags the item, which escalates it, so the judges refine what the
rules condemned, and read the same run (:func:`carried_run`, :func:`item_example`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from arbiter.contract import Example, FlowRun, LayerPayload, Output, Score, Trajectory
from arbiter.contract.trajectory import MAX_STEPS
from arbiter.online.layer import LayerContext, NotRun
from arbiter.online.reading import Item, describe_error
from arbiter.online.run_bounds import MAX_DEPTH, AgentRun, UnusableRun, bounded_run
from arbiter.params import check_number, invalid
from arbiter.scoring.base import Scorer

__all__ = [
    "Applies",
    "OnScores",
    "ScorersFinding",
    "ScorersLayer",
    "carried_run",
    "item_example",
    "run_output",
]

Applies = Callable[[str | None], bool]
"""Whether a scorer applies to a run of this agent class (None: unclassed)."""
OnScores = Callable[[AgentRun, Sequence[Score]], None]
"""Receives each run and the verdicts of the scorers that applied to it."""

_SHOWN_FAILURES = 5


class ScorersFinding(BaseModel):
    """What the scorers layer found about one item's agent run (its payload ``scorers``;
    an offline agent run with its scores is ``service.agents.ScoredRun``)."""

    flagged: bool
    """A scorer failed (a danger band or a failed check): the item is escalated."""
    run_id: str | None = None
    """The run's own id, when it has one."""
    agent_class: str | None = None
    """The run's agent class (``flow`` for a flow run), when known."""
    scores: list[Score] = Field(default_factory=list)
    """Every applicable scorer's verdict, in the layer's order (cut-off ones included)."""
    not_applicable: list[str] = Field(default_factory=list)
    """Scorers that do not measure runs of this agent class."""
    cut: list[str] = Field(default_factory=list)
    """What was cut from the run to bound it, one line each."""


class ScorersLayer:
    """Scores the item's trajectory or flow run with every applicable scorer.

    Args:
        scorers: Deterministic scorers (model scorers belong to the judge layer).
        applies: Per scorer name, whether it applies to an agent class; a scorer not
            named applies to every run, and says so itself when it does not
            (``metadata["applicable"] = False``).
        assertions: The assertions every item is scored with (default thresholds);
            an item's ``metadata.assertions`` override them key by key.
        max_steps: Most steps of a run scored, over its whole hand-off tree.
        max_depth: Deepest hand-off whose steps are scored.
        time_budget_s: Bound on one item's scoring.
        agent_classes: Agent classes a run may declare; None: the contract's default.
        on_scores: Called with each run and its scores; what it raises is recorded.
        clock: Seconds, monotonic (tests pass their own).

    Raises:
        InvalidParameter: A scorer asks a model, two share a name, or a bound is not
            positive.
    """

    name = "scorers"
    expensive = False
    budget_floor = None

    def __init__(
        self,
        scorers: Sequence[Scorer],
        *,
        applies: Mapping[str, Applies] | None = None,
        assertions: Mapping[str, Any] | None = None,
        max_steps: int = MAX_STEPS,
        max_depth: int = MAX_DEPTH,
        time_budget_s: float = 2.0,
        agent_classes: Collection[str] | None = None,
        on_scores: OnScores | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        owner = "ScorersLayer"
        names = [scorer.spec.label for scorer in scorers]
        if len(set(names)) != len(names):
            raise invalid("scorers", owner, "scorers with unique names", names)
        asking = [s.spec.label for s in scorers if s.spec.kind != "deterministic"]
        if asking:
            raise invalid("scorers", owner, "deterministic scorers (judges are a layer)", asking)
        check_number(max_steps, "max_steps", owner, minimum=1, integer=True)
        check_number(max_depth, "max_depth", owner, minimum=0, integer=True)
        check_number(time_budget_s, "time_budget_s", owner, minimum=0.0, open_min=True)
        self._scorers = [(scorer.spec.label, scorer) for scorer in scorers]
        self._applies = dict(applies or {})
        self._assertions = dict(assertions or {})
        self.max_steps = max_steps
        self.max_depth = max_depth
        self.time_budget_s = time_budget_s
        self._agent_classes = agent_classes
        self._on_scores = on_scores
        self._clock = clock

    @property
    def scorer_names(self) -> list[str]:
        """The scorers' names, in the order they run."""
        return [name for name, _ in self._scorers]

    async def run(self, item: Item, context: LayerContext) -> LayerPayload | None:
        """The run's scores; abstains (``NotRun``) when the item carries no run."""
        found, flow = carried_run(item.doc)
        if found is None:
            raise NotRun("no trajectory or flow run")
        try:
            run, cut = bounded_run(
                found,
                flow=flow,
                max_steps=self.max_steps,
                max_depth=self.max_depth,
                agent_classes=self._agent_classes,
            )
        except UnusableRun as exc:
            what = "flow run" if flow else "trajectory"
            raise NotRun(f"unusable {what}: {exc}", status="error") from None
        for line in cut:
            context.note(line)
        agent_class = "flow" if isinstance(run, FlowRun) else run.agent.agent_class
        applicable, skipped = self._applicable(agent_class)
        example = item_example(item, context.input, self._assertions)
        output = run_output(item.id, run)
        scores = await self._score(applicable, example, output)
        kept: list[Score] = []
        cut_off = 0
        for score in scores:
            if score.metadata.get("cut_off") is True:
                cut_off += 1
            if score.metadata.get("applicable") is False:
                skipped.append(score.name)
            else:
                kept.append(score)
            if score.error is not None:
                context.error(f"{score.name}: {score.error}")
        if cut_off:
            context.note(f"{cut_off} scorers cut off at the {self.time_budget_s:g}s budget")
        failed = [score.name for score in kept if score.passed is False]
        if failed:
            context.flag(_failures(failed))
        if self._on_scores is not None:
            try:
                self._on_scores(run, kept)
            except Exception as exc:  # the hook reports; it must not cost the verdicts
                context.error(describe_error(exc), part="on_scores")
        return ScorersFinding(
            flagged=bool(failed),
            run_id=run.id,
            agent_class=agent_class,
            scores=kept,
            not_applicable=skipped,
            cut=cut,
        )

    def _applicable(self, agent_class: str | None) -> tuple[list[tuple[str, Scorer]], list[str]]:
        applicable: list[tuple[str, Scorer]] = []
        skipped: list[str] = []
        for name, scorer in self._scorers:
            applies = self._applies.get(name)
            if applies is None or applies(agent_class):
                applicable.append((name, scorer))
            else:
                skipped.append(name)
        return applicable, skipped

    async def _score(
        self, scorers: Sequence[tuple[str, Scorer]], example: Example, output: Output
    ) -> list[Score]:
        """Each scorer in turn until the time budget runs out; the rest are cut off."""
        scores: list[Score] = []
        started = self._clock()
        try:
            # Deterministic scorers never wait, so the clock bounds them between calls;
            # the timeout bounds a scorer that does wait.
            async with asyncio.timeout(self.time_budget_s):
                for name, scorer in scorers:
                    if self._clock() - started >= self.time_budget_s:
                        break
                    scores.append(await _one(name, scorer, example, output))
        except TimeoutError:
            pass
        reason = f"cut off: the item's {self.time_budget_s:g}s scoring budget ran out"
        for name, _ in scorers[len(scores) :]:
            scores.append(Score(name=name, explanation=reason, metadata={"cut_off": True}))
        return scores


async def _one(name: str, scorer: Scorer, example: Example, output: Output) -> Score:
    """One scorer's verdict; whatever it raises or returns amiss is an errored score."""
    try:
        score = await scorer(example, output)
    except Exception as exc:
        return Score(name=name, error=describe_error(exc))
    if not isinstance(score, Score):
        return Score(name=name, error=f"TypeError: returned {type(score).__name__}, not a Score")
    score.name = name
    return score


def run_output(item_id: str, run: AgentRun) -> Output:
    """What an agent run produced, as the scorers and judges read it: the run alone.

    Args:
        item_id: The id of the item (or stored run) it came from.
        run: The trajectory or flow run, already bounded.
    """
    # Constructed, not validated: the id is the item's, whatever characters it holds.
    return Output.model_construct(
        id=item_id,
        label=None,
        text=None,
        raw=None,
        confidence=None,
        trajectory=run if isinstance(run, Trajectory) else None,
        flow=run if isinstance(run, FlowRun) else None,
        metadata={},
    )


def item_example(
    item: Item, input: Mapping[str, Any] | None, defaults: Mapping[str, Any] | None = None
) -> Example:
    """The case an online item stands for: its query and its assertions.

    Args:
        item: The item as read.
        input: The caller's input; None: the item's ``metadata.input``.
        defaults: Assertions the item's own ``metadata.assertions`` override key by key.
    """
    metadata = item.doc.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    query = input if input is not None else metadata.get("input")
    declared = metadata.get("assertions")
    assertions = {**(defaults or {}), **(declared if isinstance(declared, Mapping) else {})}
    # Constructed, not validated: the id is the item's, whatever characters it holds.
    return Example.model_construct(
        id=item.id,
        input=dict(query) if isinstance(query, Mapping) else {},
        expected_label=None,
        expected=assertions or None,
        output=None,
        cohort=None,
        metadata={},
    )


def carried_run(doc: Mapping[str, Any]) -> tuple[object | None, bool]:
    """The run an item carries and whether it is a flow: top level first, then metadata."""
    metadata = doc.get("metadata")
    for where in (doc, metadata if isinstance(metadata, Mapping) else {}):
        trajectory = where.get("trajectory")
        if trajectory is not None:
            return trajectory, False
        flow = where.get("flow")
        if flow is not None:
            return flow, True
    return None, False


def _failures(names: Sequence[str]) -> str:
    shown = ", ".join(names[:_SHOWN_FAILURES])
    more = len(names) - _SHOWN_FAILURES
    return f"failed {shown}" + (f" and {more} more" if more > 0 else "")
