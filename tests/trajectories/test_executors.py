"""Executors answer a case with a trajectory; their failures are system-under-test errors.

The HTTP executor talks to the REST stand-in in-process (an httpx ASGI transport) with an
injected clock and sleep, so polling never waits on wall time; its error paths use
``httpx.MockTransport``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from arbiter.contract import Example, FlowRun, Output, Trajectory
from arbiter.errors import (
    InputError,
    InvalidSystemResponse,
    MissingField,
    SystemCrashed,
    SystemHTTPError,
    SystemTimeout,
    SystemUnderTestError,
    SystemUnreachable,
)
from arbiter.trajectories.agent_http_config import AgentHttpConfig, load_agent_config
from arbiter.trajectories.executors import (
    AgentSystem,
    PrecomputedExecutor,
    PythonExecutor,
    agent_output,
    build_executor,
    load_precomputed,
    parse_executor_spec,
)
from arbiter.trajectories.executors_http import HttpStepsExecutor
from tests.helpers.agent_standin import AGENT_TOML, AgentStandIn

ROOT = Path(__file__).resolve().parents[2]
CASE = Example(id="c1", input={"query": "What is the weather in Paris?"})
TRAJECTORY = {"steps": [{"kind": "tool_call", "name": "get_weather"}], "final_answer": "sunny"}


def weather_agent(input: dict[str, Any]) -> dict[str, Any]:
    """A sync agent: one tool call, an answer naming the query."""
    return {**TRAJECTORY, "final_answer": f"sunny: {input['query']}", "status": "completed"}


async def async_agent(input: dict[str, Any]) -> Trajectory:
    return Trajectory(final_answer=input["query"], status="completed")


def broken_agent(input: dict[str, Any]) -> Trajectory:
    raise RuntimeError("model quota exhausted")


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


# --- reading what an agent returned -------------------------------------------------


@pytest.mark.parametrize(
    ("value", "has"),
    [
        (Trajectory(final_answer="a"), "trajectory"),
        (FlowRun(nodes=[]), "flow"),
        (Output(trajectory=Trajectory()), "trajectory"),
        (TRAJECTORY, "trajectory"),
        ({"nodes": [{"id": "n1"}], "status": "completed"}, "flow"),
        ({"trajectory": TRAJECTORY, "metadata": {"k": 1}}, "trajectory"),
    ],
)
def test_an_agent_may_return_a_trajectory_flow_output_or_a_dict_of_one(
    value: Any, has: str
) -> None:
    output = agent_output(value, "agent")
    assert getattr(output, has) is not None


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("just text", "returned str; expected a Trajectory"),
        ({"steps": [{"kind": "teleport"}]}, "returned an invalid Trajectory: field 'steps[0]"),
        ({"nodes": "n1"}, "returned an invalid FlowRun: field 'nodes'"),
    ],
)
def test_anything_else_is_an_invalid_response_naming_the_field(value: Any, message: str) -> None:
    with pytest.raises(InvalidSystemResponse, match=message.replace("[", r"\[")):
        agent_output(value, "agent")


# --- the python executor --------------------------------------------------------------


@pytest.mark.parametrize(
    "target",
    [
        weather_agent,
        async_agent,
        "tests.trajectories.test_executors:weather_agent",
        f"{ROOT / 'tests' / 'trajectories' / 'test_executors.py'}:async_agent",
    ],
)
def test_the_python_executor_calls_sync_and_async_agents_with_the_input(target: Any) -> None:
    output = run(PythonExecutor(target).run(CASE))
    assert output.trajectory is not None
    assert output.trajectory.final_answer is not None
    assert "What is the weather in Paris?" in output.trajectory.final_answer


def test_an_agent_that_raises_is_a_crashed_system() -> None:
    with pytest.raises(SystemCrashed, match="RuntimeError: model quota exhausted"):
        run(PythonExecutor(broken_agent).run(CASE))


def test_a_python_target_given_by_relative_path_is_stored_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text("def answer(input):\n    return {'final_answer': input['query']}\n")
    monkeypatch.chdir(tmp_path)
    executor = PythonExecutor("agent.py:answer")
    monkeypatch.chdir(ROOT)  # a resume from elsewhere still finds the file
    assert executor.describe() == {"kind": "agent-python", "target": f"{agent}:answer"}
    rebuilt = build_executor(executor.describe())
    assert run(rebuilt.run(CASE)).trajectory.final_answer == CASE.input["query"]


@pytest.mark.parametrize("target", ["nomodule_xyz:fn", "no-colon", "tests.helpers:absent"])
def test_a_python_target_that_cannot_load_is_an_input_error(target: str) -> None:
    with pytest.raises(InputError, match="python target"):
        PythonExecutor(target)


# --- the precomputed executor --------------------------------------------------------


def _recorded(tmp_path: Path, *lines: Any) -> Path:
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines))
    return path


def test_the_precomputed_executor_answers_each_case_with_its_recorded_run(tmp_path: Path) -> None:
    path = _recorded(
        tmp_path,
        {"case_id": "c1", "trajectory": TRAJECTORY},
        {"case_id": "f1", "flow": {"nodes": [{"id": "start"}]}},
        {"case_id": "o1", "output": {"trajectory": {"final_answer": "x"}, "id": "turn-9"}},
    )
    executor = parse_executor_spec(f"precomputed:{path}")
    assert run(executor.run(CASE)).trajectory.final_answer == "sunny"
    assert run(executor.run(Example(id="f1", input={"query": "q"}))).flow is not None
    assert run(executor.run(Example(id="o1", input={"query": "q"}))).id == "turn-9"
    assert executor.describe() == {"kind": "agent-precomputed", "target": str(path.resolve())}
    assert run(build_executor(executor.describe()).run(CASE)).trajectory is not None


def test_a_case_without_a_recorded_run_is_a_missing_field_pair(tmp_path: Path) -> None:
    executor = PrecomputedExecutor({"other": Trajectory()})
    with pytest.raises(MissingField, match="no recorded trajectory for case 'c1'"):
        run(executor.run(CASE))


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("[]", "runs.jsonl:2: expected an object, got array"),
        ({"trajectory": TRAJECTORY}, "runs.jsonl:2: field 'case_id'"),
        ({"case_id": "x"}, "runs.jsonl:2: give exactly one"),
        ({"case_id": "x", "trajectory": {}, "flow": {}}, "runs.jsonl:2: give exactly one"),
        ({"case_id": "x", "trace": {}}, "runs.jsonl:2: unknown key 'trace'"),
        ({"case_id": "c1", "trajectory": {}}, "runs.jsonl:2: case 'c1' is recorded twice"),
        (
            {"case_id": "x", "trajectory": {"status": "?"}},
            "runs.jsonl:2: field 'trajectory.status'",
        ),
        (
            {"case_id": "x", "output": {"text": "no run"}},
            "runs.jsonl:2: the recorded output holds no",
        ),
    ],
)
def test_a_bad_recorded_line_is_an_input_error(tmp_path: Path, line: Any, message: str) -> None:
    path = _recorded(tmp_path, {"case_id": "c1", "trajectory": TRAJECTORY}, line)
    with pytest.raises(InputError) as caught:
        load_precomputed(path)
    assert message in str(caught.value)


# --- the system adapter and specs ----------------------------------------------------


class _TextOnly:
    async def run(self, case: Example) -> Output:
        return Output(text="no trajectory")

    def describe(self) -> dict[str, Any]:
        return {"kind": "agent-python", "target": "x:y"}


def test_an_output_without_trajectory_or_flow_is_an_invalid_response() -> None:
    with pytest.raises(InvalidSystemResponse, match="returned no trajectory or flow run"):
        run(AgentSystem(_TextOnly()).answer(CASE))


def test_the_system_form_of_an_agent_predicts_its_final_answer() -> None:
    prediction = run(AgentSystem(PythonExecutor(weather_agent))({"query": "rain?"}))
    assert prediction.label == "sunny: rain?"


@pytest.mark.parametrize(
    "spec", ["python", "mcp:x", "http:", "python:", "grpc:agent.toml", "http:/absent/agent.toml"]
)
def test_a_bad_executor_spec_is_an_input_error(spec: str) -> None:
    with pytest.raises(InputError):
        parse_executor_spec(spec)


@pytest.mark.parametrize(
    "description",
    [{"kind": "http", "url": "x"}, {"kind": "agent-precomputed", "target": "<memory>"}],
)
def test_a_description_that_is_no_rebuildable_executor_is_refused(description: Any) -> None:
    with pytest.raises(InputError):
        build_executor(description)


# --- the HTTP executor against the stand-in -------------------------------------------


class FakeClock:
    """A clock that moves only when the executor sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self.waits: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


