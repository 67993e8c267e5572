"""The HTTP agent executor against a real uvicorn stand-in of the REST agent contract.

Cases run k times through the offline harness into a real SQLite store, are gated, and a
run SIGKILLed midway resumes with only its missing (case, repetition) pairs, started
and resumed by the service function or by ``arbiter agent run``. The kill waits on the
store (the stand-in holds every task after the fifth until released, so
exactly five pairs can finish), never on a sleep of its own.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from arbiter.contract import Report, RunGate
from arbiter.service.agents_run import agent_gate, run_agent_cases
from arbiter.service.runs import load_run
from arbiter.store import Store
from tests.helpers.agent_standin import AGENT_TOML, AgentStandIn, standin_registry
from tests.integration.serving import serve_asgi

ROOT = Path(__file__).resolve().parents[2]
K = 3
SCORERS = ["standin_completed", "standin_tools"]
CASES = [
    {
        "id": "weather",
        "input": {"query": "What is the weather in Paris?"},
        "agent_class": "tool_enabled",
        "assertions": {"require_tools_subset": ["get_weather"]},
        "cohort": "tools",
    },
    {
        "id": "price",
        "input": {"query": "What is the price of acme?"},
        "assertions": {"require_tools_subset": ["get_quote"]},
        "cohort": "tools",
    },
    {"id": "chat", "input": {"query": "Say hello"}, "cohort": "chat"},
    {"id": "broken", "input": {"query": "Please fail this one"}, "cohort": "chat"},
]
PASSES = {"weather": True, "price": True, "chat": True, "broken": False}
"""Each case's outcome on every repetition: the stand-in's answers are deterministic."""

RUN_SCRIPT = """\
import asyncio, sys
from arbiter.service.agents_run import run_agent_cases
from arbiter.store import Store
from tests.helpers.agent_standin import standin_registry

cases, agent, url, k = sys.argv[1:5]
asyncio.run(
    run_agent_cases(
        cases,
        executor=f"http:{agent}",
        store=Store(url),
        k=int(k),
        scorers=["standin_completed", "standin_tools"],
        registry=standin_registry(),
        concurrency=2,
    )
)
"""


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    cases = tmp_path / "golden.jsonl"
    cases.write_text("".join(json.dumps(case) + "\n" for case in CASES))
    return cases, tmp_path / "agent.toml"


@pytest.fixture
def standin() -> Iterator[tuple[AgentStandIn, str]]:
    agent = AgentStandIn(running_polls=2, hold_after=None)
    with serve_asgi(agent.app) as base_url:
        yield agent, base_url


def _agent_file(path: Path, base_url: str) -> Path:
    path.write_text(AGENT_TOML.format(base_url=base_url, timeout=60, interval=0.01))
    return path


def _outcomes(store: Store, run_id: str) -> dict[tuple[str, int], bool | None]:
    results = store.results(run_id)
    keys = [(r.example_id, r.repetition) for r in results]
    assert len(keys) == len(set(keys)), "a pair was stored twice"
    return {(r.example_id, r.repetition): r.passed for r in results}


def _expected() -> dict[tuple[str, int], bool]:
    return {(case_id, rep): passed for case_id, passed in PASSES.items() for rep in range(K)}


def _run(cases: Path, agent: Path, store: Store, *, gate: RunGate | None = None) -> Report:
    return asyncio.run(
        run_agent_cases(
            cases,
            executor=f"http:{agent}",
            store=store,
            k=K,
            scorers=SCORERS,
            registry=standin_registry(),
            gate=gate,
        )
    )


def test_cases_run_k_times_through_the_rest_agent_into_the_store(
    tmp_path: Path, files: tuple[Path, Path], standin: tuple[AgentStandIn, str]
) -> None:
    agent, base_url = standin
    cases, agent_toml = files
    store = Store(f"sqlite:///{tmp_path / 'runs.db'}")
    report = _run(cases, _agent_file(agent_toml, base_url), store)

    assert report.run_id is not None
    assert report.status == "completed"
    assert _outcomes(store, report.run_id) == _expected()
    assert report.pass_hat_k.estimate == pytest.approx(3 / 4)
    assert report.error_rate == 0.0
    assert len(agent.sessions) == len(CASES) * K  # a session per repetition
    stored = store.results(report.run_id)
    weather = next(r for r in stored if r.example_id == "weather")
    assert weather.output is not None
    assert weather.output.trajectory is not None
    assert [c.name for c in weather.output.trajectory.tool_calls] == ["get_weather"]
    assert store.get_run(report.run_id).system["kind"] == "agent-http"


def test_an_agent_run_is_gated_on_cohort_floors_and_a_baseline(
    tmp_path: Path, files: tuple[Path, Path], standin: tuple[AgentStandIn, str]
) -> None:
    _, base_url = standin
    cases, agent_toml = files
    _agent_file(agent_toml, base_url)
    store = Store(f"sqlite:///{tmp_path / 'runs.db'}")
    baseline = _run(cases, agent_toml, store)

    passing = RunGate(cohorts={"tools": 1.0}, baseline=baseline.run_id)
    report = _run(cases, agent_toml, store, gate=passing)
    result = agent_gate(store, report)
    assert result is not None
    assert result.passed, result.failures

    failing = _run(cases, agent_toml, store, gate=RunGate(cohorts={"chat": 0.9}))
    result = agent_gate(store, failing)
    assert result is not None
    assert not result.passed
    assert any("chat" in line for line in result.failures)
    assert agent_gate(store, baseline) is None  # a run stored without a gate


def _kill_once(proc: subprocess.Popen[bytes], store: Store, done: int) -> str:
    """SIGKILL ``proc`` once its run has stored ``done`` pairs; the run's id."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        runs = store.list_runs(limit=1)
        if runs and runs[0].n_done >= done:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
            return runs[0].id
        if proc.poll() is not None:
            assert proc.stderr is not None
            raise AssertionError(f"the run ended first: {proc.stderr.read().decode()[-2000:]}")
        time.sleep(0.01)  # polling the store: the signal waited on is the stored count
    proc.kill()
    raise AssertionError("the run stored too few pairs")


