"""The judge layer: every applicable judge at once, isolated, under one time budget.

Judges run concurrently, so N judges cost one call window, not N. A judge that raises
becomes an abstention naming its error; the others are untouched. The layer's budget
is ``max(budget, longest call timeout + margin)``: it can always hold one full judge
call, whatever the two numbers were set to. When it expires, every ruling that finished
is kept, with its cost; each judge it silenced is recorded as an abstention naming the
cut-off, and the calls its members had already finished are still counted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from arbiter.contract import Example, ModelCalls, Output, Score
from arbiter.judges.panel import CallMeter

__all__ = ["DEFAULT_MARGIN", "JudgeLayerResult", "LayerJudge", "effective_budget", "run_judges"]

DEFAULT_MARGIN = 2.0
"""Seconds added to one call's timeout for the layer's floor (parsing, scheduling)."""


@dataclass(frozen=True)
class JudgeLayerResult:
    """What the judge layer said of one item."""

    scores: tuple[Score, ...]
    """One per judge, in the order given: rulings, abstentions, cut-off abstentions."""
    model: ModelCalls
    """Every call of every judge, finished ones of silenced judges included."""
    budget: float
    """The budget the layer ran under (after the floor)."""
    silenced: tuple[str, ...] = ()
    """Judges the budget cut off."""


def effective_budget(budget: float, call_timeout: float, margin: float = DEFAULT_MARGIN) -> float:
    """The layer's budget: never less than one full call plus the margin.

    Examples:
        >>> effective_budget(25.0, 20.0), effective_budget(5.0, 20.0)
        (25.0, 22.0)
    """
    return max(budget, call_timeout + margin)


async def run_judges(
    judges: Sequence[LayerJudge],
    example: Example,
    output: Output,
    *,
    budget: float,
    margin: float = DEFAULT_MARGIN,
) -> JudgeLayerResult:
    """Run every judge on one item concurrently, within the layer's budget.

    Args:
        judges: The applicable judges (:class:`arbiter.judges.judges.Judge`).
        example: The item's example.
        output: What the system produced.
        budget: The configured budget in seconds (raised to the floor, see module doc).
        margin: Seconds over the longest call timeout the floor allows.
    """
    limit = effective_budget(budget, max((j.call_timeout for j in judges), default=0.0), margin)
    meters = [CallMeter() for _ in judges]
    tasks = [
        asyncio.create_task(_isolated(judge, example, output, meter))
        for judge, meter in zip(judges, meters, strict=True)
    ]
    if tasks:
        await asyncio.wait(tasks, timeout=limit)
    scores: list[Score] = []
    silenced: list[str] = []
    for judge, task, meter in zip(judges, tasks, meters, strict=True):
        if task.done():
            scores.append(task.result())
            continue
        task.cancel()
        silenced.append(judge.name)
        scores.append(
            Score(
                name=judge.name,
                explanation=f"cut off by the judge layer's budget of {limit:g}s",
                model=meter.total,
                metadata={"cut_off_s": limit, "silenced": True},
            )
        )
    # Let the cancelled judges unwind before the caller moves on.
    await asyncio.gather(*tasks, return_exceptions=True)
    total = ModelCalls()
    for meter in meters:
        total = total + meter.total
    return JudgeLayerResult(tuple(scores), total, limit, tuple(silenced))


async def _isolated(judge: LayerJudge, example: Example, output: Output, meter: CallMeter) -> Score:
    try:
        score = await judge.judge(example, output, meter)
    except Exception as exc:  # one judge's failure is its abstention, not the layer's
        error = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        return Score(name=judge.name, error=error, model=meter.total)
    # A judge's score carries its name here, as the scorer wrapper names it in a run.
    return score if score.name else score.model_copy(update={"name": judge.name})


class LayerJudge(Protocol):
    """What the layer needs of a judge (:class:`arbiter.judges.judges.Judge` is one)."""

    @property
    def name(self) -> str:
        """The name its score carries."""
        ...

    @property
    def call_timeout(self) -> float:
        """The longest one of its panel calls may take."""
        ...

    async def judge(self, example: Example, output: Output, meter: CallMeter) -> Score:
        """Its ruling on one item, each call's usage added to ``meter`` as it returns."""
        ...
