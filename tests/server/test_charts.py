"""The pages' SVG charts: well-formed, honest about their numbers, inert on hostile labels."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from arbiter.server import charts

SVG = "{http://www.w3.org/2000/svg}"
HOSTILE = '<script>alert(1)</script>" onmouseover="x()" \x1b[31mred'


def _parse(markup: str) -> ET.Element:
    return ET.fromstring(markup)


def _texts(root: ET.Element) -> str:
    return " ".join("".join(el.itertext()) for el in root.iter(f"{SVG}text"))


def test_a_whisker_spans_its_interval_and_dots_the_estimate() -> None:
    root = _parse(charts.whisker(0.5, 0.25, 0.75, width=112))
    track = root.find(f"{SVG}rect")
    band = root.findall(f"{SVG}rect")[1]
    dot = root.find(f"{SVG}circle")
    assert track is not None
    assert dot is not None
    assert float(band.get("x", "")) == pytest.approx(6 + 100 * 0.25)
    assert float(band.get("width", "")) == pytest.approx(50)
    assert float(dot.get("cx", "")) == pytest.approx(6 + 50)
    assert root.get("aria-label") == "50.0%, 95% interval 25.0% to 75.0%"


def test_no_estimate_draws_nothing() -> None:
    assert charts.whisker(None, None, None) == ""
    assert charts.interval_bars([]) == ""
    assert charts.heat_map([], []) == ""
    assert charts.sparkline([None, None]) == ""


def test_hostile_labels_stay_text_in_every_chart() -> None:
    made = [
        charts.interval_bars([charts.IntervalRow(HOSTILE, 0.4, 0.3, 0.5, 10)]),
        charts.delta_bars([charts.DeltaRow(HOSTILE, 0.1, -0.05, 0.2)]),
        charts.heat_map([HOSTILE, "b"], [[3, 1], [0, 4]]),
    ]
    for markup in made:
        root = _parse(markup)  # well-formed: nothing broke out of its element
        assert not list(root.iter("script"))
        assert not list(root.iter(f"{SVG}script"))
        for element in root.iter():
            assert not any(name.startswith("on") for name in element.attrib)
        assert "\x1b" not in markup
        assert "\\x1b[31m" in "".join(root.itertext())


def test_the_heat_map_shades_by_the_row_share_and_counts_every_cell() -> None:
    root = _parse(charts.heat_map(["low", "high"], [[30, 10], [0, 60]]))
    assert "30" in _texts(root)
    assert "75%" in _texts(root)
    shaded = [r for r in root.iter(f"{SVG}rect") if r.get("fill-opacity") is not None]
    assert [float(r.get("fill-opacity", "")) for r in shaded] == pytest.approx(
        [0.08 + 0.8 * 0.75, 0.08 + 0.8 * 0.25, 0, 0.88]
    )


@pytest.mark.parametrize(
    ("value", "shown"), [(0.031, "+3.1 pp"), (-0.004, "−0.4 pp"), (0.00001, "0.0 pp"), (None, "–")]
)
def test_signed_points_keep_their_sign(value: float | None, shown: str) -> None:
    assert charts.signed_pct(value) == shown


def test_a_delta_axis_is_symmetric_and_holds_the_widest_interval() -> None:
    root = _parse(charts.delta_bars([charts.DeltaRow("a", 0.02, -0.12, 0.16)]))
    ticks = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "muted"]
    assert ticks == ["−20 pp", "0 pp", "+20 pp"]


def test_a_band_strip_has_a_segment_per_item() -> None:
    root = _parse(charts.band_strip(["healthy", "danger", None, "review"]))
    assert [r.get("class") for r in root.iter(f"{SVG}rect")] == [
        "band-healthy",
        "band-danger",
        "band-none",
        "band-review",
    ]
