"""What a decomposed judge reads of an item: each part, or None when the item lacks it.

A judge abstains when what it reads is absent (no retrieval for ``groundedness``, no
reference for ``answer_correctness``); these functions say what is there. Texts are
clipped here, before any prompt is built, so untrusted text stays bounded.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import JsonValue

from arbiter.contract import Example, Output, Trajectory
from arbiter.contract.trajectory import Handoff, Retrieval, ToolCall

__all__ = [
    "MAX_PART_CHARS",
    "answer",
    "chunks",
    "plan",
    "question",
    "reference",
    "tool_calls",
    "tool_results",
    "trusted_scope",
]

MAX_PART_CHARS = 8_000
"""Characters kept of any one part (an answer, a chunk, a tool result)."""
_MAX_PARTS = 50
"""Chunks, tool results or tool calls shown to a judge."""
_QUESTION_KEYS = ("query", "question", "input", "prompt", "task")


def clip(text: str, limit: int = MAX_PART_CHARS) -> str:
    """The text cut to ``limit`` characters, saying so when it was."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[... {len(text) - limit:,} more characters not shown]"


def _assertions(example: Example) -> Mapping[str, Any]:
    return example.expected if isinstance(example.expected, dict) else {}


def answer(output: Output) -> str | None:
    """The answer under judgement: the trajectory's final answer, else the output's text."""
    trajectory = output.trajectory
    text = trajectory.final_answer if trajectory is not None else None
    if text is None or not text.strip():
        text = output.answer_text
    return clip(text) if text is not None and text.strip() else None


def question(example: Example, output: Output) -> str | None:
    """What the agent was asked: the example's question, else the run's first user turn."""
    for key in _QUESTION_KEYS:
        value = example.input.get(key)
        if isinstance(value, str) and value.strip():
            return clip(value)
    if output.trajectory is not None:
        for call in output.trajectory.llm_calls:
            for message in call.input_messages:
                if message.role == "user" and message.content and message.content.strip():
                    return clip(message.content)
    return None


def _steps(output: Output) -> list[Any]:
    trajectory: Trajectory | None = output.trajectory
    return list(trajectory.walk()) if trajectory is not None else []


def chunks(output: Output) -> list[str]:
    """The texts of the retrieved chunks, in order (a sub-agent's included)."""
    found = [
        clip(chunk.text)
        for step in _steps(output)
        if isinstance(step, Retrieval)
        for chunk in step.chunks
        if chunk.text and chunk.text.strip()
    ]
    return found[:_MAX_PARTS]


def _json(value: JsonValue) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def tool_results(output: Output) -> list[str]:
    """What the tools returned (and sub-agents answered), as text, in order."""
    found: list[str] = []
    for step in _steps(output):
        if isinstance(step, ToolCall) and step.result is not None:
            found.append(clip(f"{step.name}: {_json(step.result)}"))
        elif isinstance(step, Handoff) and step.trajectory.final_answer:
            found.append(clip(f"sub-agent: {step.trajectory.final_answer}"))
    return found[:_MAX_PARTS]


def tool_calls(output: Output) -> list[str]:
    """Each tool call as ``name(arguments)``, with its error when it failed."""
    found = []
    for step in _steps(output):
        if isinstance(step, ToolCall):
            line = f"{step.name}({_json(step.arguments)})"
            if step.error:
                line += f" -> error: {step.error}"
            found.append(clip(line, 2_000))
    return found[:_MAX_PARTS]


def plan(output: Output) -> str | None:
    """The run's plan: ``metadata["plan"]`` when it recorded one, else its step outline."""
    trajectory = output.trajectory
    if trajectory is None:
        return None
    declared = trajectory.metadata.get("plan")
    if declared is not None and declared != "":
        return clip(_json(declared))
    outline = []
    for step in trajectory.walk():
        if isinstance(step, ToolCall):
            outline.append(f"tool {step.name}")
        elif isinstance(step, Retrieval):
            outline.append(f"retrieve {step.query or ''}".strip())
        elif isinstance(step, Handoff):
            outline.append(f"hand off to {step.trajectory.agent.name or 'a sub-agent'}")
    if not outline:
        return None
    return clip("\n".join(f"{n}. {s}" for n, s in enumerate(outline[: _MAX_PARTS * 4], 1)))


def trusted_scope(example: Example) -> str | None:
    """The declared trusted scope: assertion ``scope_description``, else ``scope`` names."""
    declared = _assertions(example)
    described = declared.get("scope_description")
    if isinstance(described, str) and described.strip():
        return clip(described)
    names = declared.get("scope")
    if isinstance(names, list) and names and all(isinstance(n, str) for n in names):
        return clip("Trusted data sources: " + ", ".join(names))
    return None


def reference(example: Example) -> str | None:
    """The reference answer: assertion ``reference_answer``, a text ``expected``, or the label."""
    declared = _assertions(example).get("reference_answer")
    if isinstance(declared, str) and declared.strip():
        return clip(declared)
    if isinstance(example.expected, str) and example.expected.strip():
        return clip(example.expected)
    if example.expected_label is not None and example.expected_label.strip():
        return clip(example.expected_label)
    return None
