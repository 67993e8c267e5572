"""The agent and annotation pages in chromium, over a store of real agent runs.

The store is filled by ``run_agent_cases`` with the agents of
:mod:`tests.server.pages.agents_seed` (a weather agent with parallel tool calls, one
that calls a forbidden tool, a coordinator with two sub-agents side by side, an untimed
agent, a flow, and an agent whose only check abstains). Set ``ARBITER_SHOTS_DIR`` to keep
the screenshots (docs/img/ui-agents*.png are made this way).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

import pytest

from tests.server.pages.agents_seed import QUIET
from tests.server.pages.conftest import Agents, PageEvents, shoot

if TYPE_CHECKING:
    from playwright.sync_api import Page


def _trajectory(agents: Agents, case_id: str) -> str:
    return f"{agents.url}/trajectories/{quote(agents.ids[case_id])}"


@pytest.fixture(autouse=True)
def _nothing_ran(page_events: PageEvents) -> Iterator[None]:
    """Every test's page opened no dialog and raised no script error."""
    yield
    assert page_events.dialogs == []
    assert page_events.errors == []


def test_roster_has_a_card_per_agent_and_flow_worst_health_first(
    page: Page, agents: Agents, tmp_path: Path
) -> None:
    page.goto(f"{agents.url}/agents")
    names = page.locator(".card .card-name").all_inner_texts()
    pills = page.locator(".card .card-head .pill").all_inner_texts()
    assert names == ["weather-bot", "research-desk", "billing-flow", "lookup-agent", QUIET]
    assert pills == ["Review", "Review", "Healthy", "Healthy", "Not evaluated"]
    # Stored agents also carry their trust state and integrity seal, in words.
    trust = page.locator(".card", has_text="weather-bot").locator(".card-trust")
    assert trust.inner_text().split() == ["Provisional", "?", "unknown"]
    flow = page.locator(".card", has_text="billing-flow")
    assert flow.locator(".badge-flow").inner_text() == "FLOW"
    quiet = page.locator(".card", has_text=QUIET)
    assert "not evaluated" in quiet.inner_text()
    assert "%" not in quiet.locator(".card-rate").inner_text()
    # weather-bot has stored trajectories: its card shows those (the REST roster's
    # figures), and says how many offline runs it also has.
    weather = page.locator(".card", has_text="weather-bot")
    assert "50.0%" in weather.inner_text()
    assert "n=2" in weather.inner_text()
    assert "2 live runs · 6 offline" in weather.inner_text()
    assert weather.locator("svg.spark-bars rect").count() == 2
    assert weather.locator("svg.spark-bars rect.sb-fail").count() == 1
    desk = page.locator(".card", has_text="research-desk")
    assert "66.7%" in desk.inner_text()
    assert "3 offline runs" in desk.inner_text()
    kpis = page.locator(".kpis").inner_text()
    assert "4 / 5" in kpis
    assert "17\n" in kpis  # 3 stored runs and 14 runs of case files
    assert "4 failed" in kpis  # 1 stored, 3 of case files
    shoot(page, "ui-agents-light.png", tmp_path)


def test_roster_filters_to_flows_and_searches_by_name(page: Page, agents: Agents) -> None:
    page.goto(f"{agents.url}/agents")
    page.get_by_role("link", name=re.compile(r"^Flows")).click()
    assert page.locator(".card .card-name").all_inner_texts() == ["billing-flow"]
    page.goto(f"{agents.url}/agents")
    page.get_by_label("Search by name").fill("WEATHER")
    page.get_by_role("button", name="Search").click()
    assert page.locator(".card .card-name").all_inner_texts() == ["weather-bot"]


def test_a_card_opens_with_the_keyboard(page: Page, agents: Agents) -> None:
    page.goto(f"{agents.url}/agents")
    for _ in range(40):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.classList.contains('card')"):
            break
    else:
        pytest.fail("no roster card took the focus")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/agents/weather-bot"))
    assert page.locator("h1").inner_text().startswith("weather-bot")


