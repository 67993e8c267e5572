"""The grounding gate: called before an answer is delivered, it may annotate or withhold it.

Modes, lowest to highest (reference §6a.2-6a.3):

- ``off``: nothing is computed; the answer is delivered.
- ``observe`` (default): the trigger is computed and the decision recorded; the answer
  is delivered unchanged, and the judge is never called.
- ``annotate``: a triggered answer is delivered with a note appended.
- ``enforce``: a triggered answer goes to the scope judge: ``drifted`` withholds it,
  ``faithful`` delivers it intact (so an honest "not in scope" survives), and an
  ``unknown`` ruling, a missing or failing judge, or one slower than ``timeout``
  annotates it. Only a judge-confirmed drift is ever withheld.
- ``review``: as enforce, and a withheld answer is parked for a human, with its owner.

The trigger never blocks by itself (:mod:`arbiter.judges.gate_triggers`). The gate
fails open: an error of the trigger, of the gate itself, of the sink or of telemetry
delivers the original answer untouched, the error named in the decision. Every
decision is a :class:`GateDecision`, handed to an injected ``sink`` (persistence is the
caller's: the store has no table for decisions yet) and exported as a span
``arbiter.grounding_gate`` carrying its attributes.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import math
from collections.abc import Awaitable, Callable, Sequence
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict

from arbiter.contract import ToolCall
from arbiter.errors import InputError
from arbiter.judges.gate_triggers import GateScope, TriggerReason, scope_trigger
from arbiter.telemetry import Telemetry

__all__ = [
    "ANNOTATION",
    "DEFAULT_TIMEOUT",
    "GATE_MODES",
    "WITHHELD",
    "WITHHELD_FOR_REVIEW",
    "GateAction",
    "GateDecision",
    "GateMode",
    "GateSink",
    "JudgeOutcome",
    "ParkedAnswer",
    "ScopeJudge",
    "ScopeRuling",
    "decision_attributes",
    "gate",
]

_log = logging.getLogger(__name__)

GateMode = Literal["off", "observe", "annotate", "enforce", "review"]
"""How far the gate may act on an answer (see the module docstring)."""
GATE_MODES: tuple[GateMode, ...] = ("off", "observe", "annotate", "enforce", "review")
GateAction = Literal["deliver", "deliver_annotated", "withhold", "park_for_review"]
"""What the gate did with the answer."""
JudgeOutcome = Literal["not_called", "faithful", "drifted", "unknown", "unavailable", "timeout"]
"""The scope judge's ruling, or why there is none (``unavailable``: no judge, or it failed)."""

DEFAULT_TIMEOUT = 10.0
"""Seconds the scope judge may take before its ruling counts as ``timeout``."""
ANNOTATION = (
    "\n\n[Note: part of this answer may rest on data outside its trusted scope; "
    "check it before relying on it.]"
)
"""Appended to an annotated answer."""
WITHHELD = (
    "This answer was withheld: it drew on data outside the trusted scope it is allowed to use."
)
"""Delivered in place of a withheld answer."""
WITHHELD_FOR_REVIEW = WITHHELD + " It has been kept for review."
"""Delivered in place of an answer parked for review."""
_MAX_ERROR = 300
"""Characters kept of an error message in a decision."""
_MAX_REASONING = 2_000
"""Characters kept of the judge's reasoning."""


class ScopeRuling(BaseModel):
    """What a scope judge answered on one answer."""

    model_config = ConfigDict(frozen=True)

    verdict: Literal["faithful", "drifted", "unknown"]
    """Whether the answer's subject stays within the trusted scope."""
    reasoning: str = ""
    """Why, in the judge's words (model text: untrusted)."""

    @classmethod
    def from_vote(
        cls, vote: Literal["pass", "fail", "unknown"], reasoning: str = ""
    ) -> ScopeRuling:
        """A ruling from a panel vote of the scope_faithfulness judge (pass is faithful)."""
        verdicts: dict[str, Literal["faithful", "drifted", "unknown"]] = {
            "pass": "faithful",
            "fail": "drifted",
        }
        return cls(verdict=verdicts.get(vote, "unknown"), reasoning=reasoning)


class ScopeJudge(Protocol):
    """The scope_faithfulness judge as the gate calls it: question, answer, trusted scope."""

    async def __call__(self, *, question: str, answer: str, scope: GateScope) -> ScopeRuling:
        """Rule on whether ``answer`` stays within ``scope`` (domain only, never values)."""
        ...


class ParkedAnswer(BaseModel):
    """A withheld answer kept for a human reviewer (mode ``review``)."""

    model_config = ConfigDict(frozen=True)

    owner: str
    """Who the answer belongs to: only they (or their reviewers) may see it."""
    question: str
    """What was asked."""
    answer: str
    """The withheld original, verbatim."""


