"""A run started from an eval file keeps its ``[gate]``: ``--resume`` gates it the same way.

The first start is killed while its system is held inside a call (no sleep to wait: the
system connects to a gate the test holds), then the run is resumed without the file.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from arbiter.contract import RunGate
from arbiter.datasets import dump_dataset_jsonl
from arbiter.store import Store
from tests.helpers.data import yes_no_dataset
from tests.helpers.gate import CLIENT_SOURCE, Gate

ROOT = Path(__file__).resolve().parents[2]
MODULE = "eval_resume_system"  # written into tmp_path; no other test uses the name
N_EXAMPLES = 40
HELD_CALL = 11

SYSTEM_SOURCE = (
    CLIENT_SOURCE
    + f"""
import threading

from tests.helpers.systems import mostly_right

_lock = threading.Lock()
_calls = 0


def predict(input):
    global _calls
    with _lock:
        _calls += 1
        held = _calls == {HELD_CALL}
    if held:
        hold_call()  # only in a process given a gate: the test kills it here
    return mostly_right(input)
"""
)

EVAL = f"""\
[dataset]
path = "data.jsonl"

[system]
target = "{MODULE}.py:predict"

[run]
concurrency = 1

[gate]
{{floor}}
cohorts = {{{{a = 0.1}}}}
"""


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    inherited = os.environ.get("PYTHONPATH", "")
    return {
        **os.environ,
        "ARBITER_DB_URL": f"sqlite:///{tmp_path / 'store.db'}",
        "ARBITER_HOME": str(tmp_path / "home"),
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), inherited) if p),
        **extra,
    }


def _killed_eval_file_run(tmp_path: Path, floor: str) -> str:
    """Start ``arbiter run eval.toml`` and kill it inside call #HELD_CALL; the run's id."""
    dump_dataset_jsonl(yes_no_dataset(N_EXAMPLES), tmp_path / "data.jsonl")
    (tmp_path / f"{MODULE}.py").write_text(SYSTEM_SOURCE, encoding="utf-8")
    eval_file = tmp_path / "eval.toml"
    eval_file.write_text(EVAL.format(floor=floor), encoding="utf-8")
    command = [sys.executable, "-m", "arbiter.cli.main", "run", str(eval_file), "-q"]
    log = tmp_path / "first-start.log"
    with Gate() as gate, log.open("w") as stderr:
        first = subprocess.Popen(
            command, env=_env(tmp_path, **gate.env), cwd=tmp_path, stderr=stderr
        )
        try:
            with gate.accept(first, log):  # held inside a call: the run is half done
                first.kill()
                first.wait(timeout=60)
        finally:
            if first.poll() is None:
                first.kill()
                first.wait(timeout=60)
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        (run,) = store.list_runs()
        assert run.status == "interrupted", log.read_text()
        assert run.n_done < N_EXAMPLES  # killed before the end: it was never gated
        return run.id
    finally:
        store.close()


@pytest.mark.parametrize(
    ("floor", "code"),
    [("min_accuracy = 0.5", 0), ("min_accuracy = 0.99", 1)],
    ids=["met", "missed"],
)
def test_a_resumed_eval_file_run_is_gated_by_the_files_floors(
    cli: Any, tmp_path: Path, floor: str, code: int
) -> None:
    try:
        run_id = _killed_eval_file_run(tmp_path, floor)
        (tmp_path / "eval.toml").unlink()  # the run keeps its gate: the file is not needed
        resumed = cli("run", "--resume", run_id, "-q")
    finally:
        sys.modules.pop(MODULE, None)
    assert resumed.code == code, resumed.err
    assert ("gate passed" in resumed.out) is (code == 0)
    assert ("below the floor 0.990" in resumed.out) is (code == 1)
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        info = store.get_run(run_id)
    finally:
        store.close()
    assert (info.status, info.n_done) == ("completed", N_EXAMPLES)
    minimum = float(floor.rpartition("= ")[2])
    assert info.run_config.gate == RunGate(min_accuracy=minimum, cohorts={"a": 0.1})


def test_a_resumed_run_without_a_gate_is_not_gated(cli: Any, tmp_path: Path) -> None:
    dump_dataset_jsonl(yes_no_dataset(N_EXAMPLES), tmp_path / "data.jsonl")
    started = cli(
        "run", "--dataset", str(tmp_path / "data.jsonl"), "-q",
        "--target", "tests.helpers.systems:mostly_right",
    )  # fmt: skip
    assert started.code == 0, started.err
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        (run,) = store.list_runs()
    finally:
        store.close()
    assert run.run_config.gate is None
    resumed = cli("run", "--resume", run.id, "-q")
    assert resumed.code == 0, resumed.err
    assert "gate" not in resumed.out
