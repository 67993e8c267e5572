"""The scope_faithfulness judge, a panel of models, as the grounding gate's scope judge.

The gate asks a :class:`~arbiter.judges.grounding_gate.ScopeJudge` about one answer;
:class:`PanelScopeJudge` answers by running the decomposed ``scope_faithfulness`` judge
(:mod:`arbiter.judges.judges`: its versioned prompt, a panel of one model per vendor,
consensus in code, verified quotes) on the question, the answer and the scope's
description. The ruling carries what its calls cost, so the gate records it on the
decision. Whatever goes wrong with a member is that member's ``unknown`` vote (the
panel's rule); when no member could rule the ruling says why (``timeout`` when every
member timed out, ``unavailable`` when the panel is empty or every member failed), and
the gate annotates instead of withholding.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from arbiter.contract import Example, Output, Score
from arbiter.contract.gate import GateScope
from arbiter.judges.grounding_gate import ScopeRuling
from arbiter.judges.judges import JUDGES, Judge
from arbiter.judges.panel import CallMeter, Panel, PanelModel, build_panel

if TYPE_CHECKING:
    from arbiter.scoring.base import ScoringContext

__all__ = ["GATE_ITEM_ID", "PanelScopeJudge", "scope_text"]

GATE_ITEM_ID = "grounding-gate"
"""The item id the judge's requests carry (the gate judges one answer, not a dataset row)."""


def scope_text(scope: GateScope) -> str:
    """The trusted scope as the judge reads it: its description, then the declared names.

    Examples:
        >>> scope_text(GateScope(databases=("fleet_ops",), description="Fleet upkeep."))
        'Fleet upkeep.\\nDeclared databases: fleet_ops'
    """
    lines = [scope.description.strip()] if scope.description.strip() else []
    if scope.databases:
        lines.append("Declared databases: " + ", ".join(scope.databases))
    if scope.entities:
        lines.append("Declared entities: " + ", ".join(scope.entities))
    return "\n".join(lines)


class PanelScopeJudge:
    """The ``scope_faithfulness`` judge on a panel, callable as the gate's scope judge.

    Args:
        panel: The models that vote (:func:`~arbiter.judges.panel.build_panel`).
        context: Where the members' providers come from (cache, retries, price table);
            None: the default providers and settings.

    Examples:
        >>> judge = PanelScopeJudge.build(["mock"])
        >>> judge.panel.describe(), judge.call_timeout
        ('mock', 20.0)
    """

    def __init__(self, panel: Panel, context: ScoringContext | None = None) -> None:
        if context is None:
            from arbiter.scoring.base import ScoringContext

            context = ScoringContext()
        self.panel = panel
        self.context = context
        self._judge = Judge(JUDGES["scope_faithfulness"], panel, context)

    @classmethod
    def build(
        cls,
        judges: Sequence[str | Mapping[str, Any] | PanelModel],
        *,
        max_members: int = 3,
        context: ScoringContext | None = None,
    ) -> PanelScopeJudge:
        """A scope judge on a panel of ``judges`` (``"provider:model"``, mappings, configs).

        Raises:
            ValueError: ``max_members`` is below 1, or a configuration is malformed.
        """
        settings = context.resolved_settings() if context is not None else None
        panel = build_panel(judges, max_members=max_members, settings=settings, context=context)
        return cls(panel, context)

    @property
    def call_timeout(self) -> float:
        """The longest one member's call may take: what one ruling can last."""
        return self.panel.call_timeout

    async def __call__(self, *, question: str, answer: str, scope: GateScope) -> ScopeRuling:
        """The panel's ruling on ``answer``: ``faithful`` (pass), ``drifted`` (fail) or
        ``unknown``, with the calls' tokens and cost."""
        example = Example(
            id=GATE_ITEM_ID,
            input={"question": question},
            expected={"scope_description": scope_text(scope)},
        )
        meter = CallMeter()
        score = await self._judge.judge(example, Output(text=answer), meter)
        return _ruling(score, meter, self.panel)


def _ruling(score: Score, meter: CallMeter, panel: Panel) -> ScopeRuling:
    calls = score.model if score.model is not None else meter.total
    if panel.empty:
        return ScopeRuling(
            verdict="unknown", reasoning=panel.describe(), failure="unavailable", calls=calls
        )
    if score.passed is not None:
        verdict = "faithful" if score.passed else "drifted"
        return ScopeRuling(verdict=verdict, reasoning=score.explanation, calls=calls)
    votes = score.metadata.get("votes")
    errors = (
        [str(v.get("error")) for v in votes if isinstance(v, dict) and v.get("error") is not None]
        if isinstance(votes, list)
        else []
    )
    if isinstance(votes, list) and votes and len(errors) == len(votes):
        failure = "timeout" if all(e.startswith("timeout") for e in errors) else "unavailable"
        members = [str(v.get("member")) for v in votes if isinstance(v, dict)]
        reasoning = "; ".join(f"{m}: {e}" for m, e in zip(members, errors, strict=False))
        return ScopeRuling(verdict="unknown", reasoning=reasoning, failure=failure, calls=calls)
    return ScopeRuling(verdict="unknown", reasoning=score.explanation, calls=calls)
