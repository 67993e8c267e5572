"""REST runs: the list with filters and cursor paging, a report, results, a comparison."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.server.conftest import Seed


def test_runs_list_shows_both_seeded_runs(client: TestClient, seed: Seed) -> None:
    answer = client.get("/v1/runs")
    assert answer.status_code == 200
    page = answer.json()
    assert page["total"] == 2
    assert page["next"] is None
    assert {r["id"] for r in page["items"]} == {seed.run_id, seed.other_run_id}


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"tag": "team=risk"}, "run_id"),
        ({"tag": "team=ops"}, "other_run_id"),
        ({"system": "demo.classifier", "tag": "team=ops"}, "other_run_id"),
        ({"dataset": "no-such-dataset"}, None),
        ({"status": "failed"}, None),
        ({"system": "http:"}, None),
    ],
)
def test_runs_filters(
    client: TestClient, seed: Seed, params: dict[str, str], expected: str | None
) -> None:
    answer = client.get("/v1/runs", params=params)
    assert answer.status_code == 200
    ids = [r["id"] for r in answer.json()["items"]]
    assert ids == ([getattr(seed, expected)] if expected else [])


def test_runs_filter_by_dataset_and_status(client: TestClient, seed: Seed) -> None:
    name = client.get(f"/v1/runs/{seed.run_id}").json()["info"]["dataset_name"]
    answer = client.get("/v1/runs", params={"dataset": name, "status": "completed"})
    assert answer.json()["total"] == 2


def test_runs_page_with_the_cursor(client: TestClient, seed: Seed) -> None:
    first = client.get("/v1/runs", params={"limit": 1}).json()
    assert first["total"] == 2
    second = client.get("/v1/runs", params={"limit": 1, "cursor": first["next"]}).json()
    assert second["next"] is None
    # newest first: the second run was made after the first
    assert [first["items"][0]["id"], second["items"][0]["id"]] == [seed.other_run_id, seed.run_id]


def test_a_run_report_has_its_figures(client: TestClient, seed: Seed) -> None:
    answer = client.get(f"/v1/runs/{seed.run_id}")
    assert answer.status_code == 200
    body = answer.json()
    assert body["info"]["id"] == seed.run_id
    assert body["report"]["run_id"] == seed.run_id
    assert body["note"] is None


def test_a_unique_prefix_names_a_run(client: TestClient, seed: Seed) -> None:
    answer = client.get(f"/v1/runs/{seed.run_id[:-2]}")
    assert answer.status_code == 200
    assert answer.json()["info"]["id"] == seed.run_id


def test_results_page_through_every_result_once(client: TestClient, seed: Seed) -> None:
    seen: list[tuple[str, int]] = []
    cursor = None
    for _ in range(10):  # 60 results, 25 a page: 3 pages
        params: dict[str, str | int] = {"limit": 25}
        if cursor:
            params["cursor"] = cursor
        page = client.get(f"/v1/runs/{seed.run_id}/results", params=params).json()
        assert page["total"] == 60
        seen += [(r["example_id"], r["repetition"]) for r in page["items"]]
        cursor = page["next"]
        if cursor is None:
            break
    assert len(seen) == 60
    assert len(set(seen)) == 60


def test_failing_results_are_only_failures(client: TestClient, seed: Seed) -> None:
    everything = client.get(f"/v1/runs/{seed.run_id}/results", params={"limit": 500}).json()
    failed = [r for r in everything["items"] if r["passed"] is False]
    assert failed, "the demo screener gets some examples wrong"
    answer = client.get(f"/v1/runs/{seed.run_id}/results", params={"failing": "true", "limit": 500})
    page = answer.json()
    assert page["total"] == len(failed)
    assert all(r["passed"] is False for r in page["items"])
    by_scorer = client.get(
        f"/v1/runs/{seed.run_id}/results",
        params={"failing": "true", "scorer": "label", "limit": 500},
    )
    assert by_scorer.json()["total"] == len(failed)
    none = client.get(f"/v1/runs/{seed.run_id}/results", params={"scorer": "no_such"})
    assert none.json() == {"items": [], "total": 0, "next": None}


def test_failures_first_puts_failures_on_the_first_page(client: TestClient, seed: Seed) -> None:
    page = (
        client.get(
            f"/v1/runs/{seed.run_id}/results", params={"order": "failures_first", "limit": 3}
        )
    ).json()
    assert [r["passed"] for r in page["items"]] == [False, False, False]


def test_compare_two_runs(client: TestClient, seed: Seed) -> None:
    answer = client.get("/v1/compare", params={"a": seed.run_id, "b": seed.other_run_id})
    assert answer.status_code == 200
    body = answer.json()
    assert body["diff"]["n_common"] == 60
    assert body["diff"]["broken"] == []
    assert body["diff"]["fixed"] == []
