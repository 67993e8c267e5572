"""Agents for the agent pages' tests: what they do is decided by the case, so a test knows.

:func:`agent` is a Python agent executor (``python:tests.server.pages.agents_seed:agent``):
the case's input names the agent (``agent``) and what it does (``plan``):

- ``weather``: a model call, two tool calls that overlap in time (parallel), a last
  model call, an answer; ``weather-forbidden`` also calls ``delete_account``, which the
  case forbids (so the run fails);
- ``coordinator``: two hand-offs to sub-agents running side by side;
- ``untimed``: tool calls with no times at all;
- ``flow``: a flow run of three nodes.

:func:`seed_agents` runs a case file of them through the real service
(:func:`~arbiter.service.agents_run.run_agent_cases`) with the real trajectory scorers
and one model-kind stand-in judge (:func:`seed_groundedness`, no model called), so the
store holds agent runs exactly as ``arbiter agent run`` stores them. The names passed
in ``names`` replace the agents' and tools' names (the hostile test uses that).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from arbiter.contract import Example, FlowRun, Output, Report, Score, Trajectory
from arbiter.scoring.base import ScoreFunction, scorer
from arbiter.scoring.registry import ScorerRegistry
from arbiter.service.scoring import scorer_registry
from arbiter.store import Store

__all__ = [
    "AGENT",
    "QUIET",
    "SCORERS",
    "agent",
    "cases",
    "seed_agents",
    "seed_live",
    "seed_registry",
]

AGENT = "python:tests.server.pages.agents_seed:agent"
"""The executor spec of :func:`agent`."""

SCORERS = [
    "completed",
    "answer_present",
    "required_tools",
    "forbidden_tools",
    "tool_success_rate",
    "parallel_efficiency",
    "latency",
    "cost",
    "must_contain",
    "expert_success",
    "flow_complete",
    "required_nodes",
    "seed_groundedness",
]
"""The scorers the seeded runs use."""

_T0 = datetime(2026, 11, 30, 9, 0, 0, tzinfo=UTC)


def _at(ms: float) -> str:
    return (_T0 + timedelta(milliseconds=ms)).isoformat()


def _step(kind: str, start: float, end: float, **fields: Any) -> dict[str, Any]:
    return {"kind": kind, "started_at": _at(start), "ended_at": _at(end), **fields}


def _weather(input: dict[str, Any]) -> dict[str, Any]:
    tool = input.get("tool", "get_weather")
    city = input.get("city", "Paris")
    steps = [
        _step(
            "llm_call",
            0,
            420,
            model="gpt-4o-mini",
            input_tokens=310,
            output_tokens=42,
            cost_usd=0.0021,
            input_messages=[
                {"role": "system", "content": "You are a weather assistant: give temperatures."},
                {"role": "user", "content": input.get("query") or f"Weather in {city}?"},
            ],
            output_messages=[{"role": "assistant", "content": "I'll look both cities up."}],
        ),
        _step("tool_call", 450, 1250, name=tool, arguments={"city": city}, result={"temp_c": 18}),
        _step(
            "tool_call", 470, 1100, name=tool, arguments={"city": "London"}, result={"temp_c": 14}
        ),
    ]
    if input.get("plan") == "weather-forbidden":
        steps.append(
            _step(
                "tool_call",
                1300,
                1500,
                name="delete_account",
                arguments={"user": "42"},
                error="PermissionError: not allowed",
            )
        )
    steps.append(
        _step("llm_call", 1560, 2300, model="gpt-4o-mini", input_tokens=520, output_tokens=64)
    )
    return {
        "id": input.get("run_id"),
        "agent": {"name": input["agent"], "agent_class": "tool_enabled"},
        "steps": steps,
        "final_answer": input.get("answer", f"It is 18°C in {city} and 14°C in London."),
        "status": "completed",
        "started_at": _at(0),
        "ended_at": _at(2400),
        "source": {"format": "python"},
    }


def _expert(name: str, start: float, answer: str) -> dict[str, Any]:
    return _step(
        "handoff",
        start,
        start + 1500,
        trajectory={
            "agent": {"name": name, "agent_class": "tool_enabled"},
            "steps": [
                _step("tool_call", start + 50, start + 900, name="search", arguments={"q": name}),
                _step("llm_call", start + 950, start + 1450, model="claude-haiku"),
            ],
            "final_answer": answer,
            "status": "completed",
        },
    )


def _coordinator(input: dict[str, Any]) -> dict[str, Any]:
    return {
        "agent": {"name": input["agent"], "agent_class": "genie"},
        "steps": [
            _step("llm_call", 0, 300, model="gpt-4o", input_tokens=800, output_tokens=90),
            _expert("fact-checker", 320, "The figures hold."),
            _expert("summariser", 340, "Three points."),
            _step("llm_call", 1900, 2500, model="gpt-4o", input_tokens=1400, output_tokens=200),
        ],
        "final_answer": "Summary: three points, the figures hold.",
        "status": "completed",
        "started_at": _at(0),
        "ended_at": _at(2600),
    }


def _untimed(input: dict[str, Any]) -> dict[str, Any]:
    return {
        "agent": {"name": input["agent"], "agent_class": "tool_enabled"},
        "steps": [
            {"kind": "tool_call", "name": "lookup", "arguments": {"id": 1}},
            {"kind": "tool_call", "name": "lookup", "arguments": {"id": 2}, "error": "timeout"},
            {"kind": "tool_call", "name": "lookup", "arguments": {"id": 2}},
        ],
        "final_answer": "found it",
        "status": "completed",
    }


def _flow(input: dict[str, Any]) -> dict[str, Any]:
    nodes = [
        {"id": "n1", "name": "intake", "type": "agent", "status": "completed"},
        {"id": "n2", "name": "check-balance", "type": "tool", "status": "completed"},
        {"id": "n3", "name": "reply", "type": "agent", "status": input.get("last", "completed")},
    ]
    for i, node in enumerate(nodes):
        node.update(started_at=_at(i * 400), ended_at=_at(i * 400 + 350), cost_usd=0.001)
    return {
        "agent": {"name": input["agent"], "agent_class": "flow"},
        "nodes": nodes,
        "status": input.get("last", "completed"),
        "output": "Your balance is 12 EUR.",
    }


def agent(input: dict[str, Any]) -> Trajectory | FlowRun:
    """The run the case's ``plan`` describes (see the module docstring)."""
    plan = input.get("plan", "weather")
    if plan == "flow":
        return FlowRun.model_validate(_flow(input))
    build = {"coordinator": _coordinator, "untimed": _untimed}.get(plan, _weather)
    return Trajectory.model_validate(build(input))


