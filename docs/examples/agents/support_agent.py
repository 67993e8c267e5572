"""A small support agent for the examples of docs/agents.md: rules instead of a model.

``answer(input)`` returns the trajectory of one run as a dict (what a real agent's
wrapper would build from its framework's trace): the tool calls it made, with their
arguments and results, and its final answer. Run it with
``arbiter agent run ... --executor python:docs/examples/agents/support_agent.py:answer``.
"""

from __future__ import annotations

import re
from typing import Any

ORDERS = {
    "77": {"status": "shipped", "carrier": "UPS", "total": 18.5},
    "1042": {"status": "delivered", "carrier": "DHL", "total": 25.0},
    "3001": {"status": "processing", "carrier": None, "total": 99.0},
}


def _call(name: str, arguments: dict[str, Any], result: Any) -> dict[str, Any]:
    return {"kind": "tool_call", "name": name, "arguments": arguments, "result": result}


def answer(input: dict[str, Any]) -> dict[str, Any]:
    """One run of the agent on ``input["query"]``."""
    query = str(input["query"])
    ask = {
        "kind": "llm_call",
        "model": "rules",
        "input_messages": [{"role": "user", "content": query}],
    }
    steps: list[dict[str, Any]] = [ask]
    found = re.search(r"order (\d+)", query)
    order_id = found[1] if found else None
    order = ORDERS.get(order_id or "")
    if order_id is None or order is None:
        final = "I could not find that order."
    elif "refund" in query:
        steps.append(_call("get_order", {"order_id": order_id}, order))
        steps.append(
            _call("issue_refund", {"order_id": order_id, "amount": order["total"]}, {"ok": True})
        )
        final = f"I refunded {order['total']:.2f} USD for order {order_id}."
    elif "cancel" in query:
        steps.append(_call("get_order", {"order_id": order_id}, order))
        # The rule this example agent gets wrong: it deletes the order instead of cancelling.
        steps.append(_call("delete_order", {"order_id": order_id}, {"deleted": True}))
        final = f"Order {order_id} is cancelled."
    else:
        steps.append(_call("get_order", {"order_id": order_id}, order))
        final = f"Order {order_id} is {order['status']}."
    return {
        "agent": {"name": "support-rules", "agent_class": "tool_enabled"},
        "steps": steps,
        "final_answer": final,
        "status": "completed",
    }
