"""The run store, on SQLite and — when a server is given — on PostgreSQL, with the same code."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from arbiter.config import Settings
from arbiter.contract import Evidence, Output, PairResult, Score
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
        output=Output(label="yes", text="yes, it is", raw={"nested": {"ok": [1, 2]}}),
        scores=[
            Score(
                name="label",
                passed=correct,
                answer="yes",
                evidence=[Evidence(quote="yes", verified=True, note="the label")],
            )
        ],
        passed=correct,
        latency_ms=1.5,
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
    assert got[0].output is not None
    assert got[0].output.raw == {"nested": {"ok": [1, 2]}}
    assert got[0].output.text == "yes, it is"
    assert got[0].scores == _result("a", 0).scores
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


_SCHEMA_1 = """
CREATE TABLE datasets (content_hash VARCHAR(64) PRIMARY KEY, name VARCHAR(200),
  version VARCHAR(100), n_examples INTEGER, examples JSON, created_at DATETIME);
CREATE TABLE runs (id VARCHAR(40) PRIMARY KEY, schema_version INTEGER,
  dataset_hash VARCHAR(64) REFERENCES datasets(content_hash), system JSON, config JSON,
  status VARCHAR(20), n_pairs INTEGER, created_at DATETIME, finished_at DATETIME,
  elapsed_seconds FLOAT);
CREATE TABLE results (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id VARCHAR(40)
  REFERENCES runs(id), example_id VARCHAR(200), repetition INTEGER, label TEXT,
  confidence FLOAT, prediction_id TEXT, raw_output JSON, correct BOOLEAN,
  error_type VARCHAR(100), error_message TEXT, latency_ms FLOAT, attempts INTEGER,
  completed_at DATETIME, UNIQUE (run_id, example_id, repetition));
"""


def test_a_store_written_before_scorers_is_upgraded_and_reads_as_scored_by_label(
    tmp_path: Path,
) -> None:
    """A 0.2 store gains the new columns in place; its results read as ``label`` scores."""
    import sqlite3

    path = tmp_path / "old.db"
    dataset = yes_no_dataset(2)
    examples = [e.canonical_dump() for e in dataset.examples]
    with sqlite3.connect(path) as db:
        db.executescript(_SCHEMA_1)
        db.execute(
            "INSERT INTO datasets VALUES (?, 'old', '1', 2, ?, '2026-01-01 00:00:00')",
            (dataset.content_hash, __import__("json").dumps(examples)),
        )
        db.execute(
            "INSERT INTO runs VALUES ('r1', 1, ?, ?, ?, 'completed', 2, "
            "'2026-01-01 00:00:00', '2026-01-01 00:00:01', 1.0)",
            (dataset.content_hash, '{"kind": "python", "target": "m:f"}', '{"k": 1}'),
        )
        rows = [
            (
                "r1",
                dataset.examples[0].id,
                0,
                dataset.examples[0].expected_label,
                0.9,
                "p1",
                '{"raw": 1}',
                1,
                None,
                None,
                2.0,
                1,
            ),
            (
                "r1",
                dataset.examples[1].id,
                0,
                None,
                None,
                None,
                None,
                0,
                "SystemTimeout",
                "no answer within 1s",
                1000.0,
                3,
            ),
        ]
        db.executemany(
            "INSERT INTO results (run_id, example_id, repetition, label, confidence, "
            "prediction_id, raw_output, correct, error_type, error_message, latency_ms, "
            "attempts, completed_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,'2026-01-01 00:00:00')",
            rows,
        )
    store = Store(f"sqlite:///{path}")
    try:
        first, second = store.results("r1")
        assert first.output is not None
        assert first.output.label == dataset.examples[0].expected_label
        assert (first.output.confidence, first.output.id) == (0.9, "p1")
        assert [(s.name, s.passed) for s in first.scores] == [("label", True)]
        assert first.passed is True
        assert (second.output, second.passed, second.scores) == (None, False, [])
        run = load_run(store, "r1")
        assert run.report.strict is not None
        assert run.report.strict.accuracy.estimate == 0.5
        assert run.report.accuracy.estimate == 0.5
    finally:
        store.close()
