"""The run page of an imported Inspect AI log, in chromium: its figures, its scorer and
the failing sample, like a run of the harness.

A store of its own (one imported log) behind a live uvicorn server, so the session's
seeded store is not needed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from arbiter.config import Settings
from arbiter.service.log_import import import_log
from arbiter.store import Store
from tests.helpers.local_server import serve_on_free_port
from tests.server.pages.conftest import CHROMIUM

if TYPE_CHECKING:
    from playwright.sync_api import Page

LOG = Path(__file__).parents[2] / "trajectories" / "data" / "inspect_addition_mockllm.json"


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """``(server URL, run id)``: the log imported into a fresh store, served."""
    from arbiter.server.app import create_app

    root = tmp_path_factory.mktemp("imported")
    store = Store(f"sqlite:///{root / 'store.db'}")
    run_id = import_log(LOG, format="inspect", store=store, signer=None).run_id
    settings = Settings(_env_file=None, home=root / "home")  # type: ignore[call-arg]
    with serve_on_free_port(create_app(settings, store=store)) as url:
        yield url, run_id
    store.close()


@pytest.fixture
def chromium_page(imported: tuple[str, str]) -> Iterator[Page]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        yield page
        browser.close()
        assert errors == []


def test_the_run_page_of_an_imported_log_shows_its_figures_and_failing_sample(
    chromium_page: Page, imported: tuple[str, str]
) -> None:
    url, run_id = imported
    response = chromium_page.goto(f"{url}/runs/{run_id}")
    assert response is not None
    assert response.status == 200
    body = chromium_page.locator("body").inner_text()
    assert "imported_from=inspect" in body
    assert "75.0%" in body
    assert "[30.1%, 95.4%]" in body
    assert "pass^2" in body
    scorer_row = chromium_page.locator("tr", has_text="inspect:includes").first
    assert "yes" in scorer_row.inner_text()
    failing = chromium_page.locator("tr", has_text="three-plus-five").first
    assert "I think it is 9." in failing.inner_text()
