"""The ``numeric`` scorer: the number an output gives is close to the expected one.

The output's number is the first one written in its text, or the value at a dotted
path of its JSON. A number is read as people write it: an optional sign (``-``, ``+``
or ``−``, not after a letter, so ``COVID-19`` reads 19), digits with optional
thousands separators in groups of three (``1,234,567``), an optional decimal part
(``.5``, ``3.25``) and exponent (``1e-3``). A percent sign or a currency is not read
(``45%`` is 45), nor a decimal comma (``3,5`` reads 3). Numbers too large for a float
count as no number.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from pydantic import JsonValue

from arbiter.contract import Evidence, Example, Output, Score
from arbiter.params import check_number
from arbiter.scoring.base import ScoreFunction, scorer
from arbiter.scoring.reading import Missing, follow_path, json_kind, output_json, quoted

__all__ = ["ReadNumber", "first_number", "numeric", "parse_number"]

# Linear on any text: every alternative is either of bounded length or ends the match
# where its digits end, and all that follows a body is optional.
_NUMBER = re.compile(
    r"(?P<sign>(?<![\w.])[-+\u2212])?"
    r"(?P<body>(?:[0-9]{1,3}(?:,[0-9]{3}(?![0-9]))+|[0-9]+)(?:\.[0-9]+)?|(?<![\w.])\.[0-9]+)"
    r"(?P<exponent>[eE][-+]?[0-9]+)?"
)


@dataclass(frozen=True)
class ReadNumber:
    """A number found in a text, with where it was written."""

    value: float
    """The number."""
    written: str
    """How the text wrote it (``1,234.5``)."""
    at: int
    """The character it starts at."""


def _value(found: re.Match[str]) -> float | None:
    body = found["body"].replace(",", "") + (found["exponent"] or "")
    number = float(body)
    if found["sign"] in ("-", "\u2212"):
        number = -number
    return number if math.isfinite(number) else None


def first_number(text: str) -> ReadNumber | None:
    """The first number written in ``text``, or None when it has none (or too large one).

    Examples:
        >>> first_number("about −1,234.5 km").value
        -1234.5
    """
    found = _NUMBER.search(text)
    if found is None:
        return None
    number = _value(found)
    return None if number is None else ReadNumber(number, found[0], found.start())


def parse_number(text: str) -> float | None:
    """``text`` read as one number (spaces around allowed), or None when it is not one."""
    found = _NUMBER.fullmatch(text.strip())
    return None if found is None else _value(found)


def _json_number(value: JsonValue, what: str) -> float | Missing:
    """A JSON value as a number: a number, or a text holding one; else why not."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            number = float(value)
        except OverflowError:
            return Missing(f"{what} is too large a number")
        return number if math.isfinite(number) else Missing(f"{what} is not a finite number")
    if isinstance(value, str):
        parsed = parse_number(value)
        return parsed if parsed is not None else Missing(f"{what} {quoted(value)} is not a number")
    return Missing(f"{what} is {json_kind(value)}, not a number")


def _expected_number(example: Example, path: str | None) -> float | Missing:
    expected: JsonValue = example.expected
    if expected is None:
        expected = example.expected_label
    if expected is None:
        return Missing("the example has no expected number")
    if path is not None:
        expected = follow_path(expected, path, "the example's expected")
        if isinstance(expected, Missing):
            return expected
    return _json_number(expected, "the example's expected")


def _output_number(output: Output, path: str | None) -> ReadNumber | float | Missing:
    if path is not None:
        document = output_json(output)
        if isinstance(document, Missing):
            return document
        value = follow_path(document, path, "the output")
        if isinstance(value, Missing):
            return value
        if isinstance(value, str):
            read = first_number(value)
            return (
                read.value
                if read is not None
                else Missing(f"no number at {path!r}: {quoted(value)}")
            )
        return _json_number(value, f"the output's {path!r}")
    text = output.answer_text
    if text is None:
        if isinstance(output.raw, dict | list):
            kind = json_kind(output.raw)
            return Missing(f"the output is {kind}, not a number: say where it is with path=")
        if output.raw is not None:  # a system that answered a bare JSON number
            return _json_number(output.raw, "the output")
        return Missing("the output has no text")
    read = first_number(text)
    return read if read is not None else Missing(f"no number in {quoted(text)}")


def _shown(number: float) -> str:
    return f"{number:.12g}"


@scorer(
    name="numeric",
    description="The first number of the text (or the value at a JSON path) is close to "
    "the expected number.",
    reference="expected",
)
def numeric(
    *,
    path: str | None = None,
    expected_path: str | None = None,
    abs_tol: float = 0.0,
    rel_tol: float = 1e-9,
) -> ScoreFunction:
    """The output's number equals the expected one within tolerances (as ``math.isclose``).

    The value is the absolute error. The expected number is the example's ``expected``
    (a number or a text holding exactly one), or the value at ``expected_path`` in it.

    Args:
        path: Dotted path of the number in the output's JSON; None: the first number
            of its text.
        expected_path: Dotted path of the number in the example's ``expected``.
        abs_tol: Largest absolute difference that passes.
        rel_tol: Largest difference relative to the larger magnitude that passes.
    """
    check_number(abs_tol, "abs_tol", "numeric", minimum=0)
    check_number(rel_tol, "rel_tol", "numeric", minimum=0)

    def score(example: Example, output: Output) -> Score:
        expected = _expected_number(example, expected_path)
        if isinstance(expected, Missing):
            return Score(explanation=expected.reason)
        read = _output_number(output, path)
        if isinstance(read, Missing):
            return Score(passed=False, explanation=read.reason)
        actual = read.value if isinstance(read, ReadNumber) else read
        error = abs(actual - expected)
        passed = math.isclose(actual, expected, rel_tol=rel_tol, abs_tol=abs_tol)
        explanation = f"read {_shown(actual)}, expected {_shown(expected)}"
        if not passed:
            explanation += f" (off by {_shown(error)}; abs_tol={abs_tol:g}, rel_tol={rel_tol:g})"
        evidence = []
        if isinstance(read, ReadNumber):
            note = f"the number read, at character {read.at}"
            evidence.append(Evidence(quote=read.written, verified=True, note=note))
        return Score(
            value=error if math.isfinite(error) else None,
            passed=passed,
            explanation=explanation,
            evidence=evidence,
        )

    return score
