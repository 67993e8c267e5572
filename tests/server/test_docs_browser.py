"""``/v1/docs`` in chromium with no network: Swagger UI renders from the package's assets.

Every request to another host than the test's server is aborted (as offline), and the
page must still list the API's operations, with no script error and no request blocked
by its Content-Security-Policy. Set ``ARBITER_SHOTS_DIR`` to keep the screenshot.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from arbiter.config import Settings
from arbiter.server.app import create_app
from arbiter.store import Store
from tests.integration.serving import serve_asgi

CHROMIUM = Path("/usr/bin/chromium")
playwright_api = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="no browser at /usr/bin/chromium")


@pytest.fixture
def live(server_store: Store, tmp_path: Path) -> Iterator[str]:
    settings = Settings(db_url=server_store.url, home=tmp_path / "home")
    with serve_asgi(create_app(settings, store=server_store)) as url:
        yield url


def test_docs_render_offline_under_the_csp(live: str, tmp_path: Path) -> None:
    own = urlsplit(live).netloc
    elsewhere: list[str] = []
    console: list[str] = []
    errors: list[str] = []
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})

            def route(r: object) -> None:
                request = r.request  # type: ignore[attr-defined]
                if urlsplit(request.url).netloc == own:
                    r.continue_()  # type: ignore[attr-defined]
                else:
                    elsewhere.append(request.url)
                    r.abort()  # type: ignore[attr-defined]

            page.route("**/*", route)
            page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(f"{live}/v1/docs")
            page.wait_for_selector(".opblock-summary", timeout=30_000)
            operations = page.locator(".opblock-summary-path").all_inner_texts()
            title = page.locator(".info .title").inner_text()
            shots = os.environ.get("ARBITER_SHOTS_DIR")
            shot = Path(shots) if shots else tmp_path
            shot.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(shot / "api-docs.png"), full_page=False)
            page.locator(".opblock-summary").first.click()
            page.wait_for_selector(".opblock-body", timeout=10_000)
        finally:
            browser.close()
    assert elsewhere == []
    assert errors == []
    assert not [line for line in console if "Content Security Policy" in line], console
    assert "Arbiter" in title
    assert "/v1/health" in [o.replace("\u200b", "") for o in operations]
    assert len(operations) >= 20
