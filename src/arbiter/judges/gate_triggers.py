"""The grounding gate's deterministic trigger: does this answer need the scope judge?

The trigger is a recall filter, never a verdict (docs/architecture.md §Glossary): it
fires on an out-of-scope tool call (:func:`arbiter.scoring.scope.sources_touched` and
:func:`~arbiter.scoring.scope.scope_diff`, the code the ``scope_adherence`` scorer
uses) or an out-of-scope data reference in the answer
(:func:`arbiter.scoring.references.out_of_scope_references`), and its only effect is
``needs_judge``. Figures the tool results do not hold are counted, observe-only: they
never trigger (a correctly scoped answer with a wrong number is answer_groundedness's
business, not scope's).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from arbiter.contract import ToolCall
from arbiter.contract.gate import GateScope, TriggerReason
from arbiter.scoring.claims import json_text
from arbiter.scoring.figures import figures_in, text_numbers
from arbiter.scoring.references import data_references, references_outside
from arbiter.scoring.scope import scope_diff, sources_touched

__all__ = ["GateScope", "Trigger", "TriggerReason", "scope_trigger"]

_MAX_NAMES = 50
"""Names kept per list of a trigger (the rest are counted by the reasons, not listed)."""


class Trigger(BaseModel):
    """What the deterministic trigger found in one answer."""

    model_config = ConfigDict(frozen=True)

    needs_judge: bool
    """Whether the scope judge should decide (never a block by itself)."""
    reasons: tuple[TriggerReason, ...] = ()
    """Why it fired; empty when it did not."""
    out_of_scope_sources: tuple[str, ...] = ()
    """Sources the tool calls touched outside the scope, first-touched order."""
    references: tuple[str, ...] = ()
    """Every structural data reference of the answer (normalised), in order."""
    out_of_scope_references: tuple[str, ...] = ()
    """The references the scope does not cover."""
    unsupported_figures: int = 0
    """Figures of the answer no tool result holds (observe-only: never a trigger)."""


def scope_trigger(answer: str, tool_calls: Sequence[ToolCall], scope: GateScope) -> Trigger:
    """The trigger of one answer against a scope.

    Args:
        answer: The answer about to be delivered.
        tool_calls: The calls the agent made for it.
        scope: The trusted scope; when nothing is declared the trigger never fires.

    Returns:
        The trigger, with what it found.

    Examples:
        >>> scope = GateScope(databases=("fleet_ops",))
        >>> trigger = scope_trigger("See the vendor_agreements table.", [], scope)
        >>> trigger.needs_judge, trigger.out_of_scope_references
        (True, ('vendor_agreements',))
    """
    figures = _unsupported_figures(answer, tool_calls)
    found = data_references(answer)
    references = tuple(ref.name for ref in found)[:_MAX_NAMES]
    if not scope.declared:
        return Trigger(needs_judge=False, references=references, unsupported_figures=figures)
    declared = [*scope.databases, *scope.entities]
    sources = tuple(scope_diff(sources_touched(tool_calls), declared))[:_MAX_NAMES]
    outside = tuple(
        ref.name
        for ref in references_outside(found, databases=scope.databases, entities=scope.entities)
    )[:_MAX_NAMES]
    reasons: list[TriggerReason] = []
    if sources:
        reasons.append("tool_call_out_of_scope")
    if outside:
        reasons.append("answer_reference_out_of_scope")
    return Trigger(
        needs_judge=bool(reasons),
        reasons=tuple(reasons),
        out_of_scope_sources=sources,
        references=references,
        out_of_scope_references=outside,
        unsupported_figures=figures,
    )


def _unsupported_figures(answer: str, tool_calls: Sequence[ToolCall]) -> int:
    """Figures of ``answer`` that no tool result holds, within the figure's precision."""
    held = sorted(number for call in tool_calls for number in text_numbers(json_text(call.result)))
    missing = 0
    for figure in figures_in(answer):
        # A percent is held as written (11.8) or as a fraction (0.118).
        forms = [(figure.value, figure.tolerance)]
        if figure.percent:
            forms.append((figure.value / 100, figure.tolerance / 100))
        if not any(_holds(held, value, tolerance) for value, tolerance in forms):
            missing += 1
    return missing


def _holds(held: list[float], value: float, tolerance: float) -> bool:
    at = bisect.bisect_left(held, value - tolerance)
    return at < len(held) and held[at] <= value + tolerance
