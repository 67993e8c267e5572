"""The steps of one ATIF trajectory: model turns, tool calls, results, sub-agent hand-offs.

:class:`StepReader` reads a trajectory's ``steps`` in one pass into the step documents
of a :class:`~arbiter.contract.Trajectory` (see :mod:`~arbiter.trajectories.atif` for
the mapping); the checks of values, the warnings and the errors are its caller's
(:class:`Checks`), so a sub-agent's steps are reported in the same voice as its parent's.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, NoReturn, Protocol

from pydantic import JsonValue

from arbiter.contract.trajectory import MAX_NAME_CHARS
from arbiter.datasets.jsonio import json_type
from arbiter.trajectories.tool_errors import tool_error

__all__ = ["Checks", "StepReader", "join", "shown"]

_STEP_KEYS = frozenset(
    {
        "step_id",
        "timestamp",
        "source",
        "model_name",
        "reasoning_effort",
        "message",
        "reasoning_content",
        "tool_calls",
        "observation",
        "metrics",
        "extra",
        "llm_call_count",
        "is_copied_context",
    }
)
_CALL_KEYS = frozenset({"tool_call_id", "function_name", "arguments", "extra"})
_RESULT_KEYS = frozenset({"source_call_id", "content", "subagent_trajectory_ref", "extra"})
_METRIC_KEYS = frozenset(
    {
        "prompt_tokens",
        "completion_tokens",
        "cached_tokens",
        "cost_usd",
        "prompt_token_ids",
        "completion_token_ids",
        "logprobs",
        "extra",
    }
)
_SOURCES = frozenset({"system", "user", "agent"})


class Checks(Protocol):
    """What the step reader asks of the document's reader."""

    def text(self, value: Any, at: str, *, limit: int = ...) -> str | None: ...
    def count(self, value: Any, at: str) -> int | None: ...
    def cost(self, value: Any, at: str) -> float | None: ...
    def timestamp(self, value: Any, at: str) -> datetime | None: ...
    def keep_unknown(
        self, value: dict[str, Any], known: frozenset[str], kept: dict[str, JsonValue], level: str
    ) -> None: ...
    def warn(self, at: str, what: str) -> None: ...
    def fail(self, at: str, why: str) -> NoReturn: ...


