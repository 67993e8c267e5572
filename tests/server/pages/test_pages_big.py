"""The pages over a large store in chromium: a run of 2,000 labels, a queue whose judged
runs are older than 230 runs without a judge, and a conversation with a long answer.

The store has its own server (the shared one keeps the demo's small store). Every page's
work is bounded: the run page draws its 13-label map and lists 50 labels, the queue reads
a page at a time with a cursor to the next.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

from arbiter.config import Settings
from arbiter.server.runs_view import LABEL_ROWS, MAP_LABELS, TOP_CONFUSIONS
from arbiter.store import Store
from tests.helpers.local_server import serve_on_free_port
from tests.server.pages.big_seed import seed_label_run
from tests.server.pages.big_seed_judged import JUDGE, seed_judged_store
from tests.server.pages.conftest import PageEvents, run_sync

if TYPE_CHECKING:
    from playwright.sync_api import Page

JUDGED_RUNS, PER_RUN = 3, 30


@dataclass(frozen=True)
class Big:
    url: str
    """The server's base URL."""
    labels_run: str
    """A run scored by ``label`` over 2,000 distinct labels."""
    chat: str
    """A stored trajectory of an OpenAI conversation with a 5,000-character answer."""


LONG_ANSWER = "Your refund is on its way. " * 185  # 4,995 characters
CHAT = {
    "id": "refund-long",
    "model": "gpt-4o-mini",
    "messages": [
        {"role": "system", "content": "You are the support agent of an online shop."},
        {"role": "user", "content": "Please refund order 1042, the mug arrived broken."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_order", "arguments": '{"order_id": "1042"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"total": 25.0}'},
        {"role": "assistant", "content": LONG_ANSWER},
    ],
}


async def _store_chat(store: Store) -> str:
    from arbiter.service.trajectories import agent_run_scoring, import_record, score_and_store

    imported = import_record(CHAT, format="openai_messages")
    stored = await score_and_store(store, imported, scoring=agent_run_scoring())
    return stored[0].id


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Big]:
    from arbiter.server.app import create_app

    root = tmp_path_factory.mktemp("big-pages")
    store = Store(f"sqlite:///{root / 'store.db'}")
    labels_run = seed_label_run(store, 4_000, labels=2_000, right=0.7, name="2,000 labels")
    seed_judged_store(store, judged=JUDGED_RUNS, per_run=PER_RUN, plain=230)
    chat = run_sync(_store_chat(store))
    app = create_app(Settings(_env_file=None, home=root / "home"), store=store)  # type: ignore[call-arg]
    with serve_on_free_port(app) as url:
        yield Big(url, labels_run, chat)
    store.close()


@pytest.fixture(autouse=True)
def _nothing_ran(page_events: PageEvents) -> Iterator[None]:
    yield
    assert page_events.errors == []


def _open(page: Page, url: str) -> None:
    response = page.goto(url)
    assert response is not None
    assert response.status == 200, url


def test_a_run_of_two_thousand_labels_maps_its_top_labels_and_lists_its_confusions(
    page: Page, big: Big
) -> None:
    _open(page, f"{big.url}/runs/{big.labels_run}")
    confusion = page.locator("#h-confusion").locator("xpath=..")
    heat = confusion.locator("svg.chart")
    side = MAP_LABELS + 1
    assert heat.locator("rect.track").count() == side * side
    assert "other (1,988 labels)" in heat.inner_html()
    assert "The 12 most frequent of 2,000 labels" in confusion.inner_text()
    top = confusion.locator("ol.confusions li")
    assert top.count() == TOP_CONFUSIONS
    assert " called " in top.first.inner_text()
    table = page.locator("h3:has-text('Per label') + .table-wrap tbody tr")
    assert table.count() == LABEL_ROWS + 2  # and the macro and weighted averages
    assert "1,950 more are in the run's report" in page.content()
    assert len(page.content()) < 1_000_000


