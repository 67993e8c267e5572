"""The run pages in chromium over the seeded store: runs, one run, compare, a verdict.

Set ``ARBITER_SHOTS_DIR=docs/img`` to refresh the screenshots docs/ui.md shows.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

from arbiter.service.runs import load_run
from arbiter.store import Store
from tests.server.pages.conftest import PageEvents, Seeded, shoot

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page


def _open(page: Page, url: str) -> None:
    response = page.goto(url)
    assert response is not None
    assert response.status == 200, url


def test_the_runs_table_shows_each_run_with_its_figure_and_interval(
    page: Page, page_events: PageEvents, live_url: str, seeded: Seeded
) -> None:
    _open(page, live_url)
    rows = page.locator("table.runs tbody tr")
    titles = rows.locator("td:nth-child(2) a strong").all_inner_texts()
    assert {"screener v1", "screener v2", "qa assistant"} <= set(titles)
    v1 = rows.filter(has_text="screener v1")
    assert v1.locator("td.num strong").first.inner_text() == "87.1%"
    assert "[82.2%, 90.7%]" in v1.inner_text()
    assert v1.locator("svg.chart").count() == 1
    assert page_events.errors == []


def test_recent_verdicts_on_the_runs_page_open_the_verdict(
    page: Page, live_url: str, seeded: Seeded
) -> None:
    _open(page, live_url)
    page.click("table.verdicts >> text=multi_02")
    page.wait_for_url(re.compile(f"/verdicts/{seeded.verdicts['multi_02']}$"))
    assert page.locator(".decision .pill").first.inner_text() == "REJECT"


def test_filters_narrow_the_runs_by_tag_and_system(
    page: Page, live_url: str, seeded: Seeded
) -> None:
    _open(page, live_url)
    page.fill("input[name=tag]", "version=v2")
    page.click("form.filters button[type=submit]")
    page.wait_for_url(re.compile(r"tag=version%3Dv2"))
    assert page.locator("table.runs tbody tr").all_inner_texts()[0].count("screener v2") == 1
    assert page.locator("table.runs tbody tr").count() == 1
    _open(page, f"{live_url}/?system=demo.qa")
    assert page.locator("table.runs tbody tr a strong").all_inner_texts() == ["qa assistant"]
    _open(page, f"{live_url}/?dataset=no-such-dataset")
    assert "No run matches these filters." in page.locator(".empty").inner_text()


def test_picking_a_and_b_in_the_runs_table_opens_their_comparison(
    page: Page, live_url: str, seeded: Seeded
) -> None:
    _open(page, live_url)
    page.check(f"input[name=a][value='{seeded.demo_run}']")
    page.check(f"input[name=b][value='{seeded.demo_v2_run}']")
    page.click("text=Compare A → B")
    page.wait_for_url(re.compile("/compare"))
    assert page.locator("h1").inner_text() == "screener v1 → screener v2"


def test_a_run_page_has_figures_heat_map_cohorts_and_failures_first(
    page: Page, page_events: PageEvents, live_url: str, seeded: Seeded, pages_store: Store
) -> None:
    _open(page, f"{live_url}/runs/{seeded.demo_run}")
    lead = page.locator(".figure-lead")
    assert lead.locator(".figure-name").inner_text().lower() == "accuracy (mapped)"
    assert lead.locator(".figure-value").inner_text() == "87.1%"
    assert page.locator("svg[aria-label='confusion matrix of 2 labels']").count() == 1
    assert page.locator("svg[aria-label='pass rate per cohort by 4 groups']").count() == 1
    run = load_run(pages_store, seeded.demo_run)
    failed = sum(1 for r in run.results if r.passed is False)
    outcomes = page.locator("table.examples tr.example td:nth-child(6)").all_inner_texts()
    assert len(outcomes) == 50  # one page
    assert outcomes[:failed] == ["failed"] * failed
    assert set(outcomes[failed:]) == {"passed"}
    assert "1–50 of 240" in page.locator(".pager").last.inner_text()
    assert page_events.errors == []


def test_the_failing_tab_holds_exactly_the_failures_and_pages_on(
    page: Page, live_url: str, seeded: Seeded, pages_store: Store
) -> None:
    run = load_run(pages_store, seeded.demo_run)
    failed = sorted(r.example_id for r in run.results if r.passed is False)
    _open(page, f"{live_url}/runs/{seeded.demo_run}")
    page.click("nav.tabs >> text=Failing")
    page.wait_for_url(re.compile("show=failing"))
    shown = page.locator("table.examples tr.example td:first-child").all_inner_texts()
    assert sorted(shown) == failed
    _open(page, f"{live_url}/runs/{seeded.demo_run}?page=5")
    assert page.locator("table.examples tr.example").count() == 240 - 4 * 50
    assert page.locator(".pager a[rel=next]").count() == 0


def test_a_row_opens_with_the_keyboard_to_its_input_and_scores(
    page: Page, live_url: str, seeded: Seeded
) -> None:
    _open(page, f"{live_url}/runs/{seeded.demo_run}")
    opener = page.locator("button.opener").first
    detail = page.locator("tr.detail").first
    assert detail.is_hidden()
    opener.focus()
    page.keyboard.press("Enter")
    assert opener.get_attribute("aria-expanded") == "true"
    assert detail.is_visible()
    text = detail.inner_text()
    assert '"amount"' in text
    assert "expected 'high', got 'low'" in text
    page.keyboard.press("Enter")
    assert detail.is_hidden()


def test_a_scorer_tab_of_a_text_run_shows_its_explanations(
    page: Page, live_url: str, seeded: Seeded
) -> None:
    _open(page, f"{live_url}/runs/{seeded.qa_run}?show=failing&scorer=f1_tokens")
    cells = page.locator("table.examples tr.example td:nth-child(8) .pill").all_inner_texts()
    assert cells
    assert set(cells) == {"fail"}
    assert page.locator("table.examples thead th").all_inner_texts()[-2:] == [
        "casefold",
        "f1_tokens",
    ]


def test_the_comparison_shows_paired_deltas_cohorts_and_the_flips(
    page: Page, page_events: PageEvents, live_url: str, seeded: Seeded
) -> None:
    _open(page, f"{live_url}/compare?a={seeded.demo_run}&b={seeded.demo_v2_run}")
    figures = page.locator(".figure").all_inner_texts()
    assert any(f.startswith("FIXED\n10") or f.lower().startswith("fixed\n10") for f in figures)
    assert any(f.lower().startswith("broken\n1\n") for f in figures)
    accuracy = page.locator("table tbody tr", has_text="accuracy").first.inner_text()
    assert "+3.8 pp" in accuracy
    assert "excludes 0" in accuracy
    wire = page.locator("table tbody tr", has_text="wire").first.inner_text()
    assert "+16.7 pp" in wire
    broken = page.locator("h3", has_text="Broken in B").locator("xpath=following-sibling::div[1]")
    assert "txn-0128" in broken.inner_text()
    assert page.locator("svg[aria-label^='changes of']").count() == 3
    assert page_events.errors == []


def test_a_run_compared_with_itself_says_so_and_offers_other_runs(
    page: Page, live_url: str, seeded: Seeded
) -> None:
    _open(page, f"{live_url}/compare?a={seeded.demo_run}&b={seeded.demo_run}")
    status = page.locator(".compare-empty")
    assert "A and B are the same run." in status.inner_text()
    assert status.locator("a", has_text="screener v2").count() == 1
    assert page.locator("h2", has_text="What changed").count() == 0


def test_runs_with_no_example_in_common_say_there_is_nothing_to_compare(
    page: Page, live_url: str, seeded: Seeded
) -> None:
    _open(page, f"{live_url}/compare?a={seeded.demo_run}&b={seeded.qa_run}")
    status = page.locator(".compare-empty")
    assert "These runs share no example: there is nothing to compare." in status.inner_text()
    assert "A has 240 examples" in status.inner_text()
    assert page.locator("h2", has_text="Flipped examples").count() == 0


def test_the_verdict_page_marks_each_quote_where_it_stands(
    page: Page, live_url: str, seeded: Seeded
) -> None:
    _open(page, f"{live_url}/verdicts/{seeded.verdicts['multi_02']}")
    assert page.locator(".decision .pill").first.inner_text() == "REJECT"
    marks = page.locator(".output-text mark")
    assert marks.count() == 2
    quotes = page.locator("ol.callouts q").all_inner_texts()
    for i in range(marks.count()):
        # the mark holds the quote (and its number in a <sup>)
        assert marks.nth(i).inner_text().rstrip("0123456789") in quotes
    assert page.locator("table tbody tr").count() == 3  # a row per critic
    _open(page, f"{live_url}/verdicts/{seeded.verdicts['clean_01']}")
    assert page.locator(".decision .pill").first.inner_text() == "ACCEPT"
    assert page.locator(".output-text mark").count() == 0


@pytest.mark.parametrize(
    ("path", "shown"),
    [
        ("/runs/no-such-run", "no run matches id 'no-such-run'"),
        ("/verdicts/999999", "no verdict with id 999999"),
        ("/verdicts/abc", "no verdict with id 'abc'"),
        ("/compare?a=no-such-run&b=x", "no run matches id 'no-such-run'"),
    ],
)
def test_a_missing_record_is_a_404_page_that_says_what_is_missing(
    page: Page, live_url: str, path: str, shown: str
) -> None:
    response = page.goto(f"{live_url}{path}")
    assert response is not None
    assert response.status == 404
    assert shown in page.locator(".empty").inner_text()


def test_pages_forbid_inline_script_and_run_only_their_own(live_url: str, seeded: Seeded) -> None:
    response = httpx.get(f"{live_url}/runs/{seeded.demo_run}")
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy
    assert "style-src 'self'" in policy
    assert "unsafe-inline" not in policy
    tags = re.findall(r"<script[^>]*>", response.text)
    assert tags
    assert all(re.fullmatch(r'<script src="/static/arbiter\.js\?v=[^"]+">', t) for t in tags)
    assert " on" not in re.sub(r"<(?!/?[a-z])", "", response.text).split("<body")[0].lower()


def test_the_theme_toggle_switches_and_is_remembered(
    page: Page, live_url: str, seeded: Seeded
) -> None:
    _open(page, live_url)
    toggle = page.locator("#theme-toggle")
    before = page.evaluate("getComputedStyle(document.body).backgroundColor")
    toggle.click()
    theme = page.evaluate("document.documentElement.dataset.theme")
    assert theme in {"light", "dark"}
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") != before
    page.reload()
    assert page.evaluate("document.documentElement.dataset.theme") == theme


_SHOTS = [
    ("runs", "/"),
    ("run", "/runs/{demo_run}"),
    ("run-text", "/runs/{qa_run}"),
    ("compare", "/compare?a={demo_run}&b={demo_v2_run}"),
    ("verdict", "/verdicts/{multi_02}"),
]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_screenshots_of_every_page_at_desktop_and_phone_width(
    browser: Browser, live_url: str, seeded: Seeded, tmp_path: Path, scheme: str
) -> None:
    ids = {
        "demo_run": seeded.demo_run,
        "demo_v2_run": seeded.demo_v2_run,
        "qa_run": seeded.qa_run,
        "multi_02": seeded.verdicts["multi_02"],
    }
    for width, height, suffix in ((1280, 900, ""), (390, 844, "-phone")):
        context = browser.new_context(
            viewport={"width": width, "height": height}, color_scheme=scheme
        )
        page = context.new_page()
        for name, path in _SHOTS:
            _open(page, live_url + path.format(**ids))
            widest = page.evaluate("document.documentElement.scrollWidth")
            assert widest <= width + 1, f"{name} at {width}px scrolls sideways ({widest}px)"
            full = name in ("compare", "verdict") and not suffix
            shot = shoot(page, f"ui-{name}-{scheme}{suffix}.png", tmp_path, full_page=full)
            assert shot.stat().st_size > 10_000
            if name == "run" and not suffix:  # the table, a failing row opened
                page.locator("button.opener").first.click()
                page.locator("#examples").scroll_into_view_if_needed()
                page.evaluate(
                    "window.scrollBy(0, document.getElementById('examples')"
                    ".getBoundingClientRect().top - 16)"
                )
                shoot(page, f"ui-run-examples-{scheme}.png", tmp_path, full_page=False)
        context.close()
