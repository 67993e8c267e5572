"""Claims and content words: what an answer says, and whether support text holds it."""

from __future__ import annotations

import pytest
from pydantic import JsonValue

from arbiter.scoring.claims import Vocabulary, claims_of, content_words, json_text


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("The orders were shipped!", ["order", "shipped"]),
        ("avg_delivery_days", ["avg", "delivery", "day"]),
        ("It's what I'm told", ["told"]),  # stopwords and the letters apostrophes leave
        ("Ｐａｒｉｓ 2024", ["pari", "2024"]),  # NFKC folds full-width letters
        ("class glass", ["class", "glass"]),  # a double s is not a plural
        ("Sure, thanks, I hope this helps.", []),
    ],
)
def test_content_words_fold_case_plurals_and_drop_function_words(
    text: str, words: list[str]
) -> None:
    assert content_words(text) == words


def test_claims_are_sentences_and_list_items_with_a_content_word() -> None:
    answer = "Sure! Revenue grew 4.2% in Q3. Costs fell.\n- EU sales up\n- \n1. Margins held? Yes."
    claims, cut = claims_of(answer)
    assert [c.text for c in claims] == [
        "Revenue grew 4.2% in Q3.",
        "Costs fell.",
        "- EU sales up",
        "Margins held?",  # the list number is no claim
    ]
    assert claims[0].words == {"revenue", "grew", "4.2", "q3"}
    assert cut is False


def test_claims_beyond_the_limit_are_left_unread_and_said_so() -> None:
    claims, cut = claims_of("Alpha one. Beta two. Gamma three.", limit=2)
    assert [c.text for c in claims] == ["Alpha one.", "Beta two."]
    assert cut is True


def test_json_text_holds_keys_strings_and_numbers_with_escapes_as_spaces() -> None:
    value: JsonValue = {"total_orders": 42, "rows": [["EU\nwest", None, 1.5]]}
    assert content_words(json_text(value)) == [
        "total",
        "order",
        "42",
        "row",
        "eu",
        "west",
        "null",
        "1.5",
    ]
    assert json_text("as is") == "as is"


def test_a_vocabulary_supports_a_claim_by_its_share_of_known_words() -> None:
    vocabulary = Vocabulary()
    vocabulary.add(["Refunds within 30 days", "unused items"])
    claim = claims_of("Refunds of unused gadgets.")[0][0]
    assert vocabulary.support(claim) == pytest.approx(2 / 3)


def test_a_vocabulary_reads_support_up_to_its_character_budget() -> None:
    vocabulary = Vocabulary(max_chars=12)
    vocabulary.add(["alpha beta", "gamma delta", "epsilon"])
    assert vocabulary.words == {"alpha", "beta", "ga"}
    assert vocabulary.truncated


@pytest.mark.parametrize(
    "answer",
    ["a" + " " * 999_998 + "b", "x. " * 300_000, "\n" * 1_000_000, "word " * 200_000],
)
def test_claims_of_reads_a_megabyte_of_hostile_text(answer: str) -> None:
    claims, _ = claims_of(answer)
    assert len(claims) <= 5_000


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("1,234.50", ["1234.5"]),
        ("1234.5", ["1234.5"]),
        ("03", ["3"]),
        ("1,2,3", ["1", "2", "3"]),  # not thousands groups
        ("1,2345", ["1", "2345"]),
        ("9" * 400, ["9" * 400]),  # too large for a float: kept as written
    ],
)
def test_a_number_is_one_word_compared_by_its_value(text: str, words: list[str]) -> None:
    assert content_words(text) == words


def test_json_text_walks_a_value_json_cannot_write() -> None:
    deep: JsonValue = "core"
    for _ in range(5_000):
        deep = [deep]
    value: JsonValue = {"huge": 10**5000, "note": "kept", "deep": deep}
    assert content_words(json_text(value)) == ["huge", "note", "deep", "core", "kept"]
