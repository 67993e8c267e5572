"""GET /v1/compare answers from the figures the store counts: the very comparison made
from both runs read whole, and with ``flip_texts`` the texts of the first flips only."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from arbiter.config import Settings
from arbiter.contract import Dataset
from arbiter.server.app import create_app
from arbiter.service.compare import compare_loaded
from arbiter.service.runs import load_run
from arbiter.store import Store
from tests.service.compare_runs_data import SCORERS_A, SCORERS_B, examples, seed_run


def test_the_api_compares_as_the_whole_runs_do_and_caps_flip_texts(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    data = Dataset(name="shared", version="1", examples=examples(150))
    run_a = seed_run(store, data, SCORERS_A, seed=91)
    run_b = seed_run(store, data, SCORERS_B, seed=92)
    whole = compare_loaded(load_run(store, run_a), load_run(store, run_b))
    app = create_app(Settings(_env_file=None, home=tmp_path), store=store)
    with TestClient(app) as client:
        full = client.get("/v1/compare", params={"a": run_a, "b": run_b})
        capped = client.get("/v1/compare", params={"a": run_a, "b": run_b, "flip_texts": 1})
        refused = client.get("/v1/compare", params={"a": run_a, "b": run_b, "flip_texts": -1})
    store.close()
    assert full.status_code == 200
    assert full.json()["diff"] == whole.diff.model_dump(mode="json")
    assert full.json()["warnings"] == whole.warnings
    assert full.json()["flip_texts"] is None
    body = capped.json()
    assert body["flip_texts"] == 1
    broken = body["diff"]["broken"]
    assert len(broken) > 1
    assert broken[0] == whole.diff.broken[0].model_dump(mode="json")
    assert [f["answer_a"] for f in broken[1:]] == [None] * (len(broken) - 1)
    assert [f["example_id"] for f in broken] == [f.example_id for f in whole.diff.broken]
    assert refused.status_code == 422