def _config(tmp_path: Path, *, timeout: float = 30, interval: float = 0.5, extra: str = "") -> Path:
    path = tmp_path / "agent.toml"
    text = AGENT_TOML.format(base_url="http://standin", timeout=timeout, interval=interval)
    path.write_text(text + extra)
    return path


def _standin_executor(
    tmp_path: Path, standin: AgentStandIn, clock: FakeClock, **config: Any
) -> HttpStepsExecutor:
    return HttpStepsExecutor.from_file(
        _config(tmp_path, **config),
        transport=httpx.ASGITransport(app=standin.app),
        clock=clock,
        sleep=clock.sleep,
    )


def test_a_case_runs_as_session_submit_poll_and_maps_into_a_trajectory(tmp_path: Path) -> None:
    standin, clock = AgentStandIn(running_polls=3), FakeClock()
    output = run(_standin_executor(tmp_path, standin, clock).run(CASE))
    trajectory = output.trajectory
    assert trajectory is not None
    assert (trajectory.id, trajectory.conversation_id) == ("t1", "s1")
    assert trajectory.agent.name == "standin"
    assert trajectory.status == "completed"
    assert trajectory.final_answer == "It is sunny in Paris."
    assert [s.kind for s in trajectory.steps] == ["llm_call", "tool_call", "llm_call"]
    [call] = trajectory.tool_calls
    assert (call.name, call.arguments, call.result, call.call_id) == (
        "get_weather",
        {"city": "Paris"},
        "sunny",
        "c1",
    )
    assert trajectory.totals().input_tokens == 50
    assert trajectory.totals().cost_usd == pytest.approx(0.002)
    assert trajectory.metadata == {
        "cost_usd": 0.002,
        "tokens": {"in": 50, "out": 15},
        "skipped_events": 1,
    }
    assert standin.queries == [{"query": CASE.input["query"], "case": "c1"}]
    # Three "running" answers, then the result: three waits of the configured interval.
    assert clock.waits == [0.5, 0.5, 0.5]


