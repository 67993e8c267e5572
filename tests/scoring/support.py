"""Building built-in scorers by their ``--scorer`` option and scoring one output in a test."""

from __future__ import annotations

import asyncio
from typing import Any

from arbiter.contract import Example, Output, Score
from arbiter.scoring.base import BuiltScorer, Scorer
from arbiter.scoring.registry import ScorerRegistry


def build(option: str) -> BuiltScorer:
    """The scorer ``--scorer OPTION`` would build (built-ins only, no plugins)."""
    registry = ScorerRegistry.default(plugins=False)
    return registry.build(registry.spec_of(option))


def example(expected: Any = None, expected_label: str | None = None, id: str = "e") -> Example:
    """An example with only what scorers read."""
    return Example(id=id, input={}, expected=expected, expected_label=expected_label)


def score_of(scorer: Scorer, example: Example, output: Output) -> Score:
    """Run one scorer on one output, outside any event loop."""
    return asyncio.run(scorer(example, output))


def score_one(
    option: str | Scorer,
    output: Any,
    *,
    expected: Any = None,
    expected_label: str | None = None,
) -> Score:
    """Score ``output`` (anything ``Output.coerce`` reads) against one example."""
    scorer = build(option) if isinstance(option, str) else option
    return score_of(scorer, example(expected, expected_label), Output.coerce(output))
