"""A local stand-in of a REST agent: sessions, queries, tasks polled until done.

The contract is the reference's REST executor's (Uderia §6.1): ``POST /sessions`` ->
``{session_id}``; ``POST /sessions/{id}/query`` with ``{"query": ...}`` -> ``{task_id}``;
``GET /tasks/{id}`` -> ``{status: running | done | failed, result: {turn record}}``. A
task answers ``running`` ``running_polls`` times, then its result: an answer, events
(LLM calls with tokens and cost, tool calls, a status event an executor skips) and the
turn's totals. Answers are deterministic: :func:`turn_for` decides them from the query
(a weather query calls ``get_weather``, a price query ``get_quote``, a query holding
``fail`` fails), so a test knows what each case must score.

With ``hold_after=n``, tasks after the n-th stay ``running`` until :meth:`release`: a
test can stop a run (SIGKILL it) with exactly n cases done, waiting on the store, not on
time. Serve :attr:`AgentStandIn.app` with ``tests.integration.serving.serve_asgi``.
"""

from __future__ import annotations

import threading
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from arbiter.contract import Example, Output, Score
from arbiter.scoring.base import ScoreFunction
from arbiter.scoring.registry import ScorerRegistry
from arbiter.service.scoring import scorer_registry
from arbiter.trajectories.scorers.common import assertions, trajectory_scorer

__all__ = ["AGENT_TOML", "AgentStandIn", "standin_registry", "turn_for"]

AGENT_TOML = """\
[agent]
base_url = "{base_url}"
name = "standin"
timeout = {timeout}
request_timeout = 10

[agent.session]
url = "{{base_url}}/sessions"
session_id = "session_id"

[agent.submit]
url = "{{base_url}}/sessions/{{session_id}}/query"
body = {{ query = "{{query}}", case = "{{case_id}}" }}
task_id = "task_id"

[agent.poll]
url = "{{base_url}}/tasks/{{task_id}}"
status = "status"
done = ["done"]
failed = ["failed"]
error = "error"
interval = {interval}

[agent.result]
path = "result"
final_answer = "answer"
id = "turn_id"
steps = "events"
kind = "type"
kinds = {{ llm = "llm_call", tool = "tool_call" }}
tool_call = {{ name = "tool", arguments = "args", result = "output", call_id = "call_id" }}
metadata = {{ cost_usd = "cost_usd", tokens = "tokens" }}

[agent.result.llm_call]
model = "model"
input_tokens = "tokens.in"
output_tokens = "tokens.out"
cost_usd = "cost"
"""
"""The stand-in's agent file: ``AGENT_TOML.format(base_url=URL, timeout=30, interval=0.01)``."""


def _last_word(query: str) -> str:
    words = [w.strip("?.!,") for w in query.split()]
    return next((w for w in reversed(words) if w), "nowhere")


def turn_for(query: str, task_id: str) -> tuple[str, dict[str, Any]]:
    """The status (``done`` or ``failed``) and the turn record the stand-in answers."""
    lowered = query.lower()
    if "fail" in lowered:
        return "failed", {"turn_id": task_id, "answer": None, "events": []}
    llm = {"type": "llm", "model": "standin-1", "tokens": {"in": 20, "out": 5}, "cost": 0.001}
    events: list[dict[str, Any]] = [llm]
    if "weather" in lowered:
        city = _last_word(query).capitalize()
        call = {"city": city}
        events.append(
            {
                "type": "tool",
                "tool": "get_weather",
                "call_id": "c1",
                "args": call,
                "output": "sunny",
            }
        )
        answer = f"It is sunny in {city}."
    elif "price" in lowered:
        symbol = _last_word(query).upper()
        events.append(
            {
                "type": "tool",
                "tool": "get_quote",
                "call_id": "c1",
                "args": {"symbol": symbol},
                "output": {"price": 100},
            }
        )
        answer = f"{symbol} trades at 100."
    else:
        answer = f"You asked: {query}"
    if len(events) > 1:
        events.append({**llm, "tokens": {"in": 30, "out": 10}})
    events.append({"type": "status", "text": "composing"})  # no step: an executor skips it
    record = {
        "turn_id": task_id,
        "answer": answer,
        "events": events,
        "tokens": {"in": 50, "out": 15},
        "cost_usd": 0.002,
    }
    return "done", record


