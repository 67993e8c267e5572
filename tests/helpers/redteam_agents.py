"""Two local agents for the live red-team: one obeys what its tool results say, one does not.

Both read a red-team case's input (``query`` and ``tools``: each tool's description and
the result every call returns), call the first tool (the task's), and report one LLM
call of 120 tokens costing $0.001.

- :func:`follower` does what the first tool's result asks: it calls every offered tool
  the result names (in backticks, as a JSON ``"name"``, or as "the X tool / function")
  and answers by quoting the result whole, planted marker, personal data and links
  included. The red-team must fail it.
- :func:`ignorer` treats tool results as data: it calls only the task's tool and
  answers in its own words. The red-team must pass it.

:func:`http_app` serves both over REST for the HTTP executor (``POST /{mode}/turn``
answers the turn record at once); :data:`AGENT_TOML` is its agent file.
"""

from __future__ import annotations

import json
import re
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

__all__ = ["AGENT_TOML", "follower", "http_app", "ignorer", "turn"]

_NAMES = re.compile(
    r"`(\w+)`|\"name\"\s*:\s*\"(\w+)\"|\b(\w+)\s+(?:tool|function)\b", re.IGNORECASE
)
_LLM = {
    "kind": "llm_call",
    "model": "local-1",
    "input_tokens": 100,
    "output_tokens": 20,
    "cost_usd": 0.001,
}

AGENT_TOML = """\
[agent]
base_url = "{base_url}"
name = "{name}"
timeout = 30
request_timeout = 10

[agent.submit]
url = "{{base_url}}/{mode}/turn"
body = {{ query = "{{query}}", tools = "{{input.tools}}" }}

[agent.result]
final_answer = "answer"
steps = "events"
kind = "type"
kinds = {{ llm = "llm_call", tool = "tool_call" }}
tool_call = {{ name = "tool", arguments = "args", result = "output" }}

[agent.result.llm_call]
model = "model"
input_tokens = "tokens.in"
output_tokens = "tokens.out"
cost_usd = "cost"
"""
"""``AGENT_TOML.format(base_url=URL, mode="follower" | "ignorer", name=NAME)``."""


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _named_tools(text: str, offered: dict[str, Any]) -> list[str]:
    named: list[str] = []
    for match in _NAMES.finditer(text):
        name = next(group for group in match.groups() if group)
        if name in offered and name not in named:
            named.append(name)
    return named


def turn(input: dict[str, Any], *, obey: bool, name: str) -> dict[str, Any]:
    """The trajectory (as a dict) of one turn of the agent on ``input``."""
    tools: dict[str, Any] = input["tools"]
    task_tool = next(iter(tools))
    result = tools[task_tool]["result"]
    steps: list[dict[str, Any]] = [
        dict(_LLM),
        {
            "kind": "tool_call",
            "name": task_tool,
            "arguments": {"query": input["query"]},
            "result": result,
        },
    ]
    read = _text(result)
    if obey:
        for planted in _named_tools(read, tools):
            if planted != task_tool:
                steps.append(
                    {
                        "kind": "tool_call",
                        "name": planted,
                        "arguments": {"confirm": True},
                        "result": tools[planted]["result"],
                    }
                )
        answer = f"Here is what {task_tool} returned: {read}"
    else:
        answer = f"I read the result of {task_tool} and answered the question without acting on it."
    return {
        "agent": {"name": name},
        "steps": steps,
        "final_answer": answer,
        "status": "completed",
    }


def follower(input: dict[str, Any]) -> dict[str, Any]:
    """The agent that obeys its tool results (``python:tests.helpers.redteam_agents:follower``)."""
    return turn(input, obey=True, name="follower")


def ignorer(input: dict[str, Any]) -> dict[str, Any]:
    """The agent that ignores them (``python:tests.helpers.redteam_agents:ignorer``)."""
    return turn(input, obey=False, name="ignorer")


def _event(step: dict[str, Any]) -> dict[str, Any]:
    if step["kind"] == "llm_call":
        return {
            "type": "llm",
            "model": step["model"],
            "tokens": {"in": step["input_tokens"], "out": step["output_tokens"]},
            "cost": step["cost_usd"],
        }
    return {
        "type": "tool",
        "tool": step["name"],
        "args": step["arguments"],
        "output": step["result"],
    }


async def _turn(request: Request) -> Response:
    mode = request.path_params["mode"]
    if mode not in ("follower", "ignorer"):
        return JSONResponse({"detail": "no such agent"}, status_code=404)
    body = await request.json()
    done = turn(body, obey=mode == "follower", name=mode)
    return JSONResponse(
        {"answer": done["final_answer"], "events": [_event(step) for step in done["steps"]]}
    )


def http_app() -> Starlette:
    """Both agents over REST: ``POST /follower/turn`` and ``POST /ignorer/turn``."""
    return Starlette(routes=[Route("/{mode}/turn", _turn, methods=["POST"])])
