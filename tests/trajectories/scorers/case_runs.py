"""Scoring one hand-built run against one case, for the grounding, scope, answer,
expert and flow scorer tests."""

from __future__ import annotations

from typing import Any

from arbiter.contract import Example, FlowRun, Output, Score, Trajectory
from arbiter.scoring.base import ScorerFactory


def case(assertions: dict[str, Any] | None = None, *, query: str | None = None) -> Example:
    """A case with these assertions, and a query when given."""
    return Example(
        id="case",
        input={} if query is None else {"query": query},
        expected=assertions or {},
    )


def score_run(
    factory: ScorerFactory,
    subject: Trajectory | FlowRun,
    assertions: dict[str, Any] | None = None,
    *,
    query: str | None = None,
    **arguments: Any,
) -> Score:
    """The score ``factory(**arguments)`` gives ``subject`` for a case.

    The scorer's function is called directly, so an exception reaches the test instead
    of becoming an errored score.
    """
    output = Output(flow=subject) if isinstance(subject, FlowRun) else Output(trajectory=subject)
    result = factory(**arguments).function(case(assertions, query=query), output)
    assert isinstance(result, Score)
    return result