def test_a_task_the_agent_failed_is_a_trajectory_with_status_error(tmp_path: Path) -> None:
    standin, clock = AgentStandIn(running_polls=0), FakeClock()
    output = run(
        _standin_executor(tmp_path, standin, clock).run(
            Example(id="f", input={"query": "please fail"})
        )
    )
    assert output.trajectory is not None
    assert output.trajectory.status == "error"
    assert output.trajectory.error == "the agent gave up"
    assert output.trajectory.final_answer is None


def test_a_task_still_running_at_the_timeout_is_a_system_timeout(tmp_path: Path) -> None:
    standin, clock = AgentStandIn(hold_after=0), FakeClock()
    executor = _standin_executor(tmp_path, standin, clock, timeout=2, interval=0.5)
    with pytest.raises(SystemTimeout, match="still 'running' after 2s"):
        run(executor.run(CASE))
    assert clock.now == pytest.approx(2.0)  # waited on the injected clock, never beyond
    assert standin.polls == 5


def test_quotes_and_braces_in_a_query_stay_one_json_string(tmp_path: Path) -> None:
    standin, clock = AgentStandIn(running_polls=0), FakeClock()
    query = 'say "hi" {task_id} \\ </script>'
    run(_standin_executor(tmp_path, standin, clock).run(Example(id="q", input={"query": query})))
    assert standin.queries == [{"query": query, "case": "q"}]


