"""A run killed with SIGKILL at any point resumes to the report of an uninterrupted run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from arbiter.datasets import dump_dataset_jsonl, load_dataset
from arbiter.harness.runner import run_eval
from arbiter.service.runs import load_run
from arbiter.store import Store
from arbiter.systems.python import PythonSystem
from tests.helpers.data import yes_no_dataset

ROOT = Path(__file__).resolve().parents[2]
TARGET = "tests.helpers.systems:slow_mostly_right"
N_EXAMPLES, K = 150, 2
TIMING_FIELDS = {"run_id": True, "latency": True, "examples_per_second": True}


def _env(db_url: str) -> dict[str, str]:
    env = dict(os.environ)
    env["ARBITER_DB_URL"] = db_url
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


def _arbiter(*args: str) -> list[str]:
    return [sys.executable, "-m", "arbiter.cli.main", *args]


def _kill_after(proc: subprocess.Popen[bytes], store: Store, threshold: int) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        runs = store.list_runs(limit=1)
        if runs and runs[0].n_done >= threshold:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
            return runs[0].id
        assert proc.poll() is None, "the run finished before it could be killed"
        time.sleep(0.005)
    proc.kill()
    raise AssertionError("the run made no progress")


@pytest.mark.parametrize("kill_at", [1, N_EXAMPLES, 2 * N_EXAMPLES - 20])
def test_sigkilled_run_resumes_to_the_uninterrupted_report(tmp_path: Path, kill_at: int) -> None:
    dataset = yes_no_dataset(N_EXAMPLES)
    data_file = tmp_path / "data.jsonl"
    dump_dataset_jsonl(dataset, data_file)
    db_url = f"sqlite:///{tmp_path / 'runs.db'}"
    store = Store(db_url)
    run_args = [
        "run",
        "--dataset",
        str(data_file),
        "--target",
        TARGET,
        "--k",
        str(K),
        "--concurrency",
        "4",
        "--seed",
        "11",
        "--quiet",
        "--json",
    ]

    proc = subprocess.Popen(
        _arbiter(*run_args),
        env=_env(db_url),
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    run_id = _kill_after(proc, store, kill_at)

    killed = store.get_run(run_id)
    # SIGKILL left no chance to record anything: the dead lease holder tells.
    assert killed.status == "interrupted"
    assert kill_at <= killed.n_done < N_EXAMPLES * K
    assert len(killed.segments) == 1
    assert killed.segments[0].ended_at is None  # killed mid-segment ...
    assert killed.segments[0].elapsed_seconds > 0  # ... yet its wall time is not lost
    before = store.completed_pairs(run_id)

    resumed = subprocess.run(
        _arbiter("run", "--resume", run_id, "--quiet", "--json"),
        env=_env(db_url),
        cwd=tmp_path,
        capture_output=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr.decode()

    results = store.results(run_id)
    keys = [(r.example_id, r.repetition) for r in results]
    assert len(keys) == len(set(keys)) == N_EXAMPLES * K  # nothing duplicated, nothing missing
    assert before <= set(keys)  # pairs done before the kill were kept, not redone
    finished = store.get_run(run_id)
    assert finished.status == "completed"
    assert len(finished.segments) == 2
    assert finished.elapsed_seconds >= killed.segments[0].elapsed_seconds

    reference = run_eval(PythonSystem(TARGET), load_dataset(data_file), k=K, concurrency=4, seed=11)
    stored = load_run(store, run_id).report
    exclude: Any = TIMING_FIELDS
    assert stored.model_dump(exclude=exclude) == reference.model_dump(exclude=exclude)
