"""f1_tokens against SQuAD v1.1's evaluation script, re-written here from its definition."""

from __future__ import annotations

import re
import string
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arbiter.errors import InputError
from arbiter.scoring.overlap import squad_tokens
from tests.scoring.support import build, score_one

# --- The reference: SQuAD v1.1's normalize_answer, f1_score and the max over answers ---


def squad_normalize_answer(s: str) -> str:
    def remove_articles(text: str) -> str:
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text: str) -> str:
        return " ".join(text.split())

    def remove_punc(text: str) -> str:
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    return white_space_fix(remove_articles(remove_punc(s.lower())))


def squad_f1_score(prediction: str, ground_truth: str) -> float:
    prediction_tokens = squad_normalize_answer(prediction).split()
    ground_truth_tokens = squad_normalize_answer(ground_truth).split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


def squad_max_over_ground_truths(prediction: str, ground_truths: list[str]) -> float:
    return max(squad_f1_score(prediction, truth) for truth in ground_truths)


# --- Generated answers: words that collide often, articles, punctuation, case, Unicode ---

_WORDS = st.sampled_from(
    ["the", "a", "an", "The", "Eiffel", "eiffel", "tower", "Paris", "paris", "1889", "in", "of"]
)
_PIECES = st.one_of(
    _WORDS,
    st.sampled_from([" ", "  ", "\n", ",", ".", "!", "'s", "-", "(", ")", "é", "Ω", "\u00a0"]),
    st.text(max_size=4),
)
_ANSWERS = st.lists(_PIECES, max_size=12).map("".join)


@given(_ANSWERS)
def test_tokens_are_squads_normalisation_split(text: str) -> None:
    assert squad_tokens(text) == squad_normalize_answer(text).split()


@given(_ANSWERS, st.lists(_ANSWERS, min_size=1, max_size=4))
def test_the_value_is_squads_f1_best_over_the_answers(prediction: str, truths: list[str]) -> None:
    with_tokens = [t for t in truths if squad_normalize_answer(t).split()]
    score = score_one("f1_tokens", prediction, expected=truths)
    if not with_tokens:
        assert score.passed is None  # the one departure: nothing to compare with
        return
    assert score.value == pytest.approx(squad_max_over_ground_truths(prediction, with_tokens))
    assert score.passed is (score.value >= 0.5)


@pytest.mark.parametrize(
    ("output", "expected", "value"),
    [
        ("the Eiffel Tower", "Eiffel Tower", 1.0),
        ("Eiffel", "The Eiffel Tower", pytest.approx(2 / 3)),
        ("it is in Paris, France", "Paris", pytest.approx(1 / 3)),
        ("Lyon", "Paris", 0.0),
        ("Paris Paris", "Paris", pytest.approx(2 / 3)),  # multisets, not sets
    ],
)
def test_known_figures(output: str, expected: str, value: float) -> None:
    assert score_one("f1_tokens", output, expected=expected).value == value


@pytest.mark.parametrize(
    ("threshold", "passed"), [("0.5", True), ("0.51", False), ("0", True), ("1", False)]
)
def test_the_threshold_decides_pass(threshold: str, passed: bool) -> None:
    score = score_one(f"f1_tokens:threshold={threshold}", "in Paris, France", expected="Paris")
    assert score.passed is passed


def test_the_explanation_gives_the_f1_and_the_closest_answer() -> None:
    score = score_one("f1_tokens", "Lyon", expected=["Paris", "Paname"])
    assert score.explanation == "token F1 0.000 < threshold 0.5 (best against 'Paris')"


def test_a_reference_of_articles_only_is_skipped_and_alone_makes_it_abstain() -> None:
    assert score_one("f1_tokens", "the", expected="The").passed is None
    assert score_one("f1_tokens", "Paris", expected=["The", "Paris"]).value == 1.0


@pytest.mark.parametrize("threshold", ["-0.1", "1.5"])
def test_the_threshold_is_within_0_and_1(threshold: str) -> None:
    with pytest.raises(InputError, match="threshold"):
        build(f"f1_tokens:threshold={threshold}")
