"""The agent and annotation pages in chromium over hostile names, tools, arguments, answers.

Its own store: the agents of :mod:`tests.server.pages.agents_seed` run with payloads
(:data:`tests.server.pages.hostile_pages.PAYLOADS`) as the agents' and flow's names, the
tool's name (a ``javascript:`` URL), the tool's arguments, the answers and the case ids,
both as offline runs and as stored trajectories; the annotator's name and comment are
payloads typed into the form. Every page is visited, its details opened and its text
hovered: no payload runs, no handler attribute or ``javascript:`` link exists, only our
script is loaded, and every payload reads as written (controls as escapes).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import quote

import pytest

from arbiter.config import Settings
from arbiter.store import Store
from tests.helpers.local_server import serve_on_free_port
from tests.server.pages.agents_seed import seed_agents
from tests.server.pages.conftest import PageEvents, run_sync
from tests.server.pages.hostile_pages import FLAG, PAYLOADS, SHOWN

if TYPE_CHECKING:
    from playwright.sync_api import Page

NAMES = {
    "weather": PAYLOADS["script"],
    "coordinator": PAYLOADS["attribute"],
    "untimed": PAYLOADS["svg"],
    "flow": PAYLOADS["ansi"],
    "tool": PAYLOADS["link"],
    "answer": PAYLOADS["image"],
    "case": PAYLOADS["image"] + ":",
}
"""What each seeded name becomes."""


@dataclass(frozen=True)
class Hostile:
    url: str


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hostile]:
    from arbiter.server.app import create_app

    root = tmp_path_factory.mktemp("hostile-agent-pages")
    store = Store(f"sqlite:///{root / 'store.db'}")
    run_sync(seed_agents(store, root, names=NAMES))
    app = create_app(Settings(_env_file=None, home=root / "home"), store=store)  # type: ignore[call-arg]
    with serve_on_free_port(app) as url:
        yield Hostile(url)
    store.close()


def _visit(page: Page, url: str) -> None:
    response = page.goto(url)
    assert response is not None
    assert response.status == 200, url
    for summary in page.locator("details > summary").all()[:40]:
        summary.click()  # every step's details shown
    page.mouse.move(5, 5)
    hovered = page.locator("h1, .card, .chip, td, q, pre, .tag, svg text, .ruling-head span")
    for element in hovered.all()[:250]:
        element.hover(timeout=2_000, force=True)  # an injected onmouseover would fire now


def _inert(page: Page, where: str) -> None:
    assert page.evaluate(f"typeof window.{FLAG}") == "undefined", where
    handlers = page.evaluate(
        "[...document.querySelectorAll('*')].filter(e => [...e.attributes]"
        ".some(a => a.name.startsWith('on'))).length"
    )
    assert handlers == 0, where
    links = "a[href^='javascript:' i], [src^='javascript:' i], [href^='javascript:' i]"
    assert page.locator(links).count() == 0, where
    assert page.locator("img, iframe, object, embed, foreignObject").count() == 0, where
    scripts = page.evaluate("[...document.scripts].map(s => s.getAttribute('src'))")
    assert [s.split("?")[0] for s in scripts] == ["/static/arbiter.js"], where


def _links(page: Page, selector: str) -> list[str]:
    return list(
        dict.fromkeys(
            page.evaluate(f"[...document.querySelectorAll({selector!r})].map(a => a.href)")
        )
    )


def test_no_payload_runs_on_any_agent_page(
    page: Page, page_events: PageEvents, hostile: Hostile
) -> None:
    _visit(page, f"{hostile.url}/agents")
    _inert(page, "/agents")
    visited = 1
    for agent in _links(page, "a.card"):
        _visit(page, agent)
        _inert(page, agent)
        visited += 1
        for trajectory in _links(page, "table.ledger a")[:3]:
            _visit(page, trajectory)
            _inert(page, trajectory)
            visited += 1
        if page.locator("button", has_text="Compare A ↔ B").count():
            page.locator("button", has_text="Compare A ↔ B").click()
            page.wait_for_load_state()
            _visit(page, page.url)
            _inert(page, page.url)
            visited += 1
    assert visited >= 12
    assert page_events.dialogs == []
    assert page_events.errors == []


def test_hostile_names_read_exactly_as_written(page: Page, hostile: Hostile) -> None:
    _visit(page, f"{hostile.url}/agents")
    names = page.locator(".card .card-name").all_inner_texts()
    for payload in ("script", "attribute", "svg", "ansi"):
        assert SHOWN[payload] in names, payload
    assert "\x1b" not in page.locator("main").inner_text()
    page.goto(f"{hostile.url}/agents/{quote(PAYLOADS['script'])}")
    assert page.locator("h1").inner_text().startswith(PAYLOADS["script"])
    page.locator("#offline + .table-wrap table.ledger a").nth(1).click()  # weather-1
    page.wait_for_load_state()
    assert PAYLOADS["link"] in page.locator("svg.waterfall").text_content()  # the tool
    arguments = page.locator("#step-1 pre").first.text_content() or ""  # in closed details
    assert f'"city": "{PAYLOADS["image"].replace(chr(34), chr(92) + chr(34))}"' in arguments
    assert PAYLOADS["image"] in page.locator(".output-text").inner_text()  # the answer
    assert page.locator("h1").inner_text().startswith(PAYLOADS["image"] + ":weather-1")


def test_a_hostile_annotator_and_comment_are_stored_and_shown_as_text(
    page: Page, page_events: PageEvents, hostile: Hostile
) -> None:
    _visit(page, f"{hostile.url}/annotations")
    _inert(page, "/annotations")
    assert PAYLOADS["image"] in page.locator("li.ruling").first.inner_text() or any(
        PAYLOADS["image"] in t for t in page.locator("li.ruling pre").all_inner_texts()
    )
    page.get_by_label("You are").fill(PAYLOADS["attribute"])
    page.get_by_role("button", name="Set").click()
    page.wait_for_load_state()
    first = page.locator("li.ruling").first
    first.get_by_placeholder("comment (optional)").fill(PAYLOADS["script"])
    first.get_by_role("button", name="Disagree").click()
    page.wait_for_url("**saved=**")
    _visit(page, page.url)
    _inert(page, page.url)
    row = page.locator("table tbody tr").first
    assert PAYLOADS["attribute"] in row.inner_text()
    assert PAYLOADS["script"] in row.inner_text()
    assert PAYLOADS["attribute"] in page.locator("form.annotator").inner_text()
    for path in ("/calibration", "/calibration/seed_groundedness"):
        _visit(page, hostile.url + path)
        _inert(page, path)
    assert PAYLOADS["attribute"] in page.locator("main").inner_text()
    assert page_events.dialogs == []
    assert page_events.errors == []