@scorer(name="seed_groundedness", kind="model", dimension="groundedness", gating=False)
def seed_groundedness() -> ScoreFunction:
    """A stand-in judge: passes an answer that names a number, fails one that does not."""

    def score(example: Example, output: Output) -> Score:
        answer = output.answer_text or ""
        grounded = any(ch.isdigit() for ch in answer)
        return Score(
            value=1.0 if grounded else 0.0,
            passed=grounded,
            explanation="the answer cites a figure" if grounded else "no figure backs the answer",
        )

    return score


def seed_registry() -> ScorerRegistry:
    """The service's registry plus the stand-in judge."""
    registry = scorer_registry(plugins=False)
    registry.register_scorer(seed_groundedness)
    return registry


def cases(names: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """The case file's rows; ``names`` maps an agent or tool name to another."""
    n = names or {}
    weather, coordinator = n.get("weather", "weather-bot"), n.get("coordinator", "research-desk")
    untimed, flow = n.get("untimed", "lookup-agent"), n.get("flow", "billing-flow")
    tool, prefix = n.get("tool", "get_weather"), n.get("case", "")
    rows: list[dict[str, Any]] = []
    for i in range(6):
        plan = "weather-forbidden" if i in (1, 4) else "weather"
        rows.append(
            {
                "id": f"{prefix}weather-{i}",
                "input": {"query": "weather?", "agent": weather, "plan": plan, "tool": tool}
                | ({"answer": n["answer"], "city": n["answer"]} if "answer" in n else {}),
                "agent_class": "tool_enabled",
                "assertions": {"require_tools_subset": [tool], "must_not_call": ["delete_account"]},
            }
        )
    rows += [
        {
            "id": f"desk-{i}",
            "input": {"query": "brief me", "agent": coordinator, "plan": "coordinator"},
            "agent_class": "genie",
            "assertions": {"must_contain": ["figures"] if i else ["nonexistent phrase"]},
        }
        for i in range(3)
    ]
    rows.append(
        {
            "id": "lookup-1",
            "input": {"query": "find", "agent": untimed, "plan": "untimed"},
            "agent_class": "tool_enabled",
        }
    )
    rows += [
        {
            "id": f"flow-{i}",
            "input": {"query": "balance", "agent": flow, "plan": "flow"}
            | ({"last": "error"} if i == 2 else {}),
            "agent_class": "flow",
            "assertions": {"require_nodes": ["intake", "reply"]},
        }
        for i in range(3)
    ]
    return rows


QUIET = "quiet-agent"
"""An agent whose only check abstains on its one run: "not evaluated"."""


async def seed_live(store: Store, names: dict[str, str] | None = None) -> list[str]:
    """Store two weather runs (one calling the forbidden tool) and a flow run as stored
    trajectories, the way ``POST /v1/trajectories`` does; their ids."""
    from arbiter.service.trajectories import agent_run_scoring, import_record, score_and_store

    rows = cases(names)
    weather = [r for r in rows if r["input"]["plan"].startswith("weather")][:2]
    flow = [r for r in rows if r["input"]["plan"] == "flow"][:1]
    scoring = agent_run_scoring()
    ids = []
    for row in [*weather, *flow]:
        run = agent(row["input"])
        imported = import_record(run.model_dump(mode="json"))
        stored = await score_and_store(
            store, imported, scoring=scoring, assertions=row.get("assertions"), input=row["input"]
        )
        ids += [s.id for s in stored]
    return ids


async def seed_agents(
    store: Store,
    folder: Path,
    *,
    names: dict[str, str] | None = None,
    name: str = "agents",
    live: bool = True,
) -> Report:
    """Run :func:`cases` through :func:`agent` into ``store``, then one run of
    :data:`QUIET` whose only scorer abstains, then (``live``) :func:`seed_live`; the
    first run's report."""
    from arbiter.service.agents_run import run_agent_cases

    path = folder / f"{name}.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in cases(names)), encoding="utf-8")
    report = await run_agent_cases(
        path, executor=AGENT, store=store, scorers=SCORERS, registry=seed_registry(), name=name
    )
    quiet = folder / f"{name}-quiet.jsonl"
    row = {"id": "quiet-1", "input": {"query": "hi", "agent": QUIET, "plan": "untimed"}}
    quiet.write_text(json.dumps(row) + "\n", encoding="utf-8")
    await run_agent_cases(quiet, executor=AGENT, store=store, scorers=["must_contain"])
    if live:
        await seed_live(store, names)
    return report
