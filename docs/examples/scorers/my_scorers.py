"""Two scorers of one's own, for docs/scorers.md ("Writing your own scorer").

- ``no_refusal``: the output does not refuse or dodge the question. It needs no
  reference, so it scores any output; its evidence is the refusal it found, quoted.
- ``answer_first``: the expected answer comes within the first few words, not buried
  after a preamble. It abstains on an example without a reference.

Publish them as a plugin (``[project.entry-points."arbiter.scorers"]`` in your
pyproject.toml) and ``arbiter run --scorer no_refusal`` finds them; from Python, call
the factory and pass what it returns to ``run_eval(..., scorers=[...])``.
"""

from __future__ import annotations

from arbiter.contract import Evidence, Example, Output, Score
from arbiter.scoring.base import ScoreFunction, scorer

__all__ = ["answer_first", "no_refusal"]

REFUSALS = ["I cannot", "I can't", "I am unable", "I'm unable", "As an AI"]
"""Phrases that start a refusal, matched ignoring case."""


@scorer(name="no_refusal", description="The output does not refuse to answer.")
def no_refusal(*, phrases: list[str] | None = None) -> ScoreFunction:
    """The output contains none of the refusal phrases (ignoring case).

    Args:
        phrases: The phrases that mark a refusal; None: a short built-in list.
    """
    wanted = phrases if phrases is not None else REFUSALS
    if not wanted or not all(wanted):
        raise ValueError("phrases must be a non-empty list of non-empty texts")
    folded = [phrase.casefold() for phrase in wanted]

    def score(example: Example, output: Output) -> Score:
        text = output.answer_text
        if text is None:
            return Score(explanation="the output has no text")  # nothing to judge: abstain
        haystack = text.casefold()
        for phrase in folded:
            at = haystack.find(phrase)
            if at < 0:
                continue
            if len(haystack) == len(text):  # positions agree: quote the output itself
                quote = text[at : at + len(phrase)]
                found = Evidence(quote=quote, verified=True, note=f"at character {at}")
            else:  # casefold changed the length (ß -> ss): say what matched, unchecked
                found = Evidence(quote=phrase, verified=None, note="found ignoring case")
            return Score(value=0.0, passed=False, explanation="refuses", evidence=[found])
        return Score(value=1.0, passed=True)

    return score


@scorer(
    name="answer_first",
    description="The expected answer comes within the first few words.",
    reference="expected",
)
def answer_first(*, words: int = 3) -> ScoreFunction:
    """The expected answer (a text) appears within the output's first ``words`` words.

    Args:
        words: How many leading words may hold the answer.
    """
    if words < 1:
        raise ValueError(f"words must be at least 1, got {words}")

    def score(example: Example, output: Output) -> Score:
        if not isinstance(example.expected, str):
            return Score(explanation="the example's expected is not a text")  # abstain
        text = output.answer_text or ""
        lead = " ".join(text.split()[:words])
        if example.expected.casefold() in lead.casefold():
            return Score(value=1.0, passed=True)
        return Score(
            value=0.0,
            passed=False,
            explanation=f"{example.expected!r} is not in the first {words} words",
        )

    return score