def test_an_http_executor_rebuilds_from_its_stored_description(tmp_path: Path) -> None:
    executor = HttpStepsExecutor.from_file(_config(tmp_path))
    description = json.loads(json.dumps(executor.describe()))  # as the store keeps it
    rebuilt = build_executor(description)
    assert isinstance(rebuilt, HttpStepsExecutor)
    assert rebuilt.describe() == executor.describe()
    assert description["target"] == str((tmp_path / "agent.toml").resolve())


# --- the HTTP executor's error paths ---------------------------------------------------

Handler = Callable[[httpx.Request], httpx.Response]


def _mock_executor(handler: Handler, **fields: Any) -> HttpStepsExecutor:
    config = AgentHttpConfig.model_validate(
        {
            "base_url": "http://agent.test",
            "session": {"url": "{base_url}/sessions"},
            "submit": {
                "url": "{base_url}/s/{session_id}/q",
                "body": {"q": "{query}"},
                "task_id": "task_id",
            },
            "poll": {"url": "{base_url}/tasks/{task_id}", "interval": 1},
            **fields,
        }
    )
    clock = FakeClock()
    return HttpStepsExecutor(
        config, transport=httpx.MockTransport(handler), clock=clock, sleep=clock.sleep
    )


def _routes(**answers: httpx.Response | Handler) -> Handler:
    def handle(request: httpx.Request) -> httpx.Response:
        path = request.url.raw_path.decode()
        for prefix, answer in answers.items():
            if path.startswith("/" + prefix):
                return answer if isinstance(answer, httpx.Response) else answer(request)
        return httpx.Response(200, json={"session_id": "s1", "task_id": "t1", "status": "done"})

    return handle


def _raise(error: Exception) -> Callable[[httpx.Request], httpx.Response]:
    def handle(request: httpx.Request) -> httpx.Response:
        raise error

    return handle


@pytest.mark.parametrize(
    ("answers", "error", "message"),
    [
        ({"sessions": _raise(httpx.ConnectError("refused"))}, SystemUnreachable, "unreachable"),
        ({"tasks": _raise(httpx.ReadTimeout("slow"))}, SystemTimeout, "agent poll: GET"),
        ({"s/": httpx.Response(503, json={"detail": "busy"})}, SystemHTTPError, "HTTP 503: busy"),
        ({"sessions": httpx.Response(200, text="<html>")}, InvalidSystemResponse, "not JSON"),
        (
            {"sessions": httpx.Response(200, json={"id": 1})},
            MissingField,
            "agent session: .*'session_id'",
        ),
        (
            {"sessions": httpx.Response(200, json={"session_id": [1]})},
            InvalidSystemResponse,
            "not an id",
        ),
        (
            {"tasks": httpx.Response(200, json={"state": "done"})},
            MissingField,
            "agent poll: .*'status'",
        ),
        ({"tasks": httpx.Response(200, content=b"x" * 2048)}, InvalidSystemResponse, "larger than"),
    ],
)
def test_each_failure_is_the_system_under_test_error_the_harness_retries_or_records(
    answers: dict[str, Any], error: type[SystemUnderTestError], message: str
) -> None:
    executor = _mock_executor(_routes(**answers), max_response_bytes=1024)
    with pytest.raises(error, match=message):
        run(executor.run(CASE))


def test_retryable_failures_say_so_and_bad_answers_do_not() -> None:
    assert SystemHTTPError(503, "x").retryable
    assert SystemUnreachable("x").retryable
    assert not InvalidSystemResponse("x").retryable


def test_ids_from_answers_are_percent_encoded_in_urls() -> None:
    seen: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.raw_path.decode())
        return httpx.Response(
            200, json={"session_id": "../admin?x=1", "task_id": "t/1", "status": "done"}
        )

    run(_mock_executor(handle).run(CASE))
    assert seen == ["/sessions", "/s/..%2Fadmin%3Fx%3D1/q", "/tasks/t%2F1"]


