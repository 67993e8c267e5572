"""The grounding gate's benchmark: how much drift the trigger sends to the judge.

Each case is an answer with its scope, question and tool calls, labelled ``drifted`` or
``faithful`` as the scope judge would rule (the label is the ground truth, standing in
for a judge-confirmed ruling). Every case is run through :func:`~arbiter.judges.grounding_gate.gate`
twice: in ``observe`` (the baseline: what the trigger fires on, nothing altered) and in
``enforce`` with an *oracle* judge that answers the label. The figures:

- confusion matrix of the trigger (``needs_judge``) against the label: ``tp`` drifted and
  triggered, ``fn`` drifted and not triggered, ``fp`` faithful and triggered, ``tn``
  faithful and not triggered;
- trigger recall ``tp / (tp + fn)``: of the drifted answers, the share that reaches the
  judge (and so can be caught);
- trigger precision ``tp / (tp + fp)``: of the judge calls, the share spent on a drift;
- judge call rate ``(tp + fp) / n``: the share of answers that cost a judge call;
- baseline drift rate: drifted answers delivered in ``observe`` over ``n`` (all of them);
- enforce drift rate: drifted answers still delivered in ``enforce`` over ``n`` (the
  unadjudicated drift: the trigger missed them, so no judge saw them);
- net drop: baseline minus enforce drift rate, in points of ``n``; relative drop: the
  net drop over the baseline;
- faithful withheld: faithful answers ``enforce`` withheld (an honest refusal withheld
  would show here; with an oracle judge it can only be 0 if the gate defers to it).

Every rate is a :class:`~arbiter.scoring.rates.Rate`: its count, its n and a 95% Wilson
interval; over zero cases it is None, never 0. False negatives and false positives are
listed by id.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from arbiter.contract import ToolCall
from arbiter.judges.gate_triggers import GateScope, TriggerReason
from arbiter.judges.grounding_gate import GateAction, GateDecision, GateMode, ScopeRuling, gate
from arbiter.scoring.rates import Rate

__all__ = ["CaseOutcome", "GateBenchReport", "GateCase", "bench_gate"]

Label = Literal["drifted", "faithful"]


class GateCase(BaseModel):
    """One labelled benchmark case."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1, max_length=200)
    """The case's id, unique in its file."""
    label: Label
    """The ground truth: did the answer's subject leave the trusted scope."""
    kind: str = Field(default="", max_length=100)
    """The family of the case (``honest_refusal``, ``answer_only_drift``, ...)."""
    scope: GateScope
    """The trusted scope."""
    question: str = Field(max_length=100_000)
    """What the user asked."""
    tool_calls: tuple[ToolCall, ...] = ()
    """The calls the agent made."""
    answer: str = Field(max_length=1_000_000)
    """The answer the gate sees."""


class CaseOutcome(BaseModel):
    """What the gate did with one case."""

    id: str
    kind: str
    label: Label
    triggered: bool
    """Whether the trigger set ``needs_judge``."""
    reasons: tuple[TriggerReason, ...]
    out_of_scope: tuple[str, ...]
    """The out-of-scope sources and answer references that fired it."""
    enforce_action: GateAction
    """The action in ``enforce`` with the oracle judge."""


class GateBenchReport(BaseModel):
    """The figures of one benchmark run (see the module docstring for each)."""

    n: int
    drifted: int
    faithful: int
    tp: int
    fn: int
    fp: int
    tn: int
    trigger_recall: Rate
    trigger_precision: Rate
    judge_call_rate: Rate
    baseline_drift_rate: Rate
    enforce_drift_rate: Rate
    net_drop: float | None
    """Baseline minus enforce drift rate (points of n); None on an empty set."""
    relative_drop: float | None
    """The net drop over the baseline drift rate; None without drifted cases."""
    faithful_withheld: int
    false_negatives: tuple[str, ...]
    """Ids of drifted cases the trigger missed."""
    false_positives: tuple[str, ...]
    """Ids of faithful cases the trigger sent to the judge."""
    cases: tuple[CaseOutcome, ...]


class _Oracle:
    """A scope judge that answers the case's label (the judge-confirmed ruling)."""

    def __init__(self, label: Label) -> None:
        self._label: Label = label

    async def __call__(self, *, question: str, answer: str, scope: GateScope) -> ScopeRuling:
        return ScopeRuling(verdict=self._label, reasoning="oracle: the case's label")


async def bench_gate(cases: Sequence[GateCase]) -> GateBenchReport:
    """Run every case through the gate in observe and in enforce (oracle judge).

    Args:
        cases: The labelled cases.

    Returns:
        The report, every case's outcome included.
    """
    outcomes: list[CaseOutcome] = []
    baseline_drift = enforce_drift = faithful_withheld = 0
    for case in cases:
        observed = await _run(case, "observe")
        enforced = await _run(case, "enforce")
        delivered = enforced.action in ("deliver", "deliver_annotated")
        if case.label == "drifted":
            baseline_drift += observed.action == "deliver"
            enforce_drift += delivered
        else:
            faithful_withheld += not delivered
        outcomes.append(
            CaseOutcome(
                id=case.id,
                kind=case.kind,
                label=case.label,
                triggered=observed.needs_judge,
                reasons=observed.reasons,
                out_of_scope=tuple(
                    dict.fromkeys(
                        (*observed.out_of_scope_sources, *observed.out_of_scope_references)
                    )
                ),
                enforce_action=enforced.action,
            )
        )
    return _report(outcomes, baseline_drift, enforce_drift, faithful_withheld)


async def _run(case: GateCase, mode: GateMode) -> GateDecision:
    return await gate(
        case.answer,
        question=case.question,
        tool_calls=case.tool_calls,
        scope=case.scope,
        mode=mode,
        judge=_Oracle(case.label),
    )


def _report(
    outcomes: list[CaseOutcome], baseline_drift: int, enforce_drift: int, faithful_withheld: int
) -> GateBenchReport:
    drifted = [o for o in outcomes if o.label == "drifted"]
    faithful = [o for o in outcomes if o.label == "faithful"]
    tp = sum(o.triggered for o in drifted)
    fp = sum(o.triggered for o in faithful)
    n = len(outcomes)
    baseline = Rate.of(baseline_drift, n)
    enforce = Rate.of(enforce_drift, n)
    net = None if n == 0 else (baseline_drift - enforce_drift) / n
    return GateBenchReport(
        n=n,
        drifted=len(drifted),
        faithful=len(faithful),
        tp=tp,
        fn=len(drifted) - tp,
        fp=fp,
        tn=len(faithful) - fp,
        trigger_recall=Rate.of(tp, len(drifted)),
        trigger_precision=Rate.of(tp, tp + fp),
        judge_call_rate=Rate.of(tp + fp, n),
        baseline_drift_rate=baseline,
        enforce_drift_rate=enforce,
        net_drop=net,
        relative_drop=None
        if not baseline_drift
        else (baseline_drift - enforce_drift) / baseline_drift,
        faithful_withheld=faithful_withheld,
        false_negatives=tuple(o.id for o in drifted if not o.triggered),
        false_positives=tuple(o.id for o in faithful if o.triggered),
        cases=tuple(outcomes),
    )
