"""Reading a judge's answer leniently, and demoting a verdict whose quotes are not there."""

from __future__ import annotations

import math

import pytest

from arbiter.errors import InvalidResponse
from arbiter.judges.verdicts import checked_ruling, parse_ruling


@pytest.mark.parametrize(
    ("text", "verdict", "score"),
    [
        ('{"verdict": "pass", "score": 0.8, "evidence": [], "reasoning": "ok"}', "pass", 0.8),
        ('```json\n{"verdict": "FAIL", "score": "0.1"}\n```', "fail", 0.1),
        ('{"verdict": " Unknown ", "score": 1}', "unknown", 1.0),
        ('{"verdict": "yes"}', "pass", math.nan),
        ('{"verdict": "pass", "score": true}', "pass", math.nan),
    ],
)
def test_near_miss_answers_are_read_for_what_they_mean(
    text: str, verdict: str, score: float
) -> None:
    parsed = parse_ruling(text)
    assert parsed.verdict == verdict
    assert parsed.score == score or (math.isnan(score) and math.isnan(parsed.score))


@pytest.mark.parametrize(
    "text",
    ["not json at all", "[1, 2]", '{"verdict": "maybe"}', '{"score": 1}', "{" + " " * 70_000 + "}"],
)
def test_an_answer_without_a_readable_verdict_is_invalid(text: str) -> None:
    with pytest.raises(InvalidResponse):
        parse_ruling(text)


def test_evidence_given_as_bare_strings_or_one_object_is_read() -> None:
    bare = parse_ruling('{"verdict": "fail", "evidence": ["a", "b"]}')
    single = parse_ruling('{"verdict": "fail", "evidence": {"quote": "c", "shows": "s"}}')
    assert [q.quote for q in bare.evidence] == ["a", "b"]
    assert [(q.quote, q.shows) for q in single.evidence] == [("c", "s")]


def test_a_verdict_resting_only_on_missing_quotes_is_demoted_to_unknown() -> None:
    answer = parse_ruling('{"verdict": "fail", "score": 0.0, "evidence": ["the moon is cheese"]}')
    ruling = checked_ruling(answer, ["The answer says 42.", "chunk: 42 is the answer"])
    assert (ruling.verdict, ruling.answered, ruling.demoted) == ("unknown", "fail", True)
    assert [e.verified for e in ruling.evidence] == [False]


def test_one_verified_quote_keeps_the_verdict_and_quotes_are_checked_in_every_text_shown() -> None:
    answer = parse_ruling(
        '{"verdict": "fail", "evidence": ["invented", "“42 is the   answer”"], "score": 0.2}'
    )
    ruling = checked_ruling(answer, ["The answer says 42.", 'chunk: "42 is the answer"'])
    assert (ruling.verdict, ruling.demoted, ruling.score) == ("fail", False, 0.2)
    assert [e.verified for e in ruling.evidence] == [False, True]


def test_a_verdict_without_quotes_stands_and_a_score_out_of_range_is_ignored() -> None:
    ruling = checked_ruling(parse_ruling('{"verdict": "fail", "score": 4}'), ["text"])
    assert (ruling.verdict, ruling.demoted, ruling.score) == ("fail", False, None)