def test_agent_page_has_dimension_bars_and_a_ledger_that_compares_two_runs(
    page: Page, agents: Agents, tmp_path: Path
) -> None:
    page.goto(f"{agents.url}/agents/weather-bot")
    assert page.locator("svg.dim-bars").count() == 1
    assert page.locator("svg.dim-bars rect.db-danger, svg.dim-bars rect.db-review").count() >= 1
    live = page.locator("form.ledger-form table.ledger tbody tr")
    assert live.count() == 2
    assert page.locator("form.ledger-form tr.ledger-danger").count() == 1
    assert live.first.locator("svg.strip rect").count() >= 10  # one square per check
    offline = page.locator("#offline + .table-wrap table.ledger tbody tr")
    assert offline.count() == 6
    assert offline.first.locator("svg.strip rect").count() == 13
    shoot(page, "ui-agent-light.png", tmp_path)
    page.get_by_role("link", name=re.compile(r"^Danger")).click()
    assert page.locator("form.ledger-form table.ledger tbody tr").count() == 1
    # By default A is the older run (clean), B the newest (it called the forbidden tool).
    page.goto(f"{agents.url}/agents/weather-bot")
    page.get_by_role("button", name="Compare A ↔ B").click()
    page.wait_for_url(re.compile(r"/compare/trajectories\?"))
    added = page.locator("table.calls-diff tr.cd-added")
    assert added.count() == 1
    assert "delete_account" in added.inner_text()
    assert "only in B" in added.inner_text()
    assert page.locator("table.calls-diff tr.cd-same").count() == 2
    flips = page.locator("table.flips tbody tr", has_text="forbidden_tools")
    assert "broken" in flips.inner_text()
    assert page.locator("svg.waterfall").count() == 2
    shoot(page, "ui-compare-trajectories-light.png", tmp_path)


def test_two_offline_runs_compare_by_their_ids(page: Page, agents: Agents) -> None:
    a, b = quote(agents.ids["weather-5"]), quote(agents.ids["weather-4"])
    page.goto(f"{agents.url}/compare/trajectories?a={a}&b={b}")
    assert "delete_account" in page.locator("table.calls-diff tr.cd-added").inner_text()
    page.goto(f"{agents.url}/compare/trajectories?a={a}&b=run:nope:0:x")
    assert "No stored trajectory has the id given for B" in page.locator("main").inner_text()


def test_trajectory_waterfall_puts_parallel_calls_in_lanes_with_band_chips(
    page: Page, agents: Agents, tmp_path: Path
) -> None:
    page.goto(_trajectory(agents, "weather-1"))
    rows = page.locator("svg.waterfall .wf-row")
    assert rows.count() == 5
    lanes = page.locator("svg.waterfall .wf-lane").all_text_contents()
    assert lanes == ["∥1/2", "∥2/2"]
    assert page.locator("svg.waterfall .wf-par").count() == 2
    assert page.locator("svg.waterfall .wf-error").count() == 1
    assert page.locator(".chip.chip-fail", has_text="forbidden_tools").count() == 1
    assert page.locator(".chip.chip-review", has_text="tool_success_rate").count() == 1
    assert page.locator(".chip.chip-pass", has_text="required_tools").count() == 1
    assert page.locator(".figure-value.verdict-danger").inner_text() == "failed"
    shoot(page, "ui-trajectory-light.png", tmp_path)
    # A bar is a link to its step: the failed call's details are open, with its error.
    page.locator("svg.waterfall a.wf-link").nth(3).click()
    assert page.evaluate("location.hash") == "#step-3"
    step = page.locator("#step-3")
    assert "PermissionError: not allowed" in step.inner_text()
    assert '"user": "42"' in step.inner_text()


def test_sub_agents_are_indented_under_their_hand_offs(page: Page, agents: Agents) -> None:
    page.goto(_trajectory(agents, "desk-1"))
    labels = page.locator("svg.waterfall .wf-label").all_text_contents()
    assert [label.split()[-1] for label in labels] == [
        "gpt-4o",
        "fact-checker",
        "search",
        "claude-haiku",
        "summariser",
        "search",
        "claude-haiku",
        "gpt-4o",
    ]
    assert sum("└" in label for label in labels) == 4
    assert "3 groups" in page.locator(".wf-legend").inner_text()


