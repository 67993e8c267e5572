"""The regex scorer: RE2 syntax and flags, search or full match, bounded evidence."""

from __future__ import annotations

import pytest

from arbiter.errors import InputError
from tests.scoring.support import build, score_one


@pytest.mark.parametrize(
    ("option", "output", "passed"),
    [
        (r"regex:pattern=\d{4}", "founded in 1889", True),
        (r"regex:pattern=\d{4}", "founded in 89", False),
        (r"regex:pattern=\d{4},mode=fullmatch", "founded in 1889", False),
        (r"regex:pattern=\d{4},mode=fullmatch", "1889", True),
        ("regex:pattern=paris", "PARIS", False),
        ("regex:pattern=paris,flags=i", "PARIS", True),
        ("regex:pattern=^b$", "a\nb", False),
        ("regex:pattern=^b$,flags=m", "a\nb", True),
        ("regex:pattern=a.b", "a\nb", False),
        ("regex:pattern=a.b,flags=s", "a\nb", True),
        ("regex:pattern=a.b,flags=is", "A\nB", True),
        (r'regex:pattern="^(yes|no)\\b"', "yes, surely", True),
    ],
)
def test_regex_matches_with_its_flags_and_mode(option: str, output: str, passed: bool) -> None:
    score = score_one(option, output)
    assert score.passed is passed
    assert score.value == float(passed)


def test_a_match_is_evidence_from_the_output() -> None:
    score = score_one(r"regex:pattern=\d+", "in 1889 it")
    (evidence,) = score.evidence
    assert (evidence.quote, evidence.verified, evidence.note) == ("1889", True, "at character 3")


@pytest.mark.parametrize(
    ("option", "output", "quote", "at"),
    [
        (r"regex:pattern=\d+", "in 1889 it", "1889", 3),
        (r"regex:pattern=\d+", "à Paris en 1889", "1889", 11),
        ("regex:pattern=caf.", "le café ouvre", "café", 3),
        ("regex:pattern=ÉTÉ,flags=i", "un été chaud", "été", 3),
        ("regex:pattern=x*", "yes", "", 0),
        (r"regex:pattern=\d+,mode=fullmatch", "1889", "1889", 0),
        (r"regex:pattern=.\d+,mode=fullmatch", "é1889", "é1889", 0),
    ],
    ids=["ascii", "accents-before", "accent-in-match", "folded", "empty", "full", "full-accent"],
)
def test_a_match_is_located_in_characters_whatever_the_text(
    option: str, output: str, quote: str, at: int
) -> None:
    (evidence,) = score_one(option, output).evidence
    assert (evidence.quote, evidence.verified, evidence.note) == (quote, True, f"at character {at}")


def test_a_long_match_is_quoted_in_part() -> None:
    score = score_one("regex:pattern=a+", "a" * 5_000)
    (evidence,) = score.evidence
    assert evidence.quote == "a" * 200
    assert evidence.note == "at character 0 (the first 200 of 5,000 characters)"


def test_a_pattern_that_backtracks_exponentially_in_re_is_linear_on_re2() -> None:
    # With Python's re this search takes longer than the age of the universe.
    score = score_one("regex:pattern=(a+)+$", "a" * 100_000 + "!")
    assert score.passed is False
    assert score.explanation.startswith("no match of '(a+)+$' in 'aaaa")


def test_the_failure_names_pattern_and_text() -> None:
    assert score_one(r"regex:pattern=\d", "none here").explanation == (
        r"no match of '\\d' in 'none here'"
    )
    assert score_one("regex:pattern=a,mode=fullmatch", "ab").explanation == (
        "'ab' does not match 'a' as a whole"
    )


def test_a_lone_surrogate_in_the_output_does_not_stop_matching() -> None:
    score = score_one("regex:pattern=b", "a\ud800b")
    assert score.passed is True
    assert score.evidence[0].verified is None  # the text searched was not quite the output


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("regex:pattern=(?=a)b", r"not RE2 syntax \(invalid perl operator: \(\?=\)"),
        (r"regex:pattern=(a)\1", "invalid escape sequence"),
        ("regex:pattern=(a", "missing \\)"),
        ("regex:pattern=a,flags=x", "unknown regex flag 'x'"),
        ("regex:pattern=a,mode=match", "mode"),
        ("regex", "pattern"),
    ],
)
def test_a_bad_pattern_is_refused_when_built(
    option: str, message: str, capfd: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(InputError, match=message):
        build(option)
    assert capfd.readouterr().err == ""  # RE2's own logging is off
