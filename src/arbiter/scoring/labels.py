"""The ``label`` scorer: the predicted label equals the expected one (after a label map)."""

from __future__ import annotations

from arbiter.contract import Example, Output, Score
from arbiter.scoring.base import ScoreFunction, scorer
from arbiter.scoring.metrics import map_label

__all__ = ["BINARY_LABEL_MAP", "label"]

BINARY_LABEL_MAP = {"low": "low", "*": "high"}
"""The ``binary`` label map: a threat unless exactly ``low`` (``*`` maps every other label)."""


@scorer(
    name="label",
    description="The label equals the expected label (after the label map).",
    reference="label",
)
def label(*, label_map: dict[str, str] | None = None) -> ScoreFunction:
    """The label equals the expected label, after the label map when one is given.

    Reads ``output.label`` (a text-only output: its text) and the example's
    ``expected_label`` (else a string ``expected``); abstains when the example has
    neither. Its section of the report is the whole classification report.

    Args:
        label_map: Old label to new label, applied to both sides; ``"*"`` catches the rest.
    """
    mapping = label_map or None

    def score(example: Example, output: Output) -> Score:
        expected = example.reference_label
        predicted = output.label if output.label is not None else output.text
        if expected is None:
            return Score(answer=predicted, explanation="the example has no expected label")
        if predicted is None:
            return Score(
                answer=None,
                expected=expected,
                passed=False,
                value=0.0,
                explanation="the output has no label",
            )
        if mapping:
            passed = map_label(predicted, mapping) == map_label(expected, mapping)
        else:
            passed = predicted == expected
        return Score(answer=predicted, expected=expected, passed=passed, value=float(passed))

    return score