def test_a_trace_without_times_says_its_axis_is_order(page: Page, agents: Agents) -> None:
    page.goto(_trajectory(agents, "lookup-1"))
    assert "carries no timing" in page.locator(".wf-panel").inner_text()
    assert page.locator("svg.waterfall .wf-lane").count() == 0


def test_a_missing_trajectory_is_a_404_page(page: Page, agents: Agents) -> None:
    response = page.goto(f"{agents.url}/trajectories/run:nope:0:x")
    assert response is not None
    assert response.status == 404
    assert "No stored trajectory" in page.locator("main").inner_text()


def test_agreeing_with_a_ruling_stores_it_and_shows_on_calibration(
    page: Page, agents: Agents, tmp_path: Path
) -> None:
    page.goto(f"{agents.url}/annotations")
    rulings = page.locator("li.ruling")
    before = rulings.count()
    assert before == 13
    page.get_by_label("You are").fill("Dana")
    page.get_by_role("button", name="Set").click()
    page.wait_for_load_state()
    assert "labelling as Dana" in page.locator("form.annotator").inner_text()
    first = page.locator("li.ruling").first
    judged = first.locator(".ruling-head a").inner_text()
    first.get_by_role("button", name="Agree", exact=True).click()
    page.wait_for_url(re.compile(r"/annotations\?.*saved="))
    assert "Saved" in page.locator(".flash").inner_text()
    # The ruling left the queue of what Dana has not labelled, and the name is kept.
    assert page.locator("li.ruling").count() == before - 1
    assert "labelling as Dana" in page.locator("form.annotator").inner_text()
    latest = page.locator("table tbody tr").first
    assert "Dana" in latest.inner_text()
    assert "agree" in latest.inner_text()
    shoot(page, "ui-annotations-light.png", tmp_path)
    assert judged not in page.locator("li.ruling .ruling-head a").all_inner_texts()
    page.locator("li.ruling").first.get_by_role("button", name="Disagree").click()
    page.wait_for_url(re.compile(r"saved="))
    page.goto(f"{agents.url}/calibration")
    row = page.locator("table.calibration tbody tr", has_text="seed_groundedness")
    assert "too few pairs" in row.inner_text()
    assert re.search(r"\b2\b", row.locator("td").nth(7).inner_text())
    shoot(page, "ui-calibration-light.png", tmp_path)
    page.locator("table.calibration a", has_text="seed_groundedness").click()
    assert page.locator("h1").inner_text().startswith("seed_groundedness")
    assert page.locator("table.compact tbody tr").count() == 2


def test_pages_read_on_a_phone_and_in_the_dark_theme(
    browser: object, agents: Agents, tmp_path: Path
) -> None:
    context = browser.new_context(  # type: ignore[attr-defined]
        viewport={"width": 390, "height": 844}, color_scheme="dark"
    )
    page = context.new_page()
    try:
        page.goto(f"{agents.url}/agents")
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390
        shoot(page, "ui-agents-dark-phone.png", tmp_path)
        page.goto(_trajectory(agents, "desk-1"))
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        shoot(page, "ui-trajectory-dark-phone.png", tmp_path)
    finally:
        context.close()
    context = browser.new_context(  # type: ignore[attr-defined]
        viewport={"width": 1280, "height": 900}, color_scheme="dark"
    )
    page = context.new_page()
    try:
        page.goto(_trajectory(agents, "desk-1"))
        background = page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert background == "rgb(15, 18, 23)"  # the dark theme's --bg
        shoot(page, "ui-trajectory-dark.png", tmp_path)
        page.goto(f"{agents.url}/agents")
        shoot(page, "ui-agents-dark.png", tmp_path)
    finally:
        context.close()


def test_a_trajectory_compares_with_the_run_before_it(page: Page, agents: Agents) -> None:
    page.goto(f"{agents.url}/agents/weather-bot")
    page.locator("form.ledger-form table.ledger tbody tr a").first.click()  # the newest
    page.get_by_role("link", name="Compare with the run before ↔").click()
    page.wait_for_url(re.compile(r"/compare/trajectories\?"))
    assert "delete_account" in page.locator("table.calls-diff tr.cd-added").inner_text()
    page.goto(_trajectory(agents, "weather-4"))  # offline: another run of its case, else older
    assert page.get_by_role("link", name="Compare with the run before ↔").count() == 1
