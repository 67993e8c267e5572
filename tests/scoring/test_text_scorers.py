"""The text scorers: exact, casefold, normalized, contains, any_of, all_of, length."""

from __future__ import annotations

import doctest

import pytest

from arbiter.contract import Output
from arbiter.errors import InputError
from arbiter.scoring import numeric, overlap, structured, text
from arbiter.scoring.text import normalize_text
from tests.scoring.support import build, score_one


@pytest.mark.parametrize("module", [text, overlap, numeric, structured])
def test_docstring_examples_hold(module: object) -> None:
    failures, tried = doctest.testmod(module, report=True)  # type: ignore[arg-type]
    assert tried > 0
    assert failures == 0


# --- exact / casefold / normalized ---------------------------------------------------


@pytest.mark.parametrize(
    ("option", "output", "expected", "passed"),
    [
        ("exact", "Paris", "Paris", True),
        ("exact", "Paris\n", "  Paris", True),
        ("exact:strip=false", "Paris\n", "Paris", False),
        ("exact", "paris", "Paris", False),
        ("casefold", " PARIS ", "paris", True),
        ("casefold", "STRASSE", "Straße", True),
        ("casefold", "Paris!", "paris", False),
        ("normalized", "  Ｎew   York! ", "new york", True),
        ("normalized", "U.S.A.", "USA", True),
        ("normalized", "«Bonjour», dit-il", "bonjour dit il", False),
        ("normalized", "«Bonjour», dit-il", "Bonjour ditil", True),
        ("normalized", "ﬁle", "file", True),
        ("normalized", "$5", "5", False),
    ],
)
def test_equality_scorers_compare_after_their_normalisation(
    option: str, output: str, expected: str, passed: bool
) -> None:
    score = score_one(option, output, expected=expected)
    assert score.passed is passed
    assert score.value == float(passed)


@pytest.mark.parametrize(
    ("raw", "normal"),
    [
        ("  Ｔhe U.S.A.,  is  “big”! ", "the usa is big"),
        ("new-york", "newyork"),
        ("tab\there\nnewline", "tab here newline"),
        ("¿Qué?", "qué"),
        ("x + y = 3% (#1)", "x + y = 3 1"),
        ("ǰ", "ǰ"),  # folds to j + combining caron; NFKC recomposes it
    ],
)
def test_normalize_text_is_nfkc_casefold_without_punctuation(raw: str, normal: str) -> None:
    assert normalize_text(raw) == normal


def test_a_list_of_acceptable_answers_passes_on_any_of_them() -> None:
    assert score_one("casefold", "paname", expected=["Paris", "Paname"]).passed is True


def test_a_failure_says_what_was_expected_and_what_came() -> None:
    assert score_one("exact", "Lyon", expected="Paris").explanation == (
        "expected 'Paris', got 'Lyon'"
    )
    assert score_one("casefold", "Lyon", expected="PARIS").explanation == (
        "after casefold, expected 'paris', got 'lyon'"
    )


def test_a_failure_lists_three_answers_and_counts_the_rest() -> None:
    score = score_one("exact", "x", expected=["a", "b", "c", "d", "e"])
    assert score.explanation == "expected one of 'a', 'b', 'c' and 2 more, got 'x'"


def test_quoted_text_is_clipped_and_kept_on_one_line() -> None:
    score = score_one(
        "exact",
        "line\n" * 10_000,
        expected="short",
    )
    assert "\n" not in score.explanation
    assert len(score.explanation) < 300
    assert "more]" in score.explanation


def test_the_expected_label_is_the_reference_when_there_is_no_expected() -> None:
    assert score_one("exact", "yes", expected_label="yes").passed is True


@pytest.mark.parametrize(
    ("expected", "reason"),
    [
        (None, "the example has no expected text"),
        (42, "the example's expected is a number, not a text"),
        ({"a": 1}, "the example's expected is an object, not a text"),
        ([], "the example's expected is a list, but not a non-empty list of texts"),
        (["a", 1], "the example's expected is a list, but not a non-empty list of texts"),
    ],
)
@pytest.mark.parametrize("option", ["exact", "casefold", "normalized", "f1_tokens", "contains"])
def test_without_a_reference_text_the_scorer_abstains_and_says_why(
    option: str, expected: object, reason: str
) -> None:
    score = score_one(option, "anything", expected=expected)
    assert score.passed is None
    assert score.value is None
    assert score.explanation == reason


@pytest.mark.parametrize(
    "option", ["exact", "casefold", "normalized", "contains:text=a", "regex:pattern=a"]
)
def test_an_output_without_text_fails(option: str) -> None:
    score = score_one(option, Output(raw={"a": 1}), expected="a")
    assert score.passed is False
    assert score.explanation == "the output has no text"


def test_free_text_scores_carry_no_category() -> None:
    # A reference text is not a class: no classification report per distinct answer.
    score = score_one("exact", "Paris", expected="Paris")
    assert (score.answer, score.expected) == (None, None)


