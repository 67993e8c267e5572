"""The ``f1_tokens`` scorer: SQuAD's token F1 between the output and a reference answer.

Normalisation and F1 are those of the official SQuAD v1.1 evaluation script, so figures
are comparable with published ones: lowercase, delete ASCII punctuation
(``string.punctuation``), replace the articles *a*, *an*, *the* by a space, split on
whitespace; F1 over the two token multisets; with several acceptable answers, the best.
One departure: a reference with no token left (``"The"``, ``"?"``) is not counted as
F1 0 as the script would, but skipped, and the scorer abstains when every reference is
such.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence

from arbiter.contract import Example, Output, Score
from arbiter.params import check_number
from arbiter.scoring.base import ScoreFunction, scorer
from arbiter.scoring.reading import Missing, quoted, reference_texts
from arbiter.scoring.text import NO_TEXT

__all__ = ["f1_tokens", "squad_tokens", "token_f1"]

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def squad_tokens(text: str) -> list[str]:
    """The tokens of ``text`` after SQuAD v1.1's ``normalize_answer``.

    Examples:
        >>> squad_tokens("The Eiffel Tower, in Paris!")
        ['eiffel', 'tower', 'in', 'paris']
    """
    return _ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION)).split()


def token_f1(prediction: Sequence[str], reference: Sequence[str]) -> float:
    """F1 of two token lists as multisets; 0.0 when they share no token.

    Examples:
        >>> token_f1(["eiffel", "tower"], ["eiffel", "tower", "paris"])
        0.8
    """
    shared = sum((Counter(prediction) & Counter(reference)).values())
    if shared == 0:
        return 0.0
    precision = shared / len(prediction)
    recall = shared / len(reference)
    return 2 * precision * recall / (precision + recall)


@scorer(
    name="f1_tokens",
    description="SQuAD token F1 against the expected answer (the best of a list), with a "
    "threshold.",
    reference="expected",
)
def f1_tokens(*, threshold: float = 0.5) -> ScoreFunction:
    """SQuAD v1.1 token F1 against the expected answer; passes at ``threshold`` or above.

    With a list of acceptable answers the best F1 counts. The value is the F1, in [0, 1].

    Args:
        threshold: The F1 an output needs to pass, in [0, 1].
    """
    check_number(threshold, "threshold", "f1_tokens", minimum=0, maximum=1)

    def score(example: Example, output: Output) -> Score:
        references = reference_texts(example)
        if isinstance(references, Missing):
            return Score(explanation=references.reason)
        tokenised = [(r, tokens) for r in references if (tokens := squad_tokens(r))]
        if not tokenised:
            return Score(
                explanation="the expected text has no token left after SQuAD normalisation"
            )
        text = output.answer_text
        if text is None:
            return Score(value=0.0, passed=False, explanation=NO_TEXT)
        answer = squad_tokens(text)
        best, against = max(
            ((token_f1(answer, tokens), reference) for reference, tokens in tokenised),
            key=lambda pair: pair[0],
        )
        passed = best >= threshold
        relation = ">=" if passed else "<"
        explanation = f"token F1 {best:.3f} {relation} threshold {threshold:g}"
        if not passed:
            explanation += f" (best against {quoted(against)})"
        return Score(value=best, passed=passed, explanation=explanation)

    return score
