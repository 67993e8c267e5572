"""The run page's pager links carry the key of the row next to the page, and the page a
link opens is the page its number names: read from the key, not counted from the top."""

from __future__ import annotations

import html
import re
from pathlib import Path

from fastapi.testclient import TestClient

from arbiter.config import Settings
from arbiter.server.app import create_app
from arbiter.store import Store
from tests.store.test_result_pages import _run

_ROW = re.compile(r'aria-controls="[^"]*">([^<]*)</button>')


def _shown(text: str) -> list[str]:
    return [html.unescape(i) for i in _ROW.findall(text)]


def _link(text: str, rel: str) -> str:
    found = re.search(rf'<a href="([^"]*)" rel="{rel}">', text)
    assert found is not None, f"no {rel} link"
    return html.unescape(found.group(1))


def test_the_pager_links_open_the_pages_they_name_by_key(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    run_id = _run(store, 80)  # 160 results: four pages of 50
    app = create_app(Settings(_env_file=None, home=tmp_path), store=store)
    with TestClient(app) as client:
        first = client.get(f"/runs/{run_id}").text
        by_number = {n: _shown(client.get(f"/runs/{run_id}?page={n}").text) for n in (2, 3, 4)}
        second_url = _link(first, "next")
        second = client.get(second_url).text
        third = client.get(_link(second, "next")).text
        back = client.get(_link(third, "prev")).text
        last = client.get(f"/runs/{run_id}?page=4").text
        # A key alone places the page, whatever its number says.
        moved = client.get(second_url.replace("page=2", "page=3")).text
    store.close()
    assert "after=" in second_url
    assert "before=" in _link(third, "prev")
    assert _shown(second) == by_number[2]
    assert _shown(third) == by_number[3]
    assert _shown(back) == by_number[2]
    assert _shown(last) == by_number[4]
    assert len(by_number[4]) == 10
    assert "next" not in re.findall(r'rel="(\w+)"', last)
    assert _shown(moved) == by_number[2]