@pytest.mark.parametrize("name", ["exact", "casefold", "normalized", "f1_tokens", "numeric"])
def test_scorers_that_always_read_the_example_declare_it(name: str) -> None:
    from arbiter.scoring.registry import ScorerRegistry

    assert ScorerRegistry.default(plugins=False).factory_of(name).reference == "expected"


@pytest.mark.parametrize("name", ["contains", "any_of", "all_of", "regex", "length", "json"])
def test_scorers_whose_target_can_be_an_argument_declare_no_reference(name: str) -> None:
    from arbiter.scoring.registry import ScorerRegistry

    assert ScorerRegistry.default(plugins=False).factory_of(name).reference is None


# --- contains / any_of / all_of -------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "output", "passed"),
    [
        ("contains:text=Paris", "the capital is paris.", True),
        ("contains:text=Paris,case_sensitive=true", "the capital is paris.", False),
        ("contains:text=Paris,case_sensitive=true", "the capital is Paris.", True),
        ("contains:text=Lyon", "the capital is Paris.", False),
        ("contains:text=straße", "STRASSE 5", True),
        ('any_of:values=["Lyon","Paris"]', "PARIS", True),
        ('any_of:values=["Lyon","Nice"]', "Paris", False),
        ('all_of:values=["paris","france"]', "Paris, France", True),
        ('all_of:values=["paris","france","europe"]', "Paris, France", False),
    ],
)
def test_containment_scorers(option: str, output: str, passed: bool) -> None:
    assert score_one(option, output).passed is passed


def test_a_match_is_quoted_from_the_output_as_written() -> None:
    score = score_one("contains:text=paris", "It is PARIS.")
    (evidence,) = score.evidence
    assert (evidence.quote, evidence.verified, evidence.note) == ("PARIS", True, "at character 6")


def test_a_match_found_only_after_folding_expands_a_character_quotes_the_needle() -> None:
    score = score_one("contains:text=STRASSE", "Straße 5")
    (evidence,) = score.evidence
    assert score.passed is True
    assert (evidence.quote, evidence.verified) == ("STRASSE", None)


def test_contains_without_text_looks_for_the_expected_text() -> None:
    assert score_one("contains", "It is Paris.", expected="paris").passed is True
    assert score_one("contains", "It is Lyon.", expected=["paris", "paname"]).passed is False


def test_all_of_values_default_to_the_expected_list_and_its_value_is_the_share_found() -> None:
    score = score_one("all_of", "Paris, France", expected=["paris", "france", "europe"])
    assert score.passed is False
    assert score.value == pytest.approx(2 / 3)
    assert score.explanation == "missing 'europe' (1 of 3)"
    assert [e.quote for e in score.evidence] == ["Paris", "France"]


def test_any_of_failure_names_what_was_looked_for() -> None:
    score = score_one('any_of:values=["Lyon","Nice"]', "Paris")
    assert score.explanation == "not found: 'Lyon', 'Nice'"


def test_an_empty_expected_text_is_nothing_to_look_for() -> None:
    score = score_one("contains", "anything", expected="")
    assert score.passed is None
    assert score.explanation == "the example's expected text is empty"


@pytest.mark.parametrize(
    "option",
    ["contains:text=", "any_of:values=[]", 'all_of:values=[""]', "any_of:values=Paris"],
)
def test_empty_or_malformed_targets_are_refused_when_built(option: str) -> None:
    with pytest.raises(InputError, match="scorer '"):
        build(option)


# --- length ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "output", "passed", "value", "explanation"),
    [
        ("length:max_chars=5", "hello", True, 5.0, ""),
        ("length:max_chars=4", "hello", False, 5.0, "5 characters, more than max_chars=4"),
        ("length:min_chars=6", "hello", False, 5.0, "5 characters, fewer than min_chars=6"),
        ("length:min_words=2,max_words=3", "one two three", True, 3.0, ""),
        ("length:max_words=3", "one two three four", False, 4.0, "4 words, more than max_words=3"),
        ("length:min_words=2", "one", False, 1.0, "1 word, fewer than min_words=2"),
        (
            "length:max_chars=3,min_words=2",
            "hello",
            False,
            5.0,
            "5 characters, more than max_chars=3; 1 word, fewer than min_words=2",
        ),
        ("length:max_chars=1", "é", True, 1.0, ""),
    ],
)
def test_length_checks_characters_and_words(
    option: str, output: str, passed: bool, value: float, explanation: str
) -> None:
    score = score_one(option, output)
    assert (score.passed, score.value, score.explanation) == (passed, value, explanation)


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("length", "give at least one of min_chars"),
        ("length:min_chars=5,max_chars=2", "min_chars=5 is more than max_chars=2"),
        ("length:max_words=-1", "'max_words' parameter of length must be a non-negative int"),
        ("length:max_words=many", "max_words"),
    ],
)
def test_length_bounds_are_checked_when_built(option: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        build(option)
