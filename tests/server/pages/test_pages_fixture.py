"""The page fixtures themselves: a live server over the seeded store, and chromium."""

from __future__ import annotations

from typing import TYPE_CHECKING

from arbiter.store import Store
from arbiter.store.jury_repository import load_judgments
from tests.server.pages.conftest import PageEvents, Seeded

if TYPE_CHECKING:
    from playwright.sync_api import Page


def test_the_seeded_store_holds_three_runs_and_two_verdicts(
    pages_store: Store, seeded: Seeded
) -> None:
    runs = {run.id: run for run in pages_store.list_runs()}
    assert {seeded.demo_run, seeded.demo_v2_run, seeded.qa_run} <= set(runs)
    assert runs[seeded.demo_run].n_done == 240
    assert runs[seeded.qa_run].n_done == 200
    decisions = {
        j.case_id: j.verdict.decision for j in load_judgments(pages_store, seeded.jury_run)
    }
    assert decisions == {"clean_01": "ACCEPT", "multi_02": "REJECT"}
    assert set(seeded.verdicts) == {"clean_01", "multi_02"}


def test_the_live_server_serves_the_style_sheet_to_chromium(
    page: Page, page_events: PageEvents, live_url: str
) -> None:
    response = page.goto(f"{live_url}/static/arbiter.css")
    assert response is not None
    assert response.status == 200
    assert "--accent" in page.content()
    assert page_events.dialogs == []
    assert page_events.errors == []
