"""A run killed with SIGKILL keeps the wall time it ran, so its resume does not overstate
examples/s (defect 14 of the foundation issue: only the last segment's time was counted).

Nothing here is timed by the test: the stored wall time is checked against the stored
results' own timestamps, which bound each segment from below.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from arbiter.datasets import dump_dataset_jsonl
from arbiter.store import Store
from tests.helpers.data import yes_no_dataset
from tests.helpers.gate import CLIENT_SOURCE, Gate

ROOT = Path(__file__).resolve().parents[2]
N_EXAMPLES = 200
HOLD_AT = 100  # the call the first process is killed in
SYSTEM = "paced_system"  # written into tmp_path; no other test uses the name
SYSTEM_SOURCE = (
    CLIENT_SOURCE
    + f"""
import time

_calls = 0


def predict(input):
    global _calls
    _calls += 1
    if _calls == {HOLD_AT}:
        hold_call()  # the test kills the process in this call
    time.sleep(0.01)  # a system that takes time, so each segment does
    return input["answer"]
"""
)

Key = tuple[str, int]


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    inherited = os.environ.get("PYTHONPATH", "")
    return {
        **os.environ,
        "ARBITER_DB_URL": f"sqlite:///{tmp_path / 'store.db'}",
        "ARBITER_HOME": str(tmp_path / "home"),
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), inherited) if p),
        **extra,
    }


def _arbiter(*args: str) -> list[str]:
    return [sys.executable, "-m", "arbiter.cli.main", *args]


def _completed_at(tmp_path: Path) -> dict[Key, datetime]:
    """When each stored result was written, read from the store's own table."""
    with sqlite3.connect(tmp_path / "store.db") as db:
        rows = db.execute("SELECT example_id, repetition, completed_at FROM results").fetchall()
    return {(e, r): datetime.fromisoformat(at) for e, r, at in rows}


def _span(times: list[datetime]) -> float:
    """Seconds from the first to the last timestamp: a lower bound on a segment's time."""
    return (max(times) - min(times)).total_seconds()


def _run_until_killed(tmp_path: Path, data_file: Path) -> None:
    """Start a run and SIGKILL it while its system is inside call ``HOLD_AT``."""
    command = _arbiter(
        "run", "--dataset", str(data_file), "--target", f"{SYSTEM}:predict",
        "--concurrency", "1", "-q",
    )  # fmt: skip
    log = tmp_path / "killed.log"
    with Gate() as gate, log.open("w") as stderr:
        run = subprocess.Popen(
            command,
            env=_env(tmp_path, **gate.env),
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
        try:
            with gate.accept(run, log):
                os.kill(run.pid, signal.SIGKILL)
        finally:
            run.kill()  # a no-op once killed; ends it if it was never held
            run.wait(timeout=60)


def test_a_killed_segment_keeps_its_wall_time_through_the_resume(tmp_path: Path) -> None:
    (tmp_path / f"{SYSTEM}.py").write_text(SYSTEM_SOURCE)
    data_file = tmp_path / "data.jsonl"
    dump_dataset_jsonl(yes_no_dataset(N_EXAMPLES), data_file)
    _run_until_killed(tmp_path, data_file)

    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    (killed,) = store.list_runs(limit=1)
    before = _completed_at(tmp_path)
    assert 2 <= len(before) < HOLD_AT  # results of calls before the held one, no more
    first_span = _span(list(before.values()))
    assert first_span > 0
    assert killed.elapsed_seconds >= first_span  # SIGKILL left no chance to record it

    resumed = subprocess.run(
        _arbiter("run", "--resume", killed.id, "-q", "--json"),
        env=_env(tmp_path),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr
    after = _completed_at(tmp_path)
    assert len(after) == N_EXAMPLES
    second_span = _span([at for key, at in after.items() if key not in before])

    finished = store.get_run(killed.id)
    assert finished.status == "completed"
    assert finished.elapsed_seconds >= first_span + second_span
    # The resume's examples/s is over that whole time, not over its own segment.
    report = json.loads(resumed.stdout)
    assert report["examples_per_second"] == pytest.approx(
        N_EXAMPLES / finished.elapsed_seconds, rel=1e-6
    )