def test_headers_are_read_from_the_environment_and_sent() -> None:
    seen: list[str | None] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("authorization"))
        return httpx.Response(200, json={"answer": "ok"})

    config = AgentHttpConfig.model_validate(
        {
            "base_url": "http://agent.test",
            "headers": {"Authorization": "env:AGENT_TOKEN"},
            "submit": {"url": "{base_url}/ask", "body": {"q": "{query}"}},
        }
    )
    executor = HttpStepsExecutor(
        config, transport=httpx.MockTransport(handle), environ={"AGENT_TOKEN": "Bearer s3cret"}
    )
    output = run(executor.run(CASE))
    assert seen == ["Bearer s3cret"]
    assert output.trajectory is not None
    assert output.trajectory.final_answer == "ok"
    assert "s3cret" not in json.dumps(executor.describe())
    with pytest.raises(InputError, match="AGENT_TOKEN is not set"):
        HttpStepsExecutor(config, environ={})


def test_a_case_lacking_an_input_field_a_template_names_is_refused_before_any_call() -> None:
    calls: list[httpx.Request] = []
    executor = _mock_executor(
        lambda r: calls.append(r) or httpx.Response(200, json={}),  # type: ignore[func-returns-value]
        submit={"url": "{base_url}/q", "body": {"p": "{input.profile}"}, "task_id": "task_id"},
        session=None,
    )
    with pytest.raises(InputError, match=r"names \{input.profile\}, which the case lacks"):
        run(AgentSystem(executor).answer(CASE))
    assert calls == []
    executor.validate_input({"query": "q", "profile": "p"})


# --- the agent file ------------------------------------------------------------------


def test_the_documented_example_agent_file_loads() -> None:
    config = load_agent_config(ROOT / "docs" / "examples" / "agent-rest.toml")
    assert [label for label, _ in config.steps()] == ["session", "submit", "poll", "read"]
    assert config.result.kinds == {"tool": "tool_call", "llm": "llm_call", "rag": "retrieval"}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("[other]\nx = 1\n", "unknown table 'other'"),
        ('[agent.read]\nurl = "{base_url}/{turn}"\n', "read: unknown placeholder {turn}"),
        (
            '[agent.result.retrieval]\nquery = "q"\nwho = "w"\n',
            "'who' is not a field of a retrieval",
        ),
    ],
)
def test_a_bad_agent_file_is_an_input_error(tmp_path: Path, extra: str, message: str) -> None:
    path = _config(tmp_path, extra=extra)
    with pytest.raises(InputError) as caught:
        load_agent_config(path)
    assert message in str(caught.value)
    assert str(path) in str(caught.value)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"base_url": "ftp://x"}, "base_url must be http(s)://host"),
        ({"headers": {"Authorization": "Bearer literal"}}, "write 'env:VARIABLE'"),
        ({"submit": {"url": "{base_url}/t/{task_id}"}}, "needs submit.task_id before it"),
        ({"submit": {"url": "{base_url}/{session_id}"}}, "needs a session step before it"),
        ({"poll": {"url": "{base_url}/x", "interval": 0}}, "greater than 0"),
        ({"submit": {"url": "{base_url}", "verb": "POST"}}, "submit.verb"),
    ],
)
def test_a_bad_agent_table_names_the_key(fields: dict[str, Any], message: str) -> None:
    document = {"base_url": "http://a", "submit": {"url": "{base_url}/q"}, **fields}
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        AgentHttpConfig.model_validate(document)


def test_an_agent_file_error_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "agent.toml"
    path.write_text('[agent]\nbase_url = "http://a"\n\n[agent.submit]\nurl = "x"\nverb = 1\n')
    with pytest.raises(InputError, match=rf"{path}:6: field 'agent.submit.verb'"):
        load_agent_config(path)
