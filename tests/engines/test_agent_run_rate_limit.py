"""``agent run --rate-limit``: every call to the executor passes the run's shared limit
(the harness's gated path, as ``arbiter run``'s system calls do), under the name the
report's ``system`` line shows; a bad value exits 3 with one line naming the option."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from arbiter.harness.describe import describe_system_short
from arbiter.service.agents_run import agent_system_name
from arbiter.store import Store
from tests.conftest import Result

AGENTS = Path(__file__).with_name("agents.py")
EXECUTOR = f"python:{AGENTS}:logged"


def _cases(tmp_path: Path, n: int) -> tuple[Path, Path]:
    log = tmp_path / "calls.log"
    path = tmp_path / "cases.jsonl"
    case = {"input": {"query": "q", "log": str(log)}, "agent_class": "tool_enabled"}
    rows = [{"id": f"c{i:02d}", **case} for i in range(n)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path, log


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("20/h", "expected [PROVIDER=]N/s or N/min"),
        ("0/s", "per_second must be a positive number"),
        ("20/s,concurrency=0", "concurrency must be at least 1"),
    ],
)
def test_a_bad_agent_run_rate_limit_exits_3_with_one_line_naming_the_option(
    cli: Callable[..., Result], tmp_path: Path, value: str, message: str
) -> None:
    cases, _ = _cases(tmp_path, 1)
    done = cli("agent", "run", str(cases), "-e", EXECUTOR, "--rate-limit", value)
    assert done.code == 3
    lines = done.err.strip().splitlines()
    assert len(lines) == 1
    assert f"--rate-limit {value!r}" in lines[0]
    assert message in lines[0]
    assert not (tmp_path / "store.db").exists()  # refused before anything was written


def test_rate_limit_is_in_agent_run_help(cli: Callable[..., Result]) -> None:
    done = cli("agent", "run", "--help")
    assert done.code == 0
    assert "--rate-limit" in done.out


def test_a_local_agent_run_starts_no_more_calls_in_a_window_than_burst_and_rate(
    cli: Callable[..., Result], tmp_path: Path
) -> None:
    cases, log = _cases(tmp_path, 24)
    done = cli("agent", "run", str(cases), "-e", EXECUTOR, "-s", "completed",
               "--concurrency", "8", "--rate-limit", "40/s,burst=2", "--json", "-q")  # fmt: skip
    assert done.code == 0, done.err
    report = json.loads(done.out)
    assert report["accuracy"]["estimate"] == 1.0
    starts = [float(line) for line in log.read_text().split()]
    assert len(starts) == 24
    # Two start at once (the burst), then one every 1/40 s: a busy machine can only delay
    # calls, never bring them forward. Without the limit all 24 start within milliseconds.
    # The first call waits for its worker thread, which shortens the span (50 ms allowed).
    assert max(starts) - min(starts) >= (24 - 2) / 40 - 0.05


def test_the_executors_limit_name_is_its_short_description_on_a_start_and_a_resume(
    cli: Callable[..., Result], tmp_path: Path
) -> None:
    cases, _ = _cases(tmp_path, 2)
    done = cli("agent", "run", str(cases), "-e", EXECUTOR, "-s", "completed", "--json", "-q")
    assert done.code == 0, done.err
    run_id = json.loads(done.out)["run_id"]
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        stored = describe_system_short(store.get_run(run_id).system)
        assert agent_system_name(EXECUTOR) == stored
        assert agent_system_name(None, store=store, resume=run_id) == stored
    finally:
        store.close()
    assert stored == f"agent-python:{AGENTS}:logged"
    again = cli("agent", "run", "--resume", run_id, "--rate-limit", "5/s", "--json", "-q")
    assert again.code == 0, again.err
