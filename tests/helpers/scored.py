"""Runs scored by several scorers of the tests' own, stored where a test says.

The scorers cover every verdict a report must show: a pass / fail with an explanation
and evidence (``mentions``), a measured value (``brevity``), an abstention (``mentions``
on an example that names no word), an error (``fragile``), a reported-only scorer
(``brevity`` in :func:`default_scorers`), and explanations and quotes that repeat the
output, hostile or huge as it may be (``echo``).
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


@scorer(name="echo", description="Fails, quoting the output back.")
def echo(*, quotes: int = 1) -> ScoreFunction:
    """Fails with the whole output as its explanation and ``quotes`` unverified quotes of it."""

    def score(example: Example, output: Output) -> Score:
        text = output.answer_text or ""
        return Score(
            passed=False,
            explanation=text,
            evidence=[Evidence(quote=text, verified=False, note=text) for _ in range(quotes)],
        )

    return score


class answers:
    """A system answering ``table[input['id']]``; a missing id makes the call fail.

    A list of answers is answered in turn, one per call, so repetitions can differ.
    """

    def __init__(self, table: dict[str, str | list[str]]) -> None:
        self.table = table
        self.calls: dict[str, int] = {}

    async def __call__(self, input: dict[str, Any]) -> str:
        answer = self.table[input["id"]]
        if isinstance(answer, str):
            return answer
        turn = self.calls.get(input["id"], 0)
        self.calls[input["id"]] = turn + 1
        return answer[turn % len(answer)]

    def describe(self) -> dict[str, Any]:
        return {"kind": "python", "target": "tests.helpers.scored:answers"}


def dataset(words: dict[str, str | None], *, cohort: str | None = None) -> Dataset:
    """One example per id, expecting its word (None: no word); the input carries the id."""
    return Dataset(
        name="words",
        examples=[
            Example(
                id=i,
                input={"id": i},
                expected={"word": w} if w is not None else None,
                cohort=cohort,
            )
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
