"""Runs scored by several scorers of the tests' own, stored where a test says.

The scorers cover every verdict a report must show: a pass / fail with an explanation
and evidence (``mentions``), a measured value (``brevity``), an abstention
(``has_reference``), an error (``fragile``) and a reported-only scorer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from arbiter.contract import Dataset, Evidence, Example, Output, Score
from arbiter.harness.runner import run_eval
from arbiter.scoring.base import BuiltScorer, ScoreFunction, scorer
from arbiter.store import Store


@scorer(name="mentions", description="The text mentions the expected word.")
def mentions(*, word_field: str = "word") -> ScoreFunction:
    """Passes when the output contains the example's ``expected[word_field]``."""

    def score(example: Example, output: Output) -> Score:
        expected = example.expected
        word = expected.get(word_field) if isinstance(expected, dict) else None
        if not isinstance(word, str):
            return Score(explanation="the example names no word")
        text = output.answer_text or ""
        found = word in text
        return Score(
            passed=found,
            value=float(found),
            explanation=f"{'found' if found else 'missing'}: {word}",
            evidence=[Evidence(quote=text[:40], verified=found, note="start of the output")],
        )

    return score


@scorer(name="brevity", description="The text is at most `limit` characters.")
def brevity(*, limit: int = 40) -> ScoreFunction:
    """Value: characters over the limit, at least 0; passes at 0."""

    def score(example: Example, output: Output) -> Score:
        over = max(0, len(output.answer_text or "") - limit)
        return Score(passed=over == 0, value=float(over), explanation=f"{over} over")

    return score


@scorer(name="fragile", description="Raises on outputs containing 'boom'.")
def fragile() -> ScoreFunction:
    """Raises when the output contains ``boom``; passes otherwise."""

    def score(example: Example, output: Output) -> Score:
        if "boom" in (output.answer_text or ""):
            raise RuntimeError("the scorer blew up on \x1b[2J<script>")
        return Score(passed=True)

    return score


class answers:
    """A system answering ``table[input['id']]``; a missing id makes the call fail."""

    def __init__(self, table: dict[str, str]) -> None:
        self.table = table

    async def __call__(self, input: dict[str, Any]) -> str:
        return self.table[input["id"]]

    def describe(self) -> dict[str, Any]:
        return {"kind": "python", "target": "tests.helpers.scored:answers"}


def dataset(words: dict[str, str], *, cohort: str | None = None) -> Dataset:
    """One example per id, expecting its word; the input carries the id."""
    return Dataset(
        name="words",
        examples=[
            Example(id=i, input={"id": i}, expected={"word": w}, cohort=cohort)
            for i, w in words.items()
        ],
    )


def default_scorers() -> list[BuiltScorer]:
    """mentions (gating), brevity (reported only), fragile (gating)."""
    return [mentions(), brevity().gating(False), fragile()]


def scored_run(
    store: Store,
    data: Dataset,
    system: answers,
    *,
    scorers: Sequence[BuiltScorer] | None = None,
    k: int = 1,
) -> str:
    """Run ``data`` through ``system`` with the scorers, stored; the run id."""
    report = run_eval(
        system,
        data,
        k=k,
        retries=0,
        scorers=list(scorers) if scorers is not None else default_scorers(),
        store=store,
    )
    assert report.run_id
    return report.run_id