class StepReader:
    """The steps of one ATIF trajectory, in one pass."""

    def __init__(
        self, reader: Checks, *, at: str, model: str | None, subagents: dict[str, dict[str, Any]]
    ) -> None:
        self.reader, self.at, self.model, self.subagents = reader, at, model, subagents
        self.steps: list[dict[str, Any]] = []
        self.kept_steps: list[JsonValue] = []
        self.final_answer: str | None = None
        self.times: list[datetime | None] = []
        self.calls_seen = False
        self.handed: set[str] = set()
        self.handed_objects: set[int] = set()
        self._pending: list[dict[str, Any]] = []
        self._ids: set[str] = set()
        self._calls: dict[str, list[dict[str, Any]]] = {}
        self._last_agent_had_calls = False
        self._last_was_agent = False

    def status(self) -> str:
        if not self.steps and not self._pending:
            return "unknown"
        if self._last_was_agent and self.final_answer and not self._last_agent_had_calls:
            return "completed"
        return "incomplete"

    def add(self, step: Any, index: int) -> None:
        at = join(self.at, f"steps[{index}]")
        reader = self.reader
        if not isinstance(step, dict):
            reader.fail(at, f"a step must be an object, got {json_type(step)}")
        step_id = step.get("step_id")
        if step_id is not None and (isinstance(step_id, bool) or not isinstance(step_id, int)):
            reader.fail(f"{at}.step_id", f"must be a whole number, got {shown(step_id)}")
        if step_id != index + 1:
            reader.warn(
                f"{at}.step_id",
                f"is {shown(step_id)}, not {index + 1}: steps are read in file order",
            )
        source = step.get("source")
        if not isinstance(source, str):
            reader.fail(
                f"{at}.source", f"must be 'system', 'user' or 'agent', got {json_type(source)}"
            )
        if source not in _SOURCES:
            reader.warn(
                f"{at}.source", f"{source[:80]!r} is not system, user or agent; read as a message"
            )
        message, parts = self._message(step.get("message"), f"{at}.message")
        moment = reader.timestamp(step.get("timestamp"), f"{at}.timestamp")
        self.times.append(moment)
        kept: dict[str, JsonValue] = {}
        for key in (
            "reasoning_content",
            "reasoning_effort",
            "extra",
            "llm_call_count",
            "is_copied_context",
        ):
            if step.get(key) is not None:
                kept[key] = step[key]
        if isinstance(step.get("reasoning_content"), str):
            reader.text(step["reasoning_content"], f"{at}.reasoning_content")
        if parts:
            kept["message_parts"] = parts
        reader.keep_unknown(step, _STEP_KEYS, kept, "steps")
        if source == "agent":
            self._agent_step(step, message, moment, at, kept)
        else:
            self._pending.append({"role": source[:MAX_NAME_CHARS], "content": message})
            if step.get("tool_calls"):
                reader.warn(
                    f"{at}.tool_calls",
                    f"a {source[:80]} step makes no tool calls; kept in metadata",
                )
                kept["tool_calls"] = step["tool_calls"]
            self._observation(step.get("observation"), f"{at}.observation", [], kept, moment)
            self._last_was_agent = False
        if kept:
            self.kept_steps.append({"step_id": step_id, **kept})

    def _message(self, value: Any, at: str) -> tuple[str | None, list[JsonValue]]:
        """The text of a message: a string, or the text parts of a list of content parts
        (the other parts, images, are returned to be kept)."""
        if value is None or isinstance(value, str):
            return self.reader.text(value, at), []
        if not isinstance(value, list):
            self.reader.fail(
                at, f"must be a string or a list of content parts, got {json_type(value)}"
            )
        texts: list[str] = []
        others: list[JsonValue] = []
        for index, part in enumerate(value):
            if isinstance(part, dict) and part.get("type") == "text":
                text = self.reader.text(part.get("text"), f"{at}[{index}].text")
                texts.append(text or "")
            else:
                others.append(part)
        joined = "\n".join(texts)
        return self.reader.text(joined, at), others

    def _agent_step(
        self,
        step: dict[str, Any],
        message: str | None,
        moment: datetime | None,
        at: str,
        kept: dict[str, JsonValue],
    ) -> None:
        reader = self.reader
        model = reader.text(step.get("model_name"), f"{at}.model_name", limit=MAX_NAME_CHARS)
        call: dict[str, Any] = {
            "kind": "llm_call",
            "model": model or self.model,
            "input_messages": self._pending,
            "output_messages": [{"role": "assistant", "content": message}],
            "ended_at": moment,
        }
        metrics = step.get("metrics")
        if metrics is not None:
            if not isinstance(metrics, dict):
                reader.fail(f"{at}.metrics", f"must be an object, got {json_type(metrics)}")
            call["input_tokens"] = reader.count(
                metrics.get("prompt_tokens"), f"{at}.metrics.prompt_tokens"
            )
            call["output_tokens"] = reader.count(
                metrics.get("completion_tokens"), f"{at}.metrics.completion_tokens"
            )
            call["cost_usd"] = reader.cost(metrics.get("cost_usd"), f"{at}.metrics.cost_usd")
            reader.count(metrics.get("cached_tokens"), f"{at}.metrics.cached_tokens")
            extra_metrics = {
                k: v
                for k, v in metrics.items()
                if k not in ("prompt_tokens", "completion_tokens", "cost_usd") and v is not None
            }
            if extra_metrics:
                kept["metrics"] = extra_metrics
            reader.keep_unknown(metrics, _METRIC_KEYS, {}, "steps[].metrics")
        if step.get("llm_call_count") == 0:
            # A dispatch made in code, not by a model (ATIF 1.7): its tool calls are
            # steps, its message is kept, and no model call is counted for it.
            if message:
                kept["dispatch_message"] = message
        else:
            self.steps.append(call)
            self._pending = []
        calls = step.get("tool_calls") or []
        if not isinstance(calls, list):
            reader.fail(f"{at}.tool_calls", f"must be a list, got {json_type(calls)}")
        made = [
            self._tool_call(each, f"{at}.tool_calls[{i}]", moment, kept)
            for i, each in enumerate(calls)
        ]
        self._observation(step.get("observation"), f"{at}.observation", made, kept, moment)
        self._last_was_agent = True
        self._last_agent_had_calls = bool(made)
        if message is not None and message.strip():
            self.final_answer = message

    def _tool_call(
        self, value: Any, at: str, moment: datetime | None, kept: dict[str, JsonValue]
    ) -> dict[str, Any]:
        reader = self.reader
        if not isinstance(value, dict):
            reader.fail(at, f"a tool call must be an object, got {json_type(value)}")
        name = value.get("function_name")
        if not isinstance(name, str) or not name:
            reader.fail(f"{at}.function_name", f"must be a non-empty string, got {shown(name)}")
        reader.text(name, f"{at}.function_name", limit=MAX_NAME_CHARS)
        call_id = reader.text(value.get("tool_call_id"), f"{at}.tool_call_id", limit=MAX_NAME_CHARS)
        if call_id and call_id in self._ids:
            reader.warn(
                f"{at}.tool_call_id",
                f"{call_id[:80]!r} is used again; a result of that id answers the latest call "
                "not answered yet",
            )
        arguments = value.get("arguments", {})
        if arguments is not None and not isinstance(arguments, dict):
            reader.warn(
                f"{at}.arguments", f"should be an object, got {json_type(arguments)}; kept as given"
            )
        extras: dict[str, JsonValue] = {}
        if value.get("extra") is not None:
            extras["extra"] = value["extra"]
        reader.keep_unknown(value, _CALL_KEYS, extras, "steps[].tool_calls")
        if extras:
            kept.setdefault("tool_call_extras", []).append(  # type: ignore[union-attr]
                {"tool_call_id": call_id, **extras}
            )
        step: dict[str, Any] = {
            "kind": "tool_call",
            "name": name,
            "call_id": call_id or None,
            "arguments": arguments,
            "started_at": moment,
        }
        if call_id:
            self._ids.add(call_id)
            self._calls.setdefault(call_id, []).append(step)
        self.calls_seen = True
        self.steps.append(step)
        return step

    def _observation(
        self,
        value: Any,
        at: str,
        made: list[dict[str, Any]],
        kept: dict[str, JsonValue],
        moment: datetime | None,
    ) -> None:
        reader = self.reader
        if value is None:
            return
        if not isinstance(value, dict):
            reader.fail(at, f"must be an object, got {json_type(value)}")
        results = value.get("results")
        if results is None:
            return
        if not isinstance(results, list):
            reader.fail(f"{at}.results", f"must be a list, got {json_type(results)}")
        unmatched: list[JsonValue] = []
        for index, result in enumerate(results):
            where = f"{at}.results[{index}]"
            if not isinstance(result, dict):
                reader.fail(where, f"a result must be an object, got {json_type(result)}")
            content = self._content(result.get("content"), f"{where}.content", kept)
            call_id = reader.text(
                result.get("source_call_id"), f"{where}.source_call_id", limit=MAX_NAME_CHARS
            )
            extras: dict[str, JsonValue] = {}
            if result.get("extra") is not None:
                extras["extra"] = result["extra"]
            reader.keep_unknown(result, _RESULT_KEYS, extras, "steps[].observation.results")
            target = self._waiting(call_id) if call_id else None
            if target is None and not call_id and len(made) == 1 and "result" not in made[0]:
                target = made[0]  # one call, one result without an id: it answers the call
            if target is not None:
                target["result"] = content
                error = tool_error(content, message=result)
                if error is None and isinstance(result.get("extra"), dict):
                    error = tool_error(content, message=result["extra"])
                if error is not None:
                    target["error"] = error
                started = target["started_at"]
                if started is not None and moment is not None and moment < started:
                    target["started_at"] = None  # clock skew: keep the end, drop its contradiction
                    reader.warn(
                        f"{where}",
                        "the result is timed before its call; the call's start is left unknown",
                    )
                target["ended_at"] = moment
                if extras:
                    kept.setdefault("result_extras", []).append(  # type: ignore[union-attr]
                        {"source_call_id": call_id, **extras}
                    )
            else:
                if call_id:
                    answered = "is answered already" if call_id in self._ids else "answers no call"
                    reader.warn(
                        f"{where}.source_call_id",
                        f"{call_id[:80]!r} {answered}; the result is kept as a message",
                    )
                self._pending.append({"role": "tool", "content": content})
                unmatched.append(result)
            self._handoffs(
                result.get("subagent_trajectory_ref"), f"{where}.subagent_trajectory_ref", kept
            )
        if unmatched:
            kept["unmatched_results"] = unmatched

    def _content(self, value: Any, at: str, kept: dict[str, JsonValue]) -> str | None:
        text, parts = self._message(value, at)
        if parts:
            kept.setdefault("result_parts", []).extend(parts)  # type: ignore[union-attr]
        return text

    def _handoffs(self, refs: Any, at: str, kept: dict[str, JsonValue]) -> None:
        reader = self.reader
        if refs is None:
            return
        if isinstance(refs, dict):
            refs = [refs]  # a lone reference where the schema asks for a list of them
        if not isinstance(refs, list):
            reader.fail(at, f"must be a list of references, got {json_type(refs)}")
        for index, ref in enumerate(refs):
            where = f"{at}[{index}]"
            if not isinstance(ref, dict):
                reader.fail(where, f"a reference must be an object, got {json_type(ref)}")
            keys = [ref.get("trajectory_id"), ref.get("session_id")]
            key = next((k for k in keys if isinstance(k, str) and k in self.subagents), None)
            if key is None:
                reader.warn(
                    where,
                    "names a sub-agent run the file does not hold; the reference is kept, "
                    "the run is not read",
                )
                kept.setdefault("subagent_refs", []).append(ref)  # type: ignore[union-attr]
                continue
            sub = self.subagents[key]
            self.handed.add(key)
            self.handed_objects.add(id(sub))
            self.steps.append({"kind": "handoff", "id": key[:MAX_NAME_CHARS], "trajectory": sub})

    def _waiting(self, call_id: str) -> dict[str, Any] | None:
        calls = self._calls.get(call_id)
        while calls:
            if "result" not in calls[-1]:
                return calls[-1]
            calls.pop()
        return None


def join(at: str, field: str) -> str:
    return f"{at}.{field}" if at else field


def shown(value: Any) -> str:
    """A value for a message: short, whatever its size."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:37]}..."
