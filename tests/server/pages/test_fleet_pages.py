"""The trust pages in chromium: the fleet's posture matrix, comparing two agents, the band
thresholds, the agent page's trust section, the roster's dimensions, the annotation
page's online rulings and ambiguous tail, and the header's inbox count.

Its own store, every name a payload (:data:`PAYLOADS`): a trusted agent, one that fell
to at_risk and tripped the breaker (freeze), a provisional one; judge rulings whose judge
and reason are payloads, a run no judge decided, an escalated online result, and
thresholds set by a payload. Every page must show each payload as written and run none,
and a provisional agent must get no conduct figure.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

import httpx
import pytest

from arbiter.config import Settings
from arbiter.contract import ModelCalls, OnlineResult
from arbiter.service.inbox import unacked_count
from arbiter.service.trust import evaluate_breaker
from arbiter.service.trust_thresholds import set_thresholds
from arbiter.store import Store
from arbiter.store.online_repository import save_online_results
from arbiter.store.trust_judging_repository import save_rulings
from arbiter.trust import TrustPolicy
from tests.helpers.local_server import serve_on_free_port
from tests.server.pages.conftest import PageEvents, run_sync, shoot
from tests.server.pages.hostile_pages import FLAG, PAYLOADS
from tests.trust.helpers import save, stored

if TYPE_CHECKING:
    from playwright.sync_api import Page

GOOD, BAD, NEW = PAYLOADS["script"], PAYLOADS["attribute"], PAYLOADS["image"]
JUDGE, REASON = PAYLOADS["link"], PAYLOADS["svg"]


@dataclass(frozen=True)
class Fleet:
    url: str
    store: Store


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    from arbiter.server.app import create_app

    root: Path = tmp_path_factory.mktemp("fleet-pages")
    store = Store(f"sqlite:///{root / 'store.db'}")
    save(store, [stored(i, GOOD, True) for i in range(60)])
    save(store, [stored(100 + i, NEW, False) for i in range(3)])
    bad = [stored(200 + i, BAD, i < 2) for i in range(12)]
    save(store, bad)
    quiet = Settings(_env_file=None, trust_webhook_urls="")  # type: ignore[call-arg]
    policy = TrustPolicy(breaker_mode="freeze")
    run_sync(evaluate_breaker(store, bad, owner=None, policy=policy, settings=quiet))
    calls = ModelCalls(calls=1, cost_usd=0.002)
    save_rulings(
        store,
        run_id=bad[-1].id,
        run_hash="h",
        agent=BAD,
        owner=None,
        trigger="flagged",
        rulings=[(JUDGE, False, REASON, calls)],
    )
    save_rulings(
        store,
        run_id=bad[-2].id,
        run_hash="h",
        agent=BAD,
        owner=None,
        trigger="sampled",
        rulings=[("answer_groundedness", None, "", calls)],
    )
    save_online_results(
        store,
        "batch-1",
        [OnlineResult(prediction_id=GOOD, label=NEW, escalated=True, escalation_reasons=[REASON])],
    )
    set_thresholds(store, preset="strict", thresholds={"max_cost_usd": 0.3}, by=GOOD)
    app = create_app(Settings(_env_file=None, home=root / "home"), store=store)  # type: ignore[call-arg]
    with serve_on_free_port(app) as url:
        yield Fleet(url, store)
    store.close()


def _agent(name: str) -> str:
    return "/agents/" + quote(name, safe="")


PAGES = {
    "fleet": ("/fleet", (GOOD, BAD, NEW)),
    "compare": (f"/fleet/compare?a={quote(GOOD)}&b={quote(BAD)}", (GOOD, BAD)),
    "thresholds": ("/thresholds", (GOOD,)),
    "agent-at-risk": (_agent(BAD), (BAD,)),
    "agent-provisional": (_agent(NEW), (NEW,)),
    "agents": ("/agents", (GOOD, BAD, NEW)),
    "annotations": ("/annotations", (BAD, JUDGE, REASON, GOOD, NEW)),
}
"""Each page by name: its path and the payloads it must show as written."""


@pytest.mark.parametrize("name", list(PAGES))
def test_every_trust_page_shows_hostile_names_as_inert_text(
    name: str, page: Page, page_events: PageEvents, fleet: Fleet, tmp_path: Path
) -> None:
    path, shown = PAGES[name]
    response = page.goto(fleet.url + path)
    assert response is not None
    assert response.status == 200
    for cell in page.locator("main td, main th, main a").all()[:200]:
        cell.hover(timeout=2_000, force=True)
    assert page.evaluate(f"typeof window.{FLAG}") == "undefined"
    handlers = page.evaluate(
        "[...document.querySelectorAll('*')].filter(e => [...e.attributes]"
        ".some(a => a.name.startsWith('on'))).length"
    )
    assert handlers == 0
    links = page.evaluate(
        "[...document.querySelectorAll('[href]')].filter(e => "
        "e.getAttribute('href').trim().toLowerCase().startsWith('javascript:')).length"
    )
    assert links == 0
    assert page_events.dialogs == []
    assert page_events.errors == []
    text = page.locator("main").inner_text()
    for payload in shown:
        assert payload in text, (name, payload)
    shoot(page, f"trust-{name}.png", tmp_path)


def test_the_matrix_puts_the_worst_first_and_labels_each_cell_in_words(
    page: Page, fleet: Fleet
) -> None:
    page.goto(fleet.url + "/fleet")
    rows = page.locator("#posture-matrix tbody tr")
    states = [rows.nth(i).get_attribute("data-state") for i in range(rows.count())]
    assert states == ["at_risk", "provisional", "proven"]  # old evidence: stale
    assert "frozen" in rows.nth(0).inner_text()
    for cell in page.locator("#posture-matrix td.dim").all():
        health = cell.get_attribute("data-health")
        word = cell.locator(".dim-word").inner_text()
        assert word == {"inactive": "no verdict"}.get(health or "", health)
    scope = page.locator("#posture-matrix tbody tr").nth(0).locator("td.dim").first
    assert scope.get_attribute("data-health") == "danger"
    assert "17%" in scope.inner_text()  # 2 of 12 passed
    provisional = rows.nth(1).inner_text()
    assert "provisional" in provisional
    assert "%" not in rows.nth(1).locator("td").nth(2).inner_text()  # no conduct figure


def test_the_agent_page_has_a_seal_and_a_ring_with_its_interval(page: Page, fleet: Fleet) -> None:
    page.goto(fleet.url + _agent(BAD))
    section = page.locator("section.trust-section")
    assert section.locator(".seal").inner_text().strip().endswith("unknown")
    ring = section.locator("svg.ring")
    label = ring.get_attribute("aria-label") or ""
    assert label.startswith("conduct ")
    assert "95% interval" in label
    assert "over 12 evaluated runs" in label
    assert "frozen" in section.inner_text()
    assert "event:breaker_trip" in section.locator("table.trust-history").inner_text()


def test_a_provisional_agent_gets_an_empty_ring_and_no_figure(page: Page, fleet: Fleet) -> None:
    page.goto(fleet.url + _agent(NEW))
    ring = page.locator("section.trust-section svg.ring")
    assert ring.locator("text").first.inner_html() == "provisional"
    assert "%" not in ring.inner_html()
    assert ring.locator(".ring-value").count() == 0
    assert "Provisional" in page.locator("section.trust-section").inner_text()


def test_the_header_counts_what_nobody_acknowledged_on_every_page(page: Page, fleet: Fleet) -> None:
    expected = unacked_count(fleet.store)
    assert expected >= 1
    for path in ("/", "/agents", "/fleet", "/thresholds", "/annotations", "/inbox"):
        page.goto(fleet.url + path)
        assert page.locator("#header-unacked").inner_text() == str(expected), path
    events = httpx.get(fleet.url + "/v1/assurance/inbox?unacked=true").json()["items"]
    for event in events:
        answer = httpx.post(f"{fleet.url}/v1/assurance/inbox/{event['id']}/ack", json={})
        assert answer.status_code == 200
    page.goto(fleet.url + "/fleet")
    assert page.locator("#header-unacked").inner_text() == "0"


def test_the_thresholds_page_draws_each_metric_and_the_history(page: Page, fleet: Fleet) -> None:
    page.goto(fleet.url + "/thresholds")
    rows = page.locator("#threshold-lines tbody tr")
    assert rows.count() == 16
    cost = page.locator("#threshold-lines tbody tr", has_text="max_cost_usd")
    assert "> 0.3" in cost.inner_text()
    assert cost.locator("svg.bands").count() == 1
    # A line that differs from the shipped default is tagged as changed, with its reason.
    tag = cost.locator("span.tag")
    assert tag.inner_text() == "changed"
    assert tag.get_attribute("title") == "differs from the shipped default line"
    history = page.locator("#threshold-history tbody tr")
    assert history.count() == 1
    assert "strict" in history.first.inner_text()
    assert "preset" in page.locator(".page-head").inner_text()


def test_comparing_two_agents_shows_both_and_the_change(page: Page, fleet: Fleet) -> None:
    page.goto(f"{fleet.url}/fleet/compare?a={quote(GOOD)}&b={quote(BAD)}")
    panels = page.locator("#compare-agents section")
    assert panels.count() == 2
    assert "Proven" in panels.nth(0).inner_text()
    assert "At risk" in panels.nth(1).inner_text()
    rows = page.locator("#compare-dimensions tbody tr")
    assert rows.count() == 5
    assert "−83.3 pp" in rows.first.inner_text()  # 100% to 2 of 12
    missing = page.goto(f"{fleet.url}/fleet/compare?a={quote(GOOD)}&b=nobody")
    assert missing is not None
    assert missing.status == 404
    assert "No agent of that name" in page.locator("main").inner_text()


def test_the_annotation_page_lists_online_rulings_and_the_tail(page: Page, fleet: Fleet) -> None:
    page.goto(fleet.url + "/annotations")
    rulings = page.locator("#online-rulings-table tbody tr")
    assert rulings.count() == 2
    assert rulings.first.get_attribute("data-verdict") == "unknown"  # newest first
    assert rulings.nth(1).get_attribute("data-verdict") == "fail"
    tail = page.locator("#tail-runs tbody tr")
    assert tail.count() == 1
    assert "all abstained" in tail.first.inner_text()
    assert page.locator("#tail-online tbody tr").count() == 1
    queue = page.locator("#queue ~ .empty").inner_text()
    assert "online judge rulings on ingested runs are listed below" in queue


# The form tests change the stored thresholds: they come last in this module.


def test_the_thresholds_form_sets_lines_kept_in_the_history(page: Page, fleet: Fleet) -> None:
    page.goto(fleet.url + "/thresholds")
    page.fill("input[name='healthy.max_tokens']", "5000")
    page.fill("input[name='danger.max_tokens']", "40000")
    page.check("input[name='off.max_steps']")
    page.select_option("select[name='preset']", "lenient")
    with page.expect_navigation():
        page.click("#thresholds-form button[type=submit]")
    assert page.url.endswith("/thresholds?saved=true#lines")
    assert "Saved" in page.locator(".flash").inner_text()
    tokens = page.locator("#threshold-lines tbody tr", has_text="max_tokens")
    assert "≤ 5,000" in tokens.inner_text()
    assert "> 40,000" in tokens.inner_text()
    steps = page.locator("#threshold-lines tbody tr", has_text="max_steps").first
    assert "off" in steps.inner_text()
    assert page.locator("#threshold-history tbody tr").first.inner_text().split("\t")[2] == (
        "lenient"
    )
    assert page.locator("input[name='healthy.max_tokens']").input_value() == "5000"


def test_a_line_on_the_wrong_side_is_refused_and_named(page: Page, fleet: Fleet) -> None:
    before = page.goto(fleet.url + "/thresholds")
    assert before is not None
    rows = page.locator("#threshold-history tbody tr").count()
    page.fill("input[name='healthy.min_efficiency']", "0.2")
    page.fill("input[name='danger.min_efficiency']", "0.5")
    with page.expect_navigation():
        page.click("#thresholds-form button[type=submit]")
    error = page.locator("#thresholds-error").inner_text()
    assert "min_efficiency.healthy" in error
    assert "below the danger line" in error
    assert page.locator("#threshold-history tbody tr").count() == rows


def test_a_form_post_from_another_site_is_refused(fleet: Fleet) -> None:
    rows = len(httpx.get(fleet.url + "/thresholds").text.split("<tr"))
    answer = httpx.post(
        fleet.url + "/thresholds",
        data={"preset": "strict"},
        headers={"Origin": "http://elsewhere.example", "Sec-Fetch-Site": "cross-site"},
    )
    assert answer.status_code == 403
    assert "own pages" in answer.text
    assert len(httpx.get(fleet.url + "/thresholds").text.split("<tr")) == rows


def test_a_precise_line_comes_back_in_the_form_as_it_was_given(fleet: Fleet) -> None:
    answer = httpx.post(
        fleet.url + "/thresholds",
        data={"preset": "balanced", "danger.max_cost_usd": "0.123456789"},
        follow_redirects=True,
    )
    assert answer.status_code == 200  # after the 303
    assert 'name="danger.max_cost_usd" value="0.123456789"' in answer.text
