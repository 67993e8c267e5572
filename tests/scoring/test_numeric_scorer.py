"""The numeric scorer: how numbers are read, paths, tolerances, and what it cannot read."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arbiter.contract import Output
from arbiter.errors import InputError
from arbiter.scoring.numeric import first_number, parse_number
from tests.scoring.support import build, score_one


@pytest.mark.parametrize(
    ("text", "number", "written"),
    [
        ("42", 42.0, "42"),
        ("the answer is 42.", 42.0, "42"),
        ("-3 degrees", -3.0, "-3"),
        ("+3 degrees", 3.0, "+3"),
        ("a drop of −3.5 points", -3.5, "−3.5"),
        ("COVID-19", 19.0, "19"),
        ("x=-2", -2.0, "-2"),
        ("1,234,567.89 dollars", 1234567.89, "1,234,567.89"),
        ("1,2345", 1.0, "1"),
        ("items 1,2,3", 1.0, "1"),
        ("3,5 kg", 3.0, "3"),
        ("45%", 45.0, "45"),
        ("$1.5e3", 1500.0, "1.5e3"),
        ("about .5 of it", 0.5, ".5"),
        ("version 1.2.3", 1.2, "1.2"),
        ("3 eggs", 3.0, "3"),
        ("H2O", 2.0, "2"),
    ],
)
def test_the_first_number_is_read_as_people_write_it(
    text: str, number: float, written: str
) -> None:
    read = first_number(text)
    assert read is not None
    assert (read.value, read.written) == (number, written)


@pytest.mark.parametrize("text", ["no digits", "", "1e999", "9" * 400])
def test_no_number_or_one_too_large_for_a_float_reads_none(text: str) -> None:
    assert first_number(text) is None


@pytest.mark.parametrize(
    ("text", "number"), [(" 1,234.5 ", 1234.5), ("-7", -7.0), ("7 apples", None), ("", None)]
)
def test_an_expected_text_must_be_exactly_one_number(text: str, number: float | None) -> None:
    assert parse_number(text) == number


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_a_float_written_by_python_reads_back_exactly(number: float) -> None:
    read = first_number(f"the result: {number!r} units")
    assert read is not None
    assert read.value == number


@pytest.mark.parametrize(
    ("option", "output", "expected", "passed", "value"),
    [
        ("numeric", "It is 42.", 42, True, 0.0),
        ("numeric", "It is 41.", 42, False, 1.0),
        ("numeric:abs_tol=1", "It is 41.", 42, True, 1.0),
        ("numeric:rel_tol=0.05", "It is 100", 104, True, 4.0),
        ("numeric:rel_tol=0.01", "It is 100", 104, False, 4.0),
        ("numeric", "0.30000000000000004", 0.3, True, pytest.approx(5.5e-17)),
        ("numeric", "It is 42.", "42", True, 0.0),
        ("numeric", "It is 1,234.", "1,234", True, 0.0),
        ("numeric:path=total", {"total": 10.0}, 10, True, 0.0),
        ("numeric:path=total", {"total": "$10.00"}, 10, True, 0.0),
        ("numeric:path=items.1.price", '{"items": [{"price": 1}, {"price": 2}]}', 2, True, 0.0),
        ("numeric:expected_path=answer", "12", {"answer": 12}, True, 0.0),
    ],
)
def test_numeric_compares_within_its_tolerances(
    option: str, output: object, expected: object, passed: bool, value: float
) -> None:
    score = score_one(option, output, expected=expected)
    assert score.passed is passed
    assert score.value == value


def test_a_bare_json_number_output_is_read() -> None:
    assert score_one("numeric", Output(raw=7), expected=7).passed is True


def test_the_number_read_is_the_evidence_and_the_explanation_shows_both() -> None:
    score = score_one("numeric", "roughly 1,234.5 km", expected=1200)
    (evidence,) = score.evidence
    assert (evidence.quote, evidence.verified) == ("1,234.5", True)
    assert evidence.note == "the number read, at character 8"
    assert score.explanation == (
        "read 1234.5, expected 1200 (off by 34.5; abs_tol=0, rel_tol=1e-09)"
    )


@pytest.mark.parametrize(
    ("option", "output", "reason"),
    [
        ("numeric", "no idea", "no number in 'no idea'"),
        ("numeric:path=total", {"sum": 1}, "the output has no value at 'total'"),
        ("numeric:path=total", {"total": True}, "the output's 'total' is a boolean, not a number"),
        ("numeric:path=total", {"total": "n/a"}, "no number at 'total': 'n/a'"),
        (
            "numeric:path=total",
            "not json",
            "the output is not JSON: Expecting value at character 0",
        ),
        (
            "numeric",
            Output(raw={"a": 1}),
            "the output is an object, not a number: say where it is with path=",
        ),
        ("numeric", Output(raw="n/a"), "the output 'n/a' is not a number"),
    ],
)
def test_an_output_without_a_number_fails_and_says_why(
    option: str, output: object, reason: str
) -> None:
    score = score_one(option, output, expected=1)
    assert (score.passed, score.value, score.explanation) == (False, None, reason)


@pytest.mark.parametrize(
    ("expected", "option", "reason"),
    [
        (None, "numeric", "the example has no expected number"),
        ("about 5", "numeric", "the example's expected 'about 5' is not a number"),
        (True, "numeric", "the example's expected is a boolean, not a number"),
        ({"a": 1}, "numeric:expected_path=b", "the example's expected has no value at 'b'"),
        (10**400, "numeric", "the example's expected is too large a number"),
    ],
)
def test_without_an_expected_number_numeric_abstains(
    expected: object, option: str, reason: str
) -> None:
    score = score_one(option, "5", expected=expected)
    assert (score.passed, score.explanation) == (None, reason)


def test_an_error_too_large_for_a_float_has_no_value() -> None:
    score = score_one("numeric", "1e308", expected=-1e308)
    assert score.passed is False
    assert score.value is None


@pytest.mark.parametrize(
    "option", ["numeric:abs_tol=-1", "numeric:rel_tol=-0.1", "numeric:abs_tol=inf"]
)
def test_tolerances_must_be_finite_and_non_negative(option: str) -> None:
    with pytest.raises(InputError, match="parameter of numeric must be a number >= 0"):
        build(option)


@given(
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.sampled_from([0.0, 1e-6, 0.5]),
    st.sampled_from([0.0, 1e-9, 0.01]),
)
def test_tolerances_mean_what_they_mean_in_math_isclose(
    actual: float, expected: float, abs_tol: float, rel_tol: float
) -> None:
    option = f"numeric:abs_tol={abs_tol!r},rel_tol={rel_tol!r}"
    score = score_one(option, repr(actual), expected=expected)
    assert score.passed is math.isclose(actual, expected, rel_tol=rel_tol, abs_tol=abs_tol)
    assert score.value == abs(actual - expected)
