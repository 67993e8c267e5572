"""Figures: numbers as written (precision, percents, scales) and looked up in source numbers."""

from __future__ import annotations

import pytest
from pydantic import JsonValue

from arbiter.scoring.figures import NumberIndex, figures_in, json_numbers


@pytest.mark.parametrize(
    ("text", "value", "tolerance", "percent"),
    [
        ("1,234.5", 1234.5, 0.05, False),
        ("1234.50", 1234.5, 0.005, False),
        ("12%", 12.0, 0.5, True),
        ("12.5 %", 12.5, 0.05, True),
        ("7 percent", 7.0, 0.5, True),
        ("1.2 million", 1.2e6, 5e4, False),
        ("3bn", 3e9, 5e8, False),
        ("4.5K", 4500.0, 50.0, False),
        ("−5", 5.0, 0.5, False),  # magnitudes
        ("2e3", 2000.0, 500.0, False),
    ],
)
def test_a_figure_carries_its_value_and_the_tolerance_of_its_precision(
    text: str, value: float, tolerance: float, percent: bool
) -> None:
    (figure,) = figures_in(f"was {text} then")
    assert figure.value == pytest.approx(value)
    assert figure.tolerance == pytest.approx(tolerance)
    assert figure.percent is percent


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("1. Revenue 5\n2) Costs 3", [5.0, 3.0]),  # list markers are not figures
        ("  - 3. item", []),
        ("see 2) below", [2.0]),  # mid-line: a figure
        ("5MB and 3M users", [5.0, 3e6]),  # a letter scale only on its own
    ],
)
def test_list_markers_and_units_are_read_as_people_mean_them(
    text: str, values: list[float]
) -> None:
    assert [f.value for f in figures_in(text)] == values


@pytest.mark.parametrize(
    ("answer", "found"),
    [
        ("1,234.50", True),
        ("1234", True),  # rounds 1234.5 at its precision: half a unit away
        ("1233", False),
        ("12.3%", True),  # 0.1234 as a percent
        ("12%", True),
        ("13%", False),
        ("5%", True),  # -0.05: compared as magnitudes
        ("0.05", True),
        ("1.2 million", True),
    ],
)
def test_an_index_finds_a_figure_within_its_written_precision(answer: str, found: bool) -> None:
    index = NumberIndex([1234.5, 0.1234, -0.05, 1_203_400])
    (figure,) = figures_in(answer)
    assert index.holds(figure) is found


def test_json_numbers_reads_numbers_strings_and_keys_without_markers() -> None:
    value: JsonValue = {"n": 3, "flag": True, "note": "up 45% to 1,200", "2024": [1, 2]}
    assert sorted(json_numbers(value)) == [0.45, 1.0, 2.0, 3.0, 45.0, 1200.0, 2024.0]


def test_figures_in_stops_at_its_limit_on_a_text_of_numbers() -> None:
    assert len(list(figures_in("1 " * 500_000))) == 10_000


@pytest.mark.parametrize(
    ("text", "values"),
    [("Revenue rose [1].", []), ("as noted [^2] and [1, 3]", []), ("the range [1.5]", [1.5])],
)
def test_citation_markers_are_not_figures(text: str, values: list[float]) -> None:
    assert [f.value for f in figures_in(text)] == values


@pytest.mark.parametrize("text", ["0e99999", "0e" + "9" * 5000, "5e-99999", "1e400"])
def test_an_extreme_exponent_is_read_without_overflow(text: str) -> None:
    values = [f.value for f in figures_in(text)]
    assert values in ([0.0], [5.0], [])
    assert list(json_numbers({"x": text})) == values
