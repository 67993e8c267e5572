"""Agents of the engine tests (``python:`` executors), loaded by path in Ray's workers."""

from __future__ import annotations

import time
from typing import Any


def logged(input: dict[str, Any]) -> dict[str, Any]:
    """One run that appends when it started (``time.monotonic``) to ``input['log']``."""
    with open(input["log"], "a", encoding="utf-8") as log:
        log.write(f"{time.monotonic()}\n")
    return {
        "agent": {"name": "logged", "agent_class": "tool_enabled"},
        "steps": [{"kind": "llm_call", "model": "rules", "input_messages": []}],
        "final_answer": "done",
        "status": "completed",
    }