class GateDecision(BaseModel):
    """One decision of the gate: what it found, what the judge ruled, what it delivered."""

    model_config = ConfigDict(frozen=True)

    schema_version: Literal[1] = 1
    """Version of this record's shape."""
    mode: GateMode
    """The mode the gate ran in."""
    action: GateAction
    """What it did with the answer."""
    delivered: str
    """The text delivered to the user."""
    needs_judge: bool = False
    """Whether the trigger fired."""
    reasons: tuple[TriggerReason, ...] = ()
    """Why the trigger fired."""
    out_of_scope_sources: tuple[str, ...] = ()
    """Sources the tool calls touched outside the scope."""
    references: tuple[str, ...] = ()
    """The answer's structural data references."""
    out_of_scope_references: tuple[str, ...] = ()
    """Those the scope does not cover."""
    unsupported_figures: int = 0
    """Figures no tool result holds (observe-only)."""
    scope_declared: bool = True
    """False when no scope was declared: the gate abstained."""
    judge: JudgeOutcome = "not_called"
    """The scope judge's ruling, or why there is none."""
    judge_reasoning: str = ""
    """The judge's reasoning, clipped."""
    owner: str | None = None
    """Whose answer this is (required in review mode)."""
    parked: ParkedAnswer | None = None
    """The withheld original, when the answer was parked for review."""
    errors: tuple[str, ...] = ()
    """What failed (trigger, judge, sink, telemetry); a gate error delivered the original."""

    @property
    def altered(self) -> bool:
        """Whether the user got something other than the answer as written."""
        return self.action != "deliver"


GateSink = Callable[[GateDecision], "Awaitable[None] | None"]
"""Where decisions go (a store, a queue, a list in a test); may be sync or async."""


async def gate(
    answer: str,
    *,
    question: str,
    tool_calls: Sequence[ToolCall],
    scope: GateScope,
    mode: GateMode = "observe",
    judge: ScopeJudge | None = None,
    timeout: float = DEFAULT_TIMEOUT,  # noqa: ASYNC109 - bounds the judge call only
    owner: str | None = None,
    sink: GateSink | None = None,
    telemetry: Telemetry | None = None,
) -> GateDecision:
    """Decide what to deliver for ``answer``; never raises once its arguments are valid.

    Args:
        answer: The answer about to be delivered.
        question: What the user asked (the judge reads it).
        tool_calls: The calls the agent made for this answer.
        scope: The trusted scope; with nothing declared the gate abstains (delivers).
        mode: ``off``, ``observe``, ``annotate``, ``enforce`` or ``review``.
        judge: The scope judge (enforce and review); without one a trigger annotates.
        timeout: Seconds the judge may take.
        owner: Whose answer it is; required in ``review`` (the parked record carries it).
        sink: Receives every decision (not in ``off``); its failure is recorded, not raised.
        telemetry: Where the decision's span goes; none when None.

    Returns:
        The decision; ``decision.delivered`` is what to show the user.

    Raises:
        InputError: An unknown mode, a timeout that is not a positive number, or
            ``review`` without an owner (a misconfigured gate, not a gate failure).

    Examples:
        >>> import asyncio
        >>> decision = asyncio.run(gate("From crm.accounts: 3.", question="How many?",
        ...     tool_calls=[], scope=GateScope(databases=("sales",))))
        >>> decision.action, decision.needs_judge, decision.out_of_scope_references
        ('deliver', True, ('crm.accounts',))
    """
    if mode not in GATE_MODES:
        raise InputError(f"The 'mode' parameter of gate must be one of {GATE_MODES}. Got {mode!r}.")
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        raise InputError(
            f"The 'timeout' parameter of gate must be a positive number. Got {timeout!r}."
        )
    if not math.isfinite(timeout):
        raise InputError(f"The 'timeout' parameter of gate must be finite. Got {timeout!r}.")
    if mode == "review" and not owner:
        raise InputError("The 'owner' parameter of gate is required in review mode. Got None.")
    if mode == "off":
        return GateDecision(mode="off", action="deliver", delivered=answer, owner=owner)
    try:
        decision = await _decide(answer, question, tool_calls, scope, mode, judge, timeout, owner)
    except Exception as exc:  # fail open: a gate error must never break the turn
        decision = _untouched(answer, mode, owner, f"gate: {_error(exc)}")
    if sink is not None:
        decision = await _store(decision, sink)
    if telemetry is not None:
        decision = _export(decision, telemetry)
    return decision


