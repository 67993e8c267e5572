"""``POST /v1/trajectories`` with an Inspect AI log as the record: each sample's epoch
stored as a scored run with its imported ``inspect:`` score and its calls' tokens."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from arbiter.config import Settings
from arbiter.server.app import create_app
from arbiter.store import Store
from arbiter.store.trajectory_repository import list_trajectories

LOG = Path(__file__).parent / "data" / "inspect_addition_mockllm.json"


def _log() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(LOG.read_text(encoding="utf-8"))
    return loaded


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[TestClient, Store]]:
    store = Store(f"sqlite:///{tmp_path / 'server.db'}")
    app = create_app(Settings(db_url=store.url, home=tmp_path / "home"), store=store)
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client, store
    store.close()


@pytest.mark.parametrize("named", [True, False], ids=["format given", "format told"])
def test_an_inspect_log_posted_stores_each_sample_epoch_with_its_score(
    served: tuple[TestClient, Store], named: bool
) -> None:
    client, store = served
    body: dict[str, Any] = {"record": _log(), **({"format": "inspect"} if named else {})}
    answer = client.post("/v1/trajectories", json=body)
    assert answer.status_code == 201, answer.text
    stored, total = list_trajectories(store)
    assert total == 4
    assert {s.source_format for s in stored} == {"inspect"}
    verdicts = sorted((s.conversation_id or s.id, s.passed) for s in stored)
    assert [passed for _, passed in verdicts].count(False) == 1
    for run in stored:
        imported = [s for s in run.scores if s.name == "inspect:includes"]
        assert len(imported) == 1
        assert run.total_tokens == 120  # 40 + 12 and 60 + 8, from the model events


def test_a_malformed_inspect_record_is_refused_naming_the_sample_and_nothing_is_stored(
    served: tuple[TestClient, Store],
) -> None:
    client, store = served
    log = _log()
    log["samples"][2]["messages"][1]["tool_calls"][0]["function"] = ""
    answer = client.post("/v1/trajectories", json={"record": log, "format": "inspect"})
    assert answer.status_code in (400, 422), answer.text
    message = answer.json()["error"]["message"]
    assert "samples[2].messages[1].tool_calls[0].function" in message
    assert list_trajectories(store)[1] == 0
