"""The annotation form's rules, in-process: the ruling frozen as shown, or nothing stored.

A label is refused when the stored ruling no longer says what the form showed (409),
when it comes from another site (403), without a name (400), or for a ruling that does
not exist (404); each refusal stores nothing. A stored label carries the judge's score
frozen (verdict, score, judge), the judge's dimension and the annotator's name.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from arbiter.config import Settings
from arbiter.server.pages_annotations import ANNOTATOR_COOKIE
from arbiter.service.annotations import list_annotations
from arbiter.store import Store
from tests.server.pages.agents_seed import seed_agents
from tests.server.pages.conftest import run_sync


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, Path]:
    root = tmp_path_factory.mktemp("annotations")
    store = Store(f"sqlite:///{root / 'store.db'}")
    run_sync(seed_agents(store, root))  # beside Playwright's loop, on a thread of its own
    return store, root


@pytest.fixture
def client(seeded: tuple[Store, Path], tmp_path: Path) -> TestClient:
    from arbiter.server.app import create_app

    store, _ = seeded
    app = create_app(Settings(_env_file=None, home=tmp_path), store=store)  # type: ignore[call-arg]
    return TestClient(app, base_url="http://arbiter.test")


def _forms(client: TestClient) -> list[dict[str, str]]:
    html = client.get("/annotations", params={"show": "all"}).text
    forms = re.findall(r'<form class="ruling-actions".*?</form>', html, flags=re.S)
    return [dict(re.findall(r'name="(item|judge|shown|back)" value="([^"]*)"', f)) for f in forms]


def _count(store: Store) -> int:
    return len(list_annotations(store, everyone=True, latest=False))


def test_a_label_stores_the_ruling_frozen_as_shown(
    client: TestClient, seeded: tuple[Store, Path]
) -> None:
    store, _ = seeded
    form = next(f for f in _forms(client) if f["shown"] == "fail")
    before = _count(store)
    response = client.post(
        "/annotations",
        data={**form, "label": "disagree", "annotator": "Ana", "comment": "it does cite"},
        headers={"origin": "http://arbiter.test"},
        follow_redirects=False,
    )
    assert response.status_code == 303
    assert response.headers["location"].startswith("/annotations")
    assert response.cookies.get(ANNOTATOR_COOKIE) == "Ana"
    assert _count(store) == before + 1
    stored = list_annotations(store, everyone=True, item=form["item"], annotator="Ana")[-1]
    assert stored.label == "disagree"
    assert stored.ruling is not None
    assert (stored.ruling.judge, stored.ruling.verdict, stored.ruling.score) == (
        "seed_groundedness",
        "fail",
        0.0,
    )
    assert stored.human_passed is True
    assert stored.comment == "it does cite"


@pytest.mark.parametrize(
    ("change", "status"),
    [
        ({"shown": "pass"}, 409),  # the stored ruling says fail: re-scored since it was shown
        ({"annotator": ""}, 400),
        ({"item": "run:nope:0:x"}, 404),
        ({"judge": "completed"}, 404),  # a deterministic scorer is not a judge
    ],
)
def test_a_label_that_cannot_be_what_was_shown_stores_nothing(
    client: TestClient, seeded: tuple[Store, Path], change: dict[str, str], status: int
) -> None:
    store, _ = seeded
    form = next(f for f in _forms(client) if f["shown"] == "fail")
    before = _count(store)
    data = {**form, "label": "agree", "annotator": "Bo", **change}
    response = client.post("/annotations", data=data, follow_redirects=False)
    assert response.status_code == status
    assert _count(store) == before


@pytest.mark.parametrize(
    "headers", [{"origin": "https://evil.example"}, {"sec-fetch-site": "cross-site"}]
)
def test_a_label_posted_from_another_site_is_refused(
    client: TestClient, seeded: tuple[Store, Path], headers: dict[str, str]
) -> None:
    store, _ = seeded
    form = _forms(client)[0]
    before = _count(store)
    data = {**form, "label": "agree", "annotator": "Eve"}
    response = client.post("/annotations", data=data, headers=headers, follow_redirects=False)
    assert response.status_code == 403
    assert _count(store) == before


def test_a_bad_form_is_a_4xx_never_a_500(client: TestClient) -> None:
    response = client.post("/annotations", data={"item": "x", "label": "maybe"})
    assert 400 <= response.status_code < 500


def test_the_name_is_remembered_and_labelled_rulings_leave_the_queue(
    client: TestClient,
) -> None:
    response = client.post(
        "/annotations/annotator", data={"annotator": "Cy"}, follow_redirects=False
    )
    assert response.status_code == 303
    todo = len(_forms(client))
    page = client.get("/annotations").text
    assert "labelling as <strong>Cy</strong>" in page
    first = re.search(r'name="item" value="([^"]*)"', page)
    judge = re.search(r'name="judge" value="([^"]*)"', page)
    shown = re.search(r'name="shown" value="([^"]*)"', page)
    assert first
    assert judge
    assert shown
    data = {"item": first[1], "judge": judge[1], "shown": shown[1], "label": "agree"}
    assert client.post("/annotations", data=data, follow_redirects=False).status_code == 303
    assert client.get("/annotations").text.count('class="ruling-actions"') == todo - 1


def test_calibration_pages_list_the_judges_and_404_an_unknown_one(client: TestClient) -> None:
    assert client.get("/calibration").status_code == 200
    assert client.get("/calibration/no-such-judge").status_code == 404
