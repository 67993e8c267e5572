"""LLM judge panels: decomposed judges, one dimension each, consensus in code.

::

    from arbiter.judges import build_panel, run_judges

    panel = build_panel(["openai:gpt-4.1-mini", "anthropic:claude-haiku-4-5", "mock"])
    print(panel.describe())

Every judge is a ``@scorer(kind="model")`` factory (:data:`JUDGE_SCORERS` names them for
the registry, imported on first use); :func:`run_judges` runs several on one item
concurrently under one time budget. Importing this package imports none of it: names
resolve on first use (PEP 562), so the scorer registry can read :data:`JUDGE_SCORERS`
cheaply.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from arbiter.judges.consensus import Tally, consensus, tally
    from arbiter.judges.judges import JUDGES, Judge, JudgeDefinition
    from arbiter.judges.layer import JudgeLayerResult, effective_budget, run_judges
    from arbiter.judges.panel import (
        CallMeter,
        MemberVote,
        Panel,
        PanelModel,
        PanelRuling,
        build_panel,
    )
    from arbiter.judges.verdicts import JudgeAnswer, MemberRuling, checked_ruling, parse_ruling

__all__ = [
    "JUDGES",
    "JUDGE_SCORERS",
    "CallMeter",
    "Judge",
    "JudgeAnswer",
    "JudgeDefinition",
    "JudgeLayerResult",
    "MemberRuling",
    "MemberVote",
    "Panel",
    "PanelModel",
    "PanelRuling",
    "Tally",
    "build_panel",
    "checked_ruling",
    "consensus",
    "effective_budget",
    "parse_ruling",
    "run_judges",
    "tally",
]

JUDGE_SCORERS: dict[str, str] = {
    name: f"arbiter.judges.judges:{name}"
    for name in (
        "groundedness",
        "answer_groundedness",
        "scope_faithfulness",
        "instruction_following",
        "answer_correctness",
        "content_safety",
        "tool_arg_optimality",
        "plan_quality",
    )
}
"""Every decomposed judge by name: ``module:factory`` (the factory is named as the judge)."""

_HOMES = {
    "JUDGES": "judges",
    "Judge": "judges",
    "JudgeDefinition": "judges",
    "Tally": "consensus",
    "consensus": "consensus",
    "tally": "consensus",
    "JudgeLayerResult": "layer",
    "effective_budget": "layer",
    "run_judges": "layer",
    "CallMeter": "panel",
    "PanelModel": "panel",
    "MemberVote": "panel",
    "Panel": "panel",
    "PanelRuling": "panel",
    "build_panel": "panel",
    "JudgeAnswer": "verdicts",
    "MemberRuling": "verdicts",
    "checked_ruling": "verdicts",
    "parse_ruling": "verdicts",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
