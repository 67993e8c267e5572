"""The run store, on SQLite and — when a server is given — on PostgreSQL, with the same code."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from arbiter.config import Settings
from arbiter.contract import PairResult
from arbiter.errors import StoreError, StoreUnavailable
from arbiter.harness.runner import run_eval
from arbiter.service.runs import load_run
from arbiter.store import Store
from arbiter.systems.python import PythonSystem
from tests.helpers.data import yes_no_dataset
from tests.helpers.systems import mostly_right


def _result(example_id: str, repetition: int = 0, *, correct: bool = True) -> PairResult:
    return PairResult(
        example_id=example_id,
        repetition=repetition,
        label="yes",
        correct=correct,
        latency_ms=1.5,
        raw_output={"nested": {"ok": [1, 2]}},
    )


def _new_run(store: Store, n: int = 4) -> str:
    return store.create_run(
        dataset=yes_no_dataset(n),
        system={"kind": "python", "target": "m:f"},
        config={"k": 1, "seed": 3},
        n_pairs=n,
    )


def test_results_round_trip_in_example_and_repetition_order(store: Store) -> None:
    run_id = _new_run(store)
    store.add_results(run_id, [_result("b", 1), _result("a", 0), _result("b", 0)])
    got = store.results(run_id)
    assert [(r.example_id, r.repetition) for r in got] == [("a", 0), ("b", 0), ("b", 1)]
    assert got[0].raw_output == {"nested": {"ok": [1, 2]}}
    assert store.completed_pairs(run_id) == {("a", 0), ("b", 0), ("b", 1)}
    assert store.get_run(run_id).n_done == 3


def test_a_pair_cannot_be_stored_twice(store: Store) -> None:
    run_id = _new_run(store)
    store.add_results(run_id, [_result("a")])
    with pytest.raises(StoreUnavailable, match=f"cannot store results of run {run_id} in "):
        store.add_results(run_id, [_result("a")])
    assert len(store.results(run_id)) == 1  # the failed transaction left nothing behind


def test_dataset_is_stored_once_per_content_hash(store: Store) -> None:
    dataset = yes_no_dataset(5)
    assert store.save_dataset(dataset) == store.save_dataset(dataset) == dataset.content_hash
    assert store.load_dataset(dataset.content_hash).examples == dataset.examples


def test_run_found_by_unique_prefix_and_unknown_id_is_a_store_error(store: Store) -> None:
    run_id = _new_run(store)
    assert store.get_run(run_id[:17]).id == run_id
    with pytest.raises(StoreError, match="no run matches"):
        store.get_run("does-not-exist")


def test_status_and_elapsed_time_accumulate_over_segments(store: Store) -> None:
    run_id = _new_run(store)
    first = store.start_segment(run_id)
    store.end_segment(run_id, first, "interrupted", elapsed_seconds=1.25)
    second = store.start_segment(run_id)
    store.end_segment(run_id, second, "completed", elapsed_seconds=2.0)
    info = store.get_run(run_id)
    assert (first, second) == (0, 1)
    assert info.status == "completed"
    assert [s.elapsed_seconds for s in info.segments] == [1.25, 2.0]
    assert info.elapsed_seconds == pytest.approx(3.25)
    assert info.finished_at is not None


def test_runs_are_listed_newest_first(store: Store) -> None:
    first, second = _new_run(store), _new_run(store)
    assert [r.id for r in store.list_runs()][:2] == [second, first]


def test_a_whole_run_stores_and_reloads_to_the_same_report(store: Store) -> None:
    report = run_eval(PythonSystem(mostly_right), yes_no_dataset(40), k=2, store=store, seed=5)
    reloaded = load_run(store, report.run_id or "")
    exclude = {"latency": True, "examples_per_second": True}
    assert reloaded.report.model_dump(exclude=exclude) == report.model_dump(exclude=exclude)
    assert reloaded.complete


def test_sqlite_store_runs_in_wal_mode(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'deep' / 'dir' / 'store.db'}")
    with store.engine.connect() as connection:
        assert connection.execute(text("PRAGMA journal_mode")).scalar() == "wal"
    store.close()


def test_default_store_is_sqlite_under_home_and_env_overrides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ARBITER_DB_URL", raising=False)
    assert Settings().database_url() == "sqlite:///.arbiter/arbiter.db"
    monkeypatch.setenv("ARBITER_DB_URL", "postgresql+psycopg://u@h/db")
    assert Settings().database_url() == "postgresql+psycopg://u@h/db"


def test_dotenv_is_read_but_a_real_env_var_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("ARBITER_TIMEOUT=7\nARBITER_RETRIES=4\n", encoding="utf-8")
    monkeypatch.setenv("ARBITER_RETRIES", "1")
    settings = Settings()
    assert settings.timeout == 7.0
    assert settings.retries == 1


def test_unusable_url_is_a_store_error() -> None:
    with pytest.raises(StoreError, match="cannot open the store"):
        Store("nosuchdialect://x/y")


def test_a_lease_held_by_a_killed_but_unreaped_process_can_be_taken_over(store: Store) -> None:
    import subprocess
    import sys
    import time

    from arbiter.store.models import RunLeaseRow
    from arbiter.store.repository import _process_exists

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 10
    while _process_exists(child.pid) and time.monotonic() < deadline:
        time.sleep(0.01)  # it exits at once; not waited for, it stays a zombie
    assert not _process_exists(child.pid)
    run_id = _new_run(store)
    lease = store.acquire_lease(run_id)
    with store.session() as session, session.begin():  # as if the child had taken it
        session.execute(
            RunLeaseRow.__table__.update().values(pid=child.pid)  # type: ignore[attr-defined]
        )
    taken = store.acquire_lease(run_id)  # the holder is a zombie: dead
    assert taken.owner != lease.owner
    child.wait()
