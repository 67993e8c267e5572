"""``GET /v1/runs/{id}/results`` pages through ``next`` by key and gives the pages it gave
by position; a cursor of a position alone (as the server gave out before) still reads
the page at that position, and the scorer tab of the run page pages by key too."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from arbiter.config import Settings
from arbiter.server.app import create_app
from arbiter.server.pagination import encode_cursor
from arbiter.store import Store
from arbiter.store.browse_repository import ResultFilter
from tests.server.test_run_page_keyset import _link, _shown
from tests.store.test_result_listings import _old_page_results, seed_mixed


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Store, str, TestClient]]:
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    run_id = seed_mixed(store)
    app = create_app(Settings(_env_file=None, home=tmp_path), store=store)
    with TestClient(app) as client:
        yield store, run_id, client
    store.close()


QUERIES = [
    ("", ResultFilter()),
    ("&failing=true", ResultFilter(failing=True)),
    ("&order=failures_first", ResultFilter(failures_first=True)),
    (
        "&failing=true&scorer=exact&order=failures_first",
        ResultFilter(failing=True, scorer="exact", failures_first=True),
    ),
    ("&scorer=style%20%22x%22", ResultFilter(scorer='style "x"')),
]


@pytest.mark.parametrize(("query", "where"), QUERIES)
def test_the_pages_next_names_are_the_pages_by_position(
    served: tuple[Store, str, TestClient], query: str, where: ResultFilter
) -> None:
    store, run_id, client = served
    url = f"/v1/runs/{run_id}/results?limit=9{query}"
    old, total = _old_page_results(store, run_id, where, offset=0, limit=1000)
    expected = [(r.example_id, r.repetition) for r in old]
    seen: list[tuple[str, int]] = []
    cursor = None
    cursors = []
    while True:
        body = client.get(url + (f"&cursor={cursor}" if cursor else "")).json()
        assert body["total"] == total
        seen += [(r["example_id"], r["repetition"]) for r in body["items"]]
        cursor = body["next"]
        if cursor is None:
            break
        cursors.append(cursor)
    assert seen == expected
    decoded = json.loads(base64.urlsafe_b64decode(cursors[-1] + "=" * (-len(cursors[-1]) % 4)))
    assert decoded["o"] == 9 * len(cursors)  # the position is still there, with the row
    assert isinstance(decoded["r"], int)
    far = (total - 1) // 9 * 9
    by_position = client.get(f"{url}&cursor={encode_cursor(far)}").json()
    assert [(r["example_id"], r["repetition"]) for r in by_position["items"]] == expected[far:]
    assert by_position["next"] is None


def test_the_scorer_tab_pages_by_key(served: tuple[Store, str, TestClient]) -> None:
    _, run_id, client = served
    tab = f"/runs/{run_id}?show=failing&scorer=style%20%22x%22"
    first = client.get(tab).text
    second_url = _link(first, "next")
    second = client.get(second_url).text
    back = client.get(_link(second, "prev")).text
    assert "after=" in second_url
    assert "scorer=" in second_url
    assert _shown(second) == _shown(client.get(f"{tab}&page=2").text)
    assert _shown(back) == _shown(first)
    assert _shown(second)
    assert _shown(second) != _shown(first)
