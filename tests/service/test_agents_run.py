"""run_agent_cases: which scorers it picks, what it refuses before writing, how it resumes.

These use the Python and precomputed executors (no network); the HTTP executor's runs
are in tests/integration/test_agent_http_executor.py.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from arbiter.contract import Example, Report, Trajectory
from arbiter.errors import InputError
from arbiter.service.agents_run import DEFAULT_AGENT_TIMEOUT, agent_scorers, run_agent_cases
from arbiter.store import Store
from tests.helpers.agent_standin import standin_registry

SCORERS = ["standin_completed", "standin_tools"]
CASES = [
    {
        "id": "w",
        "input": {"query": "weather"},
        "assertions": {"require_tools_subset": ["get_weather"]},
    },
    {"id": "q", "input": {"query": "quote"}, "agent_class": "tool_enabled"},
]


def tool_agent(input: dict[str, Any]) -> Trajectory:
    """Calls get_weather for a weather query, nothing otherwise."""
    steps = [{"kind": "tool_call", "name": "get_weather"}] if "weather" in input["query"] else []
    return Trajectory.model_validate({"steps": steps, "final_answer": "ok", "status": "completed"})


@pytest.fixture
def cases(tmp_path: Path) -> Path:
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in CASES))
    return path


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(f"sqlite:///{tmp_path / 'runs.db'}")


def _run(cases: Path | None, **options: Any) -> Report:
    options.setdefault("registry", standin_registry())
    return asyncio.run(run_agent_cases(cases, **options))


def _example(agent_class: str | None) -> Example:
    metadata = {"agent_class": agent_class} if agent_class else {}
    return Example(id="x", input={"query": "q"}, metadata=metadata)


@pytest.mark.parametrize(
    ("classes", "chosen"),
    [
        ([None], ["standin_completed", "standin_tools"]),
        (["tool_enabled"], ["standin_completed", "standin_tools"]),
        (["flow"], []),
    ],
)
def test_default_scorers_are_those_that_load_and_apply_to_a_case(
    classes: list[str | None], chosen: list[str]
) -> None:
    choice = agent_scorers(
        [_example(c) for c in classes],
        registry=standin_registry(),
        catalog=["standin_completed", "standin_tools", "not_installed"],
    )
    assert choice.names == chosen
    assert choice.unavailable == ["not_installed"]
    assert sorted(choice.names + choice.not_applicable) == ["standin_completed", "standin_tools"]


def test_cases_run_k_times_through_a_python_agent(cases: Path, store: Store) -> None:
    report = _run(
        cases,
        executor="python:tests.service.test_agents_run:tool_agent",
        k=2,
        scorers=SCORERS,
        store=store,
    )
    assert report.run_id is not None
    assert {(r.example_id, r.repetition, r.passed) for r in store.results(report.run_id)} == {
        ("w", 0, True),
        ("w", 1, True),
        ("q", 0, True),
        ("q", 1, True),
    }
    info = store.get_run(report.run_id)
    assert info.system == {
        "kind": "agent-python",
        "target": "tests.service.test_agents_run:tool_agent",
    }
    assert info.run_config.timeout == DEFAULT_AGENT_TIMEOUT  # a callable bounds nothing itself


def test_gate_on_names_the_scorers_that_decide(cases: Path) -> None:
    report = _run(
        cases,
        executor="python:tests.service.test_agents_run:tool_agent",
        scorers=SCORERS,
        gate_on=["standin_tools"],
    )
    assert [(s.label, s.gating) for s in report.scorers] == [
        ("standin_completed", False),
        ("standin_tools", True),
    ]
    # q requires no tool: its only gating scorer abstains, so its outcome is unknown.
    assert report.pass_hat_k.n == 1


def test_a_precomputed_run_scores_recorded_trajectories(cases: Path, tmp_path: Path) -> None:
    recorded = tmp_path / "runs.jsonl"
    recorded.write_text(json.dumps({"case_id": "w", "trajectory": {"status": "completed"}}))
    report = _run(cases, executor=f"precomputed:{recorded}", scorers=SCORERS)
    assert report.error_examples == {"MissingField": "no recorded trajectory for case 'q'"}
    assert report.error_rate == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "needs a case file and an executor"),
        ({"executor": "ssh:agent"}, "executor 'ssh:agent'"),
        (
            {"executor": "python:tests.service.test_agents_run:tool_agent", "scorers": ["nope"]},
            "nope",
        ),
        ({"resume": "r1"}, "needs the store"),
    ],
)
def test_bad_options_are_refused_before_anything_is_stored(
    cases: Path, store: Store, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(InputError, match=message):
        _run(cases, **({"store": store} if "resume" not in options else {}), **options)
    assert store.list_runs() == []


def test_a_case_the_executor_could_never_send_is_refused_before_the_run(
    tmp_path: Path, store: Store
) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"id": "x", "input": {"query": "q"}}))
    agent = tmp_path / "agent.toml"
    agent.write_text(
        '[agent]\nbase_url = "http://127.0.0.1:9"\n[agent.submit]\n'
        'url = "{base_url}/q"\nbody = { p = "{input.profile}" }\n'
    )
    with pytest.raises(InputError, match=r"example 'x': .*\{input.profile\}"):
        _run(cases, executor=f"http:{agent}", scorers=SCORERS, store=store)
    assert store.list_runs() == []


SPEC = "python:tests.service.test_agents_run:tool_agent"


@pytest.fixture
def stored_run(cases: Path, store: Store) -> str:
    report = _run(cases, executor=SPEC, k=2, scorers=SCORERS, store=store)
    assert report.run_id is not None
    return report.run_id


def test_a_resume_of_a_complete_run_runs_nothing_again(
    cases: Path, store: Store, stored_run: str
) -> None:
    again = _run(cases, executor=SPEC, k=2, resume=stored_run, store=store)
    assert again.completeness is not None
    assert again.completeness.done == 4
    assert len(store.results(stored_run)) == 4


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"k": 3}, "--k 3"),
        ({"executor": "python:tests.service.test_agents_run:_example"}, "the system"),
        ({"scorers": SCORERS}, "repeats the run's own scorers"),
        ({"cases": "other"}, "--dataset"),
    ],
)
def test_a_resume_refuses_options_other_than_the_runs(
    tmp_path: Path, store: Store, stored_run: str, options: dict[str, Any], message: str
) -> None:
    other = None
    if options.pop("cases", None):
        other = tmp_path / "other.jsonl"
        other.write_text(json.dumps(CASES[0]) + "\n")
    with pytest.raises(InputError, match=message):
        _run(other, resume=stored_run, store=store, **options)
