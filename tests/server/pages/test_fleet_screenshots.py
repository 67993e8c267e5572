"""The trust pages over a tidy fleet, for the screenshots of docs/ui.md: three agents
over two weeks (one steady, one sliding into at_risk, one new), a few judge rulings, the
thresholds changed twice. Each page is checked for what the screenshot is meant to show.

```console
$ ARBITER_SHOTS_DIR=/tmp/shots pytest tests/server/pages/test_fleet_screenshots.py
```
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from arbiter.config import Settings
from arbiter.contract import ModelCalls, StoredTrajectory
from arbiter.service.trust_thresholds import set_thresholds
from arbiter.store import Store
from arbiter.store.trust_judging_repository import save_rulings
from tests.helpers.local_server import serve_on_free_port
from tests.server.pages.conftest import shoot
from tests.trust.helpers import save, stored

if TYPE_CHECKING:
    from playwright.sync_api import Browser

START = datetime.now(UTC).replace(microsecond=0) - timedelta(days=13)


def _run(index: int, agent: str, passed: bool, hours: int, cost: float) -> StoredTrajectory:
    at = START + timedelta(hours=hours)
    return stored(index, agent, passed, at=at).model_copy(update={"cost_usd": cost})


@pytest.fixture(scope="module")
def tidy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from arbiter.server.app import create_app

    root: Path = tmp_path_factory.mktemp("tidy-fleet")
    store = Store(f"sqlite:///{root / 'store.db'}")
    save(
        store,
        [_run(i, "weather-bot", i % 11 != 5, 4 * i, 0.011 + i % 4 * 0.001) for i in range(78)],
    )
    save(
        store, [_run(100 + i, "billing-agent", i < 14, 12 * i, 0.04 + i * 0.002) for i in range(26)]
    )
    save(store, [_run(200 + i, "new-helper", True, 300 + i, 0.02) for i in range(3)])
    calls = ModelCalls(calls=1, cost_usd=0.0021)
    save_rulings(
        store,
        run_id=stored(125, "billing-agent", False).id,
        run_hash="h",
        agent="billing-agent",
        owner=None,
        trigger="flagged",
        rulings=[
            ("answer_groundedness", False, "The total quoted is not in any tool result.", calls)
        ],
    )
    set_thresholds(store, preset="balanced", by="alice", now=START)
    set_thresholds(
        store,
        preset="strict",
        thresholds={"max_cost_usd": {"healthy": 0.03, "danger": 0.2}},
        by="bob",
    )
    app = create_app(Settings(_env_file=None, home=root / "home"), store=store)  # type: ignore[call-arg]
    with serve_on_free_port(app) as url:
        yield url
    store.close()


def test_screenshots_of_the_trust_pages(browser: Browser, tidy: str, tmp_path: Path) -> None:
    for scheme in ("light", "dark"):
        context = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme=scheme)
        page = context.new_page()
        page.goto(tidy + "/fleet")
        states = page.locator("#posture-matrix tbody tr").evaluate_all(
            "rows => rows.map(r => r.dataset.state)"
        )
        assert states == ["at_risk", "provisional", "proven"]
        assert page.locator("svg.timeline").count() == 2
        shoot(page, f"ui-fleet-{scheme}.png", tmp_path)
        if scheme == "dark":
            context.close()
            continue
        page.goto(tidy + "/fleet/compare?a=weather-bot&b=billing-agent")
        assert page.locator("#compare-agents svg.ring").count() == 2
        shoot(page, "ui-fleet-compare-light.png", tmp_path)
        page.goto(tidy + "/agents/billing-agent")
        assert "At risk" in page.locator("section.trust-section").inner_text()
        page.set_viewport_size({"width": 1280, "height": 760})
        shoot(page, "ui-agent-trust-light.png", tmp_path, full_page=False)
        page.goto(tidy + "/thresholds")
        assert page.locator("#threshold-history tbody tr").count() == 2
        shoot(page, "ui-thresholds-light.png", tmp_path)
        context.close()