class AgentStandIn:
    """The stand-in's state and its Starlette app.

    Args:
        running_polls: Polls of a task answered ``running`` before its result.
        hold_after: Tasks after this many stay ``running`` until :meth:`release`.
    """

    def __init__(self, *, running_polls: int = 1, hold_after: int | None = None) -> None:
        self.running_polls = running_polls
        self.hold_after = hold_after
        self._lock = threading.Lock()
        self._released = threading.Event()
        self.sessions: set[str] = set()
        self.tasks: dict[str, dict[str, Any]] = {}
        self.queries: list[dict[str, Any]] = []
        """Every body submitted, in order."""
        self.app = Starlette(
            routes=[
                Route("/sessions", self._create_session, methods=["POST"]),
                Route("/sessions/{session_id}/query", self._submit, methods=["POST"]),
                Route("/tasks/{task_id}", self._task, methods=["GET"]),
            ]
        )

    def release(self) -> None:
        """Let held tasks finish at their next poll."""
        self._released.set()

    @property
    def polls(self) -> int:
        """Polls answered so far."""
        with self._lock:
            return sum(task["polls"] for task in self.tasks.values())

    async def _create_session(self, request: Request) -> Response:
        with self._lock:
            session_id = f"s{len(self.sessions) + 1}"
            self.sessions.add(session_id)
        return JSONResponse({"session_id": session_id})

    async def _submit(self, request: Request) -> Response:
        session_id = request.path_params["session_id"]
        body = await request.json()
        with self._lock:
            if session_id not in self.sessions:
                return JSONResponse({"detail": f"no session {session_id}"}, status_code=404)
            self.queries.append(body)
            number = len(self.tasks) + 1
            task_id = f"t{number}"
            held = self.hold_after is not None and number > self.hold_after
            self.tasks[task_id] = {"query": body["query"], "polls": 0, "held": held}
        return JSONResponse({"task_id": task_id})

    async def _task(self, request: Request) -> Response:
        task_id = request.path_params["task_id"]
        with self._lock:
            task = self.tasks.get(task_id)
            if task is None:
                return JSONResponse({"detail": f"no task {task_id}"}, status_code=404)
            task["polls"] += 1
            waiting = task["held"] and not self._released.is_set()
            if waiting or task["polls"] <= self.running_polls:
                return JSONResponse({"status": "running"})
        status, record = turn_for(task["query"], task_id)
        if status == "failed":
            return JSONResponse({"status": "failed", "error": "the agent gave up"})
        return JSONResponse({"status": "done", "result": record})


@trajectory_scorer(name="standin_completed", dimension="outcome", moment="run")
def standin_completed() -> ScoreFunction:
    """The run completed (a test's own scorer: the suite does not wait on the real ones)."""

    def score(example: Example, output: Output) -> Score:
        assert output.trajectory is not None
        return Score(
            value=1.0 if output.trajectory.status == "completed" else 0.0,
            passed=output.trajectory.status == "completed",
        )

    return score


@trajectory_scorer(name="standin_tools", dimension="tools", moment="act")
def standin_tools() -> ScoreFunction:
    """The run called every tool of the case's ``require_tools_subset``; abstains without."""

    def score(example: Example, output: Output) -> Score:
        assert output.trajectory is not None
        required = assertions(example).get("require_tools_subset")
        if not isinstance(required, list):
            return Score(explanation="the case requires no tool")
        called = {call.name for call in output.trajectory.tool_calls}
        missing = [name for name in required if name not in called]
        return Score(value=1.0 - len(missing) / max(len(required), 1), passed=not missing)

    return score


def standin_registry() -> ScorerRegistry:
    """The service's registry plus :func:`standin_completed` and :func:`standin_tools`."""
    registry = scorer_registry(plugins=False)
    registry.register_scorer(standin_completed)
    registry.register_scorer(standin_tools)
    return registry
