"""The steps of one GenAI run, span by span: what each span is and the step it makes.

Part of the OTLP importer (:mod:`~arbiter.trajectories.otlp`), which documents the mapping.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from typing import Any

from arbiter.contract.trajectory import MAX_NAME_CHARS, MAX_STEPS
from arbiter.trajectories.otlp_messages import (
    RequestedToolCall,
    clip,
    decode_json_text,
    model_messages,
)
from arbiter.trajectories.span_model import LogRecord, Span

__all__ = [
    "MODEL_OPERATIONS",
    "RunSteps",
    "last_assistant_text",
    "name_text",
    "operation",
    "retrieval_step",
    "span_times",
    "tool_call_step",
]

_OPERATION = "gen_ai.operation.name"
MODEL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content", "embeddings"})
"""The operations that are a call of a model."""
_KNOWN = MODEL_OPERATIONS | {"invoke_agent", "execute_tool", "retrieval", "create_agent"}


def operation(span: Span) -> str | None:
    """What a span is: its ``gen_ai.operation.name``, else what its name or attributes say."""
    value = span.attributes.get(_OPERATION)
    if isinstance(value, str) and value:
        return value.lower()
    first = span.name.split(" ", 1)[0].lower()
    if first in _KNOWN:
        return first
    attributes = span.attributes
    if "gen_ai.tool.name" in attributes:
        return "execute_tool"
    if "gen_ai.request.model" in attributes or "gen_ai.system" in attributes:
        return "chat"
    return None


class RunSteps:
    """The steps of one run as they are found, and what the model calls asked for."""

    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []
        self.span_ids: list[str] = []
        self.conversation_id: str | None = None
        self.last_answer: str | None = None
        self._requested: list[tuple[int, RequestedToolCall]] = []  # (after step i, call)
        self._results: dict[str, Any] = {}  # call id -> result, from later tool messages

    def add(self, span: Span, step: dict[str, Any]) -> None:
        """Append the step document made of ``span``."""
        self.steps.append(step)
        self.span_ids.append(span.span_id)
        if self.conversation_id is None:
            self.conversation_id = name_text(span.attributes.get("gen_ai.conversation.id"))

    def model_call(self, span: Span, logs: Sequence[LogRecord]) -> None:
        """Append the ``llm_call`` of a model span, noting the tool calls it requested."""
        attributes = span.attributes
        messages = model_messages(span, logs)
        model = name_text(attributes.get("gen_ai.response.model")) or name_text(
            attributes.get("gen_ai.request.model")
        )
        step: dict[str, Any] = {
            "kind": "llm_call",
            "id": span.span_id,
            "model": model,
            "input_messages": messages.input[:MAX_STEPS],
            "output_messages": messages.output[:MAX_STEPS],
            "input_tokens": _count(attributes, "input_tokens", "prompt_tokens"),
            "output_tokens": _count(attributes, "output_tokens", "completion_tokens"),
            "cost_usd": _cost(attributes),
            "error": clip(span.error) if span.error else None,
            **span_times(span),
        }
        self.add(span, step)
        self._requested.extend((len(self.steps) - 1, call) for call in messages.tool_calls)
        self._results.update(messages.tool_results)
        if messages.output:
            self.last_answer = last_assistant_text(messages.output)

    def attach_requested_tool_calls(self) -> None:
        """Tool calls only the model's output records become steps after their model call.

        A requested call that an ``execute_tool`` span records (same call id, else the same
        tool name not yet matched) is that span's step, lending it arguments and result
        it lacks.
        """
        spans = [s for s in self.steps if s["kind"] == "tool_call"]
        by_id = {s["call_id"]: s for s in spans if s.get("call_id") is not None}
        unmatched: dict[str, deque[dict[str, Any]]] = {}  # tool spans without a call id
        for s in spans:
            if s.get("call_id") is None:
                unmatched.setdefault(s["name"], deque()).append(s)
        inserts: dict[int, list[dict[str, Any]]] = {}
        for index, call in self._requested:
            recorded = by_id.get(call.call_id) if call.call_id is not None else None
            if recorded is None and unmatched.get(call.name):
                recorded = unmatched[call.name].popleft()
            if recorded is not None:
                if recorded.get("arguments") is None:
                    recorded["arguments"] = call.arguments
                continue
            step: dict[str, Any] = {
                "kind": "tool_call",
                "name": call.name,
                "call_id": call.call_id,
                "arguments": call.arguments,
                "error": call.arguments_error,
            }
            inserts.setdefault(index, []).append(step)
        for step in spans:
            if step.get("result") is None and step.get("call_id") in self._results:
                step["result"] = self._results[step["call_id"]]
        if not inserts:
            return
        merged: list[dict[str, Any]] = []
        for index, step in enumerate(self.steps):
            merged.append(step)
            for requested in inserts.get(index, []):
                requested["result"] = self._results.get(requested["call_id"] or "")
                merged.append(requested)
        self.steps = merged


def tool_call_step(span: Span) -> dict[str, Any]:
    """The ``tool_call`` step document of an ``execute_tool`` span."""
    attributes = span.attributes
    name = name_text(attributes.get("gen_ai.tool.name")) or (
        span.name.removeprefix("execute_tool").strip() or "unknown"
    )
    call_id = attributes.get("gen_ai.tool.call.id")
    error_type = attributes.get("error.type")
    error = span.error or (str(error_type) if error_type not in (None, "") else None)
    return {
        "kind": "tool_call",
        "id": span.span_id,
        "name": clip(name, MAX_NAME_CHARS),
        "call_id": clip(str(call_id), MAX_NAME_CHARS) if call_id not in (None, "") else None,
        "arguments": decode_json_text(attributes.get("gen_ai.tool.call.arguments"))[0],
        "result": decode_json_text(attributes.get("gen_ai.tool.call.result"))[0],
        "error": clip(error) if error else None,
        **span_times(span),
    }


def retrieval_step(span: Span) -> dict[str, Any]:
    """The ``retrieval`` step document of a ``retrieval`` span."""
    attributes = span.attributes
    documents, _ = decode_json_text(attributes.get("gen_ai.retrieval.documents"))
    chunks = []
    for document in documents[:MAX_STEPS] if isinstance(documents, list) else []:
        if not isinstance(document, dict):
            continue
        source, score = document.get("id"), document.get("score")
        text = document.get("content", document.get("text"))
        chunks.append(
            {
                "source": clip(str(source), MAX_NAME_CHARS) if source is not None else None,
                "text": clip(text) if isinstance(text, str) else None,
                "similarity": _finite(score),
            }
        )
    query = attributes.get("gen_ai.retrieval.query.text")
    return {
        "kind": "retrieval",
        "id": span.span_id,
        "query": clip(query) if isinstance(query, str) and query else None,
        "chunks": chunks,
        **span_times(span),
    }


def last_assistant_text(messages: list[dict[str, Any]]) -> str | None:
    """The text of the last assistant message that has any."""
    for message in reversed(messages):
        content = message.get("content")
        if message["role"] == "assistant" and isinstance(content, str) and content.strip():
            return content
    return None


def span_times(span: Span) -> dict[str, Any]:
    """A step document's ``started_at`` and ``ended_at`` from the span's times."""
    return {"started_at": span.started_at, "ended_at": span.ended_at}


def name_text(value: Any) -> str | None:
    """A non-empty string value cut to the contract's name length; None for anything else."""
    return clip(value, MAX_NAME_CHARS) if isinstance(value, str) and value else None


def _count(attributes: dict[str, Any], *names: str) -> int | None:
    """A token count from the first of ``gen_ai.usage.<name>`` that is a count."""
    for name in names:
        value = attributes.get(f"gen_ai.usage.{name}")
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return None


def _cost(attributes: dict[str, Any]) -> float | None:
    cost = _finite(attributes.get("gen_ai.usage.cost"))
    return cost if cost is not None and cost >= 0 else None


def _finite(value: Any) -> float | None:
    """A number as a finite float; None for anything else (an int too large included)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None