async def _decide(
    answer: str,
    question: str,
    tool_calls: Sequence[ToolCall],
    scope: GateScope,
    mode: GateMode,
    judge: ScopeJudge | None,
    timeout: float,  # noqa: ASYNC109 - bounds the judge call only
    owner: str | None,
) -> GateDecision:
    try:
        trigger = scope_trigger(answer, tool_calls, scope)
    except Exception as exc:
        return _untouched(answer, mode, owner, f"trigger: {_error(exc)}")
    found = GateDecision(
        mode=mode,
        action="deliver",
        delivered=answer,
        owner=owner,
        scope_declared=scope.declared,
        needs_judge=trigger.needs_judge,
        reasons=trigger.reasons,
        out_of_scope_sources=trigger.out_of_scope_sources,
        references=trigger.references,
        out_of_scope_references=trigger.out_of_scope_references,
        unsupported_figures=trigger.unsupported_figures,
    )
    if not trigger.needs_judge or mode == "observe":
        return found
    annotated = {"action": "deliver_annotated", "delivered": answer + ANNOTATION}
    if mode == "annotate":
        return found.model_copy(update=annotated)
    outcome, reasoning, errors = await _ask(judge, question, answer, scope, timeout)
    ruled = found.model_copy(
        update={"judge": outcome, "judge_reasoning": reasoning, "errors": errors}
    )
    if outcome == "faithful":
        return ruled
    if outcome != "drifted":
        return ruled.model_copy(update=annotated)
    if mode == "review" and owner:
        parked = ParkedAnswer(owner=owner, question=question, answer=answer)
        return ruled.model_copy(
            update={"action": "park_for_review", "delivered": WITHHELD_FOR_REVIEW, "parked": parked}
        )
    return ruled.model_copy(update={"action": "withhold", "delivered": WITHHELD})


async def _ask(
    judge: ScopeJudge | None,
    question: str,
    answer: str,
    scope: GateScope,
    timeout: float,  # noqa: ASYNC109 - bounds the judge call only
) -> tuple[JudgeOutcome, str, tuple[str, ...]]:
    """The judge's ruling, bounded by ``timeout``; a failure is an outcome, never raised."""
    if judge is None:
        return "unavailable", "", ("judge: none configured",)
    try:
        ruling = await asyncio.wait_for(
            judge(question=question, answer=answer, scope=scope), timeout
        )
        verdict, reasoning = ruling.verdict, ruling.reasoning
    except TimeoutError:
        return "timeout", "", (f"judge: no ruling within {timeout:g}s",)
    except Exception as exc:
        return "unavailable", "", (f"judge: {_error(exc)}",)
    if verdict not in ("faithful", "drifted"):
        return "unknown", _clip(str(reasoning), _MAX_REASONING), ()
    return verdict, _clip(str(reasoning), _MAX_REASONING), ()


def _untouched(answer: str, mode: GateMode, owner: str | None, error: str) -> GateDecision:
    return GateDecision(mode=mode, action="deliver", delivered=answer, owner=owner, errors=(error,))


async def _store(decision: GateDecision, sink: GateSink) -> GateDecision:
    try:
        result = sink(decision)
        if inspect.isawaitable(result):
            await result
    except Exception as exc:
        _log.warning("grounding gate: the sink failed: %s", _error(exc))
        return decision.model_copy(update={"errors": (*decision.errors, f"sink: {_error(exc)}")})
    return decision


def decision_attributes(decision: GateDecision) -> dict[str, str | int | float | bool]:
    """The span attributes of a decision (names joined by commas, bounded)."""
    return {
        "arbiter.gate.mode": decision.mode,
        "arbiter.gate.action": decision.action,
        "arbiter.gate.needs_judge": decision.needs_judge,
        "arbiter.gate.reasons": ",".join(decision.reasons),
        "arbiter.gate.judge": decision.judge,
        "arbiter.gate.scope_declared": decision.scope_declared,
        "arbiter.gate.out_of_scope_sources": _clip(",".join(decision.out_of_scope_sources), 1_000),
        "arbiter.gate.out_of_scope_references": _clip(
            ",".join(decision.out_of_scope_references), 1_000
        ),
        "arbiter.gate.references": len(decision.references),
        "arbiter.gate.unsupported_figures": decision.unsupported_figures,
        "arbiter.gate.errors": len(decision.errors),
    }


def _export(decision: GateDecision, telemetry: Telemetry) -> GateDecision:
    try:
        with telemetry.span("arbiter.grounding_gate", decision_attributes(decision)) as span:
            for error in decision.errors:
                telemetry.event(span, "arbiter.gate.error", {"message": error})
    except Exception as exc:
        _log.warning("grounding gate: telemetry failed: %s", _error(exc))
        return decision.model_copy(
            update={"errors": (*decision.errors, f"telemetry: {_error(exc)}")}
        )
    return decision


def _error(exc: BaseException) -> str:
    message = " ".join(str(exc).split())
    return _clip(f"{type(exc).__name__}: {message}" if message else type(exc).__name__, _MAX_ERROR)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