def test_the_queue_finds_rulings_older_than_hundreds_of_runs_and_pages_on(
    page: Page, big: Big
) -> None:
    _open(page, f"{big.url}/annotations?show=all")
    cards = page.locator("li.ruling")
    assert cards.count() == 20
    seen = set(cards.locator(".ruling-head a").all_inner_texts())
    pages = 1
    while page.locator("a[rel=next]").count():
        page.locator("a[rel=next]").click()
        page.wait_for_load_state()
        seen |= set(page.locator("li.ruling .ruling-head a").all_inner_texts())
        pages += 1
    assert len(seen) == JUDGED_RUNS * PER_RUN
    assert pages == -(-JUDGED_RUNS * PER_RUN // 20)
    assert page.locator("text=back to the newest").count() == 1


def test_a_queue_card_shows_the_input_the_reference_and_the_output(page: Page, big: Big) -> None:
    _open(page, f"{big.url}/annotations?show=all")
    card = page.locator("li.ruling").first
    assert "What is the refund window of plan" in card.locator(".ruling-input").inner_text()
    assert "Thirty days from purchase" in card.locator(".ruling-reference").inner_text()
    long = page.locator("li.ruling", has=page.locator("details.clip-more")).first
    assert long.locator(".ruling-output").first.inner_text().endswith("…")
    more = long.locator("details.clip-more")
    assert not more.evaluate("d => d.open")
    more.locator("summary").click()
    assert more.evaluate("d => d.open")
    assert JUDGE in card.locator(".ruling-judge").inner_text()


def test_keys_move_between_rulings_and_label_the_one_in_focus(page: Page, big: Big) -> None:
    _open(page, f"{big.url}/annotations")
    page.fill("form.annotator input[name=annotator]", "Kim")
    page.click("form.annotator button")
    page.wait_for_url(re.compile("/annotations"))
    cards = page.locator("li.ruling")
    page.keyboard.press("j")
    assert cards.nth(0).evaluate("el => el === document.activeElement")
    page.keyboard.press("j")
    assert cards.nth(1).evaluate("el => el === document.activeElement")
    page.keyboard.press("k")
    page.keyboard.press("j")
    judged = cards.nth(1).locator(".ruling-head a").inner_text()
    page.keyboard.press("d")
    page.wait_for_url(re.compile(r"saved=disagree"))
    assert "Saved — disagree" in page.locator(".flash").inner_text()
    assert judged not in page.locator("li.ruling .ruling-head a").all_inner_texts()
    page.keyboard.press("a")  # no ruling in focus: the first one
    page.wait_for_url(re.compile(r"saved=agree"))


def test_a_cursor_the_queue_did_not_make_is_refused_in_one_line(page: Page, big: Big) -> None:
    response = page.goto(f"{big.url}/annotations?cursor=not-a-cursor")
    assert response is not None
    assert response.status == 400
    assert "cursor: not a position this queue handed out" in page.inner_text("main")


def test_a_trajectory_shows_its_conversation_above_the_timeline(page: Page, big: Big) -> None:
    _open(page, f"{big.url}/trajectories/{big.chat}")
    thread = page.locator("ol.thread > li")
    roles = thread.locator(".msg-role").all_inner_texts()
    assert roles == ["System", "User", "Tool", "Assistant"]
    assert "You are the support agent" in thread.nth(0).inner_text()
    assert "Please refund order 1042" in thread.nth(1).inner_text()
    assert "get_order" in thread.nth(2).inner_text()
    assert '"order_id": "1042"' in thread.nth(2).locator(".msg-args").inner_text()
    conversation = page.locator("#conversation").bounding_box()
    timeline = page.locator("h2:has-text('Timeline')").bounding_box()
    assert conversation is not None
    assert timeline is not None
    assert conversation["y"] < timeline["y"]
    answer = thread.nth(3)
    shown = answer.locator(".clip-text").first.inner_text()
    assert len(shown) <= 1_201
    assert shown.endswith("…")
    more = answer.locator("details.clip-more")
    assert "Show all 4,995 characters" in more.locator("summary").inner_text()
    more.locator("summary").click()
    assert more.locator(".clip-text").inner_text().strip() == LONG_ANSWER.strip()
