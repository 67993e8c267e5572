"""The grounding gate: called before an answer is delivered, it may annotate or withhold it.

Modes, lowest to highest (docs/architecture.md §Glossary, grounding gate):

- ``off``: nothing is computed; the answer is delivered.
- ``observe`` (default): the trigger is computed and the decision recorded; the answer
  is delivered unchanged, and the judge is never called.
- ``annotate``: a triggered answer is delivered with a note appended.
- ``enforce``: a triggered answer goes to the scope judge: ``drifted`` withholds it,
  ``faithful`` delivers it intact (so an honest "not in scope" survives), and an
  ``unknown`` ruling, a missing or failing judge, or one slower than ``timeout``
  annotates it. Only a judge-confirmed drift is ever withheld.
- ``review``: as enforce, and a withheld answer is parked for a human, with its owner
  (an API key's id; None from the command line).

The trigger never blocks by itself (:mod:`arbiter.judges.gate_triggers`). The gate
fails open: an error of the trigger, of the gate itself, of the sink or of telemetry
delivers the original answer untouched, the error named in the decision. Every
decision is a :class:`~arbiter.contract.gate.GateDecision`, handed to an injected
``sink`` (the service layer's is the store: :func:`arbiter.service.grounding_gate.check_answer`)
and exported as a span ``arbiter.grounding_gate`` carrying its attributes, the judge's
tokens and cost among them.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import math
from collections.abc import Awaitable, Callable, Sequence
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict

from arbiter.contract import ModelCalls, ToolCall
from arbiter.contract.gate import (
    GATE_MODES,
    GateAction,
    GateDecision,
    GateMode,
    ParkedAnswer,
)
from arbiter.contract.gate import GateJudgeOutcome as JudgeOutcome
from arbiter.errors import InputError
from arbiter.judges.gate_triggers import GateScope, scope_trigger
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
    failure: Literal["timeout", "unavailable"] | None = None
    """Why an ``unknown`` ruling has no verdict, when the judge knows: every model
    timed out, or none could be asked. The gate records it as the judge's outcome."""
    calls: ModelCalls | None = None
    """What the ruling's model calls cost; None when the judge does not say."""

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
        owner: Whose answer it is (an API key's id; None from the command line); the
            decision and, in ``review``, the parked original carry it.
        sink: Receives every decision (not in ``off``); its failure is recorded, not raised.
        telemetry: Where the decision's span goes; none when None.

    Returns:
        The decision; ``decision.delivered`` is what to show the user.

    Raises:
        InputError: An unknown mode, or a timeout that is not a positive number (a
            misconfigured gate, not a gate failure).

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
    outcome, reasoning, calls, errors = await _ask(judge, question, answer, scope, timeout)
    ruled = found.model_copy(
        update={
            "judge": outcome,
            "judge_reasoning": reasoning,
            "judge_calls": calls,
            "errors": errors,
        }
    )
    if outcome == "faithful":
        return ruled
    if outcome != "drifted":
        return ruled.model_copy(update=annotated)
    if mode == "review":
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
) -> tuple[JudgeOutcome, str, ModelCalls | None, tuple[str, ...]]:
    """The judge's ruling, bounded by ``timeout``; a failure is an outcome, never raised."""
    if judge is None:
        return "unavailable", "", None, ("judge: none configured",)
    try:
        ruling = await asyncio.wait_for(
            judge(question=question, answer=answer, scope=scope), timeout
        )
        verdict, reasoning = ruling.verdict, _clip(str(ruling.reasoning), _MAX_REASONING)
        failure, calls = ruling.failure, ruling.calls
    except TimeoutError:
        return "timeout", "", None, (f"judge: no ruling within {timeout:g}s",)
    except Exception as exc:
        return "unavailable", "", None, (f"judge: {_error(exc)}",)
    if verdict in ("faithful", "drifted"):
        return verdict, reasoning, calls, ()
    if failure in ("timeout", "unavailable"):
        return failure, reasoning, calls, (f"judge: {_clip(reasoning, _MAX_ERROR)}",)
    return "unknown", reasoning, calls, ()


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
    attributes: dict[str, str | int | float | bool] = {
        "arbiter.gate.decision_id": decision.id,
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
        "arbiter.gate.owner": decision.owner or "",
    }
    calls = decision.judge_calls
    if calls is not None:
        attributes["arbiter.gate.judge_calls"] = calls.calls
        attributes["arbiter.gate.judge_input_tokens"] = calls.input_tokens
        attributes["arbiter.gate.judge_output_tokens"] = calls.output_tokens
        if calls.cost_usd is not None and math.isfinite(calls.cost_usd):
            attributes["arbiter.gate.judge_cost_usd"] = calls.cost_usd
    return attributes


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
