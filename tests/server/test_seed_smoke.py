"""The seeded store holds what the fixtures say (the base of every server test)."""

from __future__ import annotations

from arbiter.service.browse import find_verdict, list_results, list_runs
from arbiter.store import Store
from tests.server.conftest import Seed


def test_seeded_store_holds_two_runs_and_a_reject_verdict(server_store: Store, seed: Seed) -> None:
    runs = list_runs(server_store)
    assert {r.id for r in runs.items} == {seed.run_id, seed.other_run_id}
    results = list_results(server_store, seed.run_id, viewer=None, limit=10)
    assert results.total == 60
    assert len(results.items) == 10
    assert results.next_offset == 10
    assert find_verdict(server_store, seed.verdict_id, viewer=None).verdict.decision == "REJECT"