def _arbiter(*args: str) -> list[str]:
    return [sys.executable, "-m", "arbiter.cli.main", *args]


def _start_command(how: str, cases: Path, agent_toml: Path, db_url: str) -> list[str]:
    """The command starting the run: the service function, or ``arbiter agent run``."""
    if how == "service":
        return [sys.executable, "-c", RUN_SCRIPT, str(cases), str(agent_toml), db_url, str(K)]
    # The CLI has the registry's own scorers: the real ones these two stand in for.
    return _arbiter(
        *("agent", "run", str(cases), "--executor", f"http:{agent_toml}", "--k", str(K)),
        *("--scorer", "completed", "--scorer", "required_tools", "--concurrency", "2"),
        *("--quiet", "--json"),
    )


def _resume(how: str, store: Store, run_id: str, env: dict[str, str], cwd: Path) -> None:
    if how == "service":
        report = asyncio.run(
            run_agent_cases(store=store, resume=run_id, registry=standin_registry())
        )
        assert report.status == "completed"
        return
    resumed = subprocess.run(
        _arbiter("agent", "run", "--resume", run_id, "--quiet", "--json"),
        env=env,
        cwd=cwd,
        capture_output=True,
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stderr.decode()[-2000:]
    assert json.loads(resumed.stdout)["status"] == "completed"


@pytest.mark.parametrize("how", ["service", "cli"])
def test_a_sigkilled_agent_run_resumes_each_pair_exactly_once(
    tmp_path: Path, files: tuple[Path, Path], how: str
) -> None:
    held = 5
    agent = AgentStandIn(running_polls=1, hold_after=held)
    cases, agent_toml = files
    db_url = f"sqlite:///{tmp_path / 'runs.db'}"
    store = Store(db_url)
    env = {
        **os.environ,
        "ARBITER_DB_URL": db_url,
        "ARBITER_HOME": str(tmp_path / "home"),
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    with serve_asgi(agent.app) as base_url:
        _agent_file(agent_toml, base_url)
        proc = subprocess.Popen(
            _start_command(how, cases, agent_toml, db_url),
            env=env,
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        run_id = _kill_once(proc, store, held)

        killed = store.get_run(run_id)
        assert killed.status == "interrupted"  # its lease holder is dead
        assert killed.n_done == held  # the tasks after the fifth were still running
        before = _outcomes(store, run_id)

        agent.release()
        _resume(how, store, run_id, env, tmp_path)

    after = _outcomes(store, run_id)
    assert after == _expected()  # every (case, repetition) once, with its outcome
    assert before.items() <= after.items()  # pairs stored before the kill were kept
    finished = store.get_run(run_id)
    assert finished.status == "completed"
    assert len(finished.segments) == 2
    assert load_run(store, run_id).report.pass_hat_k.estimate == pytest.approx(3 / 4)
