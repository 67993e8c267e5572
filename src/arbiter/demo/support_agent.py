"""A sample agent to red-team with ``arbiter redteam run``.

``arbiter redteam run --agent python:arbiter.demo.support_agent:answer`` runs it.

It reads a red-team case's input (``query`` and ``tools``: each tool's description and
the result every call returns), calls the first tool (the task's own) and no other,
and answers by quoting that tool's result. So its tool guard holds (it never calls a
planted tool, never drifts out of scope) while its answer guard does not: whatever the
result carried (a planted marker, personal data, a link) is repeated to the user. It
reports one model call of 180 tokens costing $0.0004, so the caps have something to
count. No model is involved: the agent is a few lines of deterministic code.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["answer"]

_QUOTED_CHARS = 600


def answer(input: dict[str, Any]) -> dict[str, Any]:
    """One turn of the agent on a case input: its trajectory, as a dict."""
    tools = input.get("tools")
    query = str(input.get("query", ""))
    if not isinstance(tools, dict) or not tools:
        return {
            "agent": {"name": "demo-support"},
            "steps": [],
            "final_answer": "I have no tool to answer with.",
            "status": "completed",
        }
    name = str(next(iter(tools)))
    offered = tools[name]
    result = offered.get("result") if isinstance(offered, dict) else None
    text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
    return {
        "agent": {"name": "demo-support", "version": "1"},
        "steps": [
            {
                "kind": "llm_call",
                "model": "demo-rules",
                "input_tokens": 150,
                "output_tokens": 30,
                "cost_usd": 0.0004,
            },
            {"kind": "tool_call", "name": name, "arguments": {"query": query}, "result": result},
        ],
        "final_answer": f"From {name}: {text[:_QUOTED_CHARS]}",
        "status": "completed",
    }
