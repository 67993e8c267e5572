"""The Inbox page in chromium: trust posture and events, with hostile agent names.

Its own store: two agents whose names are payloads (:data:`PAYLOADS`), one trusted and
one that fell to at_risk and tripped the breaker (freeze), and a provisional one. The
page must show every payload as written, run none, and give a provisional agent no
conduct figure.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from arbiter.config import Settings
from arbiter.service.trust import evaluate_breaker
from arbiter.store import Store
from arbiter.trust import TrustPolicy
from tests.helpers.local_server import serve_on_free_port
from tests.server.pages.conftest import PageEvents, run_sync
from tests.server.pages.hostile_pages import FLAG, PAYLOADS
from tests.trust.helpers import save, stored

if TYPE_CHECKING:
    from playwright.sync_api import Page

GOOD, BAD, NEW = PAYLOADS["script"], PAYLOADS["attribute"], PAYLOADS["image"]


@pytest.fixture(scope="module")
def inbox_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from arbiter.server.app import create_app

    root: Path = tmp_path_factory.mktemp("inbox-page")
    store = Store(f"sqlite:///{root / 'store.db'}")
    save(store, [stored(i, GOOD, True) for i in range(60)])
    save(store, [stored(100 + i, NEW, False) for i in range(3)])
    bad = [stored(200 + i, BAD, False) for i in range(12)]
    save(store, bad)
    policy = TrustPolicy(breaker_mode="freeze")
    quiet = Settings(_env_file=None, trust_webhook_urls="")  # type: ignore[call-arg]
    run_sync(evaluate_breaker(store, bad, owner=None, policy=policy, settings=quiet))
    app = create_app(Settings(_env_file=None, home=root / "home"), store=store)  # type: ignore[call-arg]
    with serve_on_free_port(app) as url:
        yield url
    store.close()


def test_inbox_shows_posture_and_events_inert(
    page: Page, page_events: PageEvents, inbox_url: str
) -> None:
    response = page.goto(inbox_url + "/inbox")
    assert response is not None
    assert response.status == 200
    for cell in page.locator("td").all()[:200]:
        cell.hover(timeout=2_000, force=True)
    assert page.evaluate(f"typeof window.{FLAG}") == "undefined"
    handlers = page.evaluate(
        "[...document.querySelectorAll('*')].filter(e => [...e.attributes]"
        ".some(a => a.name.startsWith('on'))).length"
    )
    assert handlers == 0
    assert page_events.dialogs == []
    posture = page.locator("#trust-posture")
    text = posture.inner_text()
    for name in (GOOD, BAD, NEW):
        assert name in text
    assert page.locator("#trust-posture tr[data-state='at_risk']").count() == 1
    provisional = page.locator("#trust-posture tr[data-state='provisional']").inner_text()
    assert "not enough evidence yet" in provisional
    assert "frozen" in page.locator("#trust-posture tr[data-state='at_risk']").inner_text()
    events = page.locator("#trust-events").inner_text()
    assert "breaker_trip" in events
    assert BAD in events
    assert page.locator("#unacked").inner_text() == "1"
