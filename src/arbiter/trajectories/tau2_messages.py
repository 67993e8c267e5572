"""τ²-bench messages as trajectory steps: the agent's LLM calls and tool calls.

τ²-bench types its messages by ``role``: ``system`` and ``user`` text; ``assistant`` text
and ``tool_calls`` (``id``, ``name``, ``arguments`` as an object), with the turn's
``cost``, ``usage`` and ``generation_time_seconds``; ``tool`` results (``id`` of the call,
``content``, ``error`` true when the tool failed), or several at once under
``tool_messages``. Each assistant message is an ``llm_call`` step and each of its tool
calls a ``tool_call`` step, timed by the messages' timestamps where they parse. Tool calls
the simulated *user* makes (its own tools, in the telecom domain) are the environment's,
not the agent's: their results are accepted but they are not steps.
"""

from __future__ import annotations

from collections import deque
from datetime import datetime
from typing import Any, NoReturn

from arbiter.datasets.jsonio import json_type
from arbiter.errors import InputError
from arbiter.trajectories.tool_errors import tool_error

__all__ = ["Clock", "may_precede", "parse_timestamp", "tau2_messages_document"]


class Clock:
    """The timestamps of one simulation: parsed, and all zoned or all zoneless.

    Args:
        where: The simulation's location, for messages.
    """

    def __init__(self, where: str) -> None:
        self.where = where
        self._first: tuple[str, bool] | None = None

    def read(self, value: Any, at: str) -> datetime | None:
        """The timestamp ``value`` of field ``at``; None when it does not parse.

        Raises:
            InputError: It has a time zone and an earlier one of the run has none, or
                the other way round (they could not be ordered).
        """
        moment = parse_timestamp(value)
        if moment is None:
            return None
        zoned = moment.utcoffset() is not None
        if self._first is None:
            self._first = (at, zoned)
        elif zoned != self._first[1]:
            said = "has a time zone" if zoned else "has no time zone"
            other = "has none" if zoned else "has one"
            raise InputError(
                f"{self.where}: {at}: {said} but {self._first[0]} {other}: a simulation's "
                "times are all zoned or all zoneless"
            )
        return moment


def tau2_messages_document(
    messages: list[Any],
    *,
    where: str,
    model: str | None,
    warnings: list[str] | None = None,
    clock: Clock | None = None,
) -> dict[str, Any]:
    """The ``steps`` and ``final_answer`` of a trajectory document, from τ²-bench messages.

    Args:
        messages: The simulation's parsed messages.
        where: The simulation's location, for messages (``file: simulations[3]``).
        model: The agent's model, when the run says.
        warnings: Where each repair is appended (``where: messages[i].field: what``).
        clock: The simulation's timestamps so far (its start and end); None: a new one.

    Raises:
        InputError: A message is malformed (``where: messages[i].field: why``), or its
            timestamp is zoned where the run's others are not (or the other way round).
    """
    builder = _Builder(where, model=model, warnings=warnings, clock=clock or Clock(where))
    for index, message in enumerate(messages):
        builder.add(message, f"messages[{index}]")
    return {"steps": builder.steps, "final_answer": builder.final_answer}


def parse_timestamp(value: Any) -> datetime | None:
    """A message or run timestamp, or None when it does not parse (old runs lack them)."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def may_precede(start: datetime | None, end: datetime | None) -> bool:
    """Whether a start may stand beside its end: comparable and not after it."""
    if start is None or end is None:
        return True
    if (start.tzinfo is None) != (end.tzinfo is None):
        return False
    return start <= end


class _Builder:
    """The steps of one simulation, message by message in one pass."""

    def __init__(
        self, where: str, *, model: str | None, warnings: list[str] | None, clock: Clock
    ) -> None:
        self.where, self.model, self.clock = where, model, clock
        self.warnings = warnings if warnings is not None else []
        self.steps: list[dict[str, Any]] = []
        self.final_answer: str | None = None
        self._pending: list[dict[str, Any]] = []  # input of the next LLM call
        self._ids: set[str] = set()  # every call id seen, the agent's and the user's
        self._calls: dict[str, list[dict[str, Any]]] = {}  # the agent's id -> its calls
        self._unnamed: deque[dict[str, Any]] = deque()  # the agent's calls without an id
        self._user_calls: set[str] = set()  # the simulated user's tool call ids

    def add(self, message: Any, at: str) -> None:
        if not isinstance(message, dict):
            self._fail(at, f"a message must be an object, got {json_type(message)}")
        role, content = message.get("role"), message.get("content")
        if not isinstance(role, str):
            self._fail(f"{at}.role", f"must be a string, got {json_type(role)}")
        if content is not None and not isinstance(content, str):
            self._fail(f"{at}.content", f"must be a string or null, got {json_type(content)}")
        if role == "tool" and isinstance(message.get("tool_messages"), list):
            for index, each in enumerate(message["tool_messages"]):
                self.add(each, f"{at}.tool_messages[{index}]")
            return
        timestamp = self.clock.read(message.get("timestamp"), f"{at}.timestamp")
        if role == "assistant":
            self._assistant(message, content, timestamp, at)
        elif role == "tool":
            self._tool_result(message, content, timestamp, at)
        else:
            if role == "user":
                for index, call in enumerate(self._tool_calls(message, at)):
                    call_id, _ = self._call_step(call, f"{at}.tool_calls[{index}]")
                    if call_id:
                        self._user_calls.add(call_id)
            self._pending.append({"role": role, "content": content})

    def _assistant(
        self, message: dict[str, Any], content: str | None, timestamp: datetime | None, at: str
    ) -> None:
        call: dict[str, Any] = {
            "kind": "llm_call",
            "input_messages": self._pending,
            "output_messages": [{"role": "assistant", "content": content}],
            "model": self.model,
            "ended_at": timestamp,
        }
        usage = message.get("usage")
        if isinstance(usage, dict):
            call["input_tokens"] = _count(usage.get("prompt_tokens"))
            call["output_tokens"] = _count(usage.get("completion_tokens"))
        cost = message.get("cost")
        if isinstance(cost, int | float) and not isinstance(cost, bool) and cost >= 0:
            call["cost_usd"] = cost
        seconds = message.get("generation_time_seconds")
        if isinstance(seconds, int | float) and not isinstance(seconds, bool) and seconds >= 0:
            call["duration_ms"] = seconds * 1000
        self.steps.append(call)
        self._pending = []
        for index, tool_call in enumerate(self._tool_calls(message, at)):
            call_id, step = self._call_step(tool_call, f"{at}.tool_calls[{index}]")
            step["started_at"] = timestamp
            if call_id:
                self._calls.setdefault(call_id, []).append(step)
            else:
                self._unnamed.append(step)
            self.steps.append(step)
        if content is not None and content.strip():
            self.final_answer = content

    def _tool_calls(self, message: dict[str, Any], at: str) -> list[Any]:
        calls = message.get("tool_calls") or []
        if not isinstance(calls, list):
            self._fail(f"{at}.tool_calls", f"must be a list, got {json_type(calls)}")
        return calls

    def _call_step(self, tool_call: Any, at: str) -> tuple[str, dict[str, Any]]:
        if not isinstance(tool_call, dict):
            self._fail(at, f"a tool call must be an object, got {json_type(tool_call)}")
        name, call_id = tool_call.get("name"), tool_call.get("id") or ""
        if not isinstance(name, str):
            self._fail(f"{at}.name", f"must be a string, got {json_type(name)}")
        if not isinstance(call_id, str):
            self._fail(f"{at}.id", f"must be a string, got {json_type(call_id)}")
        if call_id in self._ids:
            self._warn(
                f"{at}.id",
                f"tool call id {call_id[:80]!r} is used again; a result of that id answers "
                "the latest call not answered yet",
            )
        if call_id:
            self._ids.add(call_id)
        step = {
            "kind": "tool_call",
            "name": name,
            "call_id": call_id or None,
            "arguments": tool_call.get("arguments", {}),
        }
        return call_id, step

    def _tool_result(
        self, message: dict[str, Any], content: str | None, timestamp: datetime | None, at: str
    ) -> None:
        call_id = message.get("id", "")
        if not isinstance(call_id, str):
            self._fail(f"{at}.id", f"must be a string, got {json_type(call_id)}")
        self._pending.append({"role": "tool", "content": content})
        if message.get("requestor") == "user" or call_id in self._user_calls:
            return
        step = self._waiting(call_id)
        if step is None:
            why = "is answered already" if call_id in self._ids else "answers no earlier call"
            shown = f"tool call {call_id[:80]!r}" if call_id else "a result without a call id"
            self._warn(f"{at}.id", f"{shown} {why}; the result is kept as a message only")
            return
        step["result"] = content
        error = tool_error(content, message=message)
        if error is not None:
            step["error"] = error
        if not may_precede(step["started_at"], timestamp):
            step["started_at"] = None  # clock skew: keep the end, drop what contradicts it
            self._warn(
                f"{at}.timestamp",
                "the result is timed before its call; the call's start is left unknown",
            )
        step["ended_at"] = timestamp

    def _waiting(self, call_id: str) -> dict[str, Any] | None:
        """The call a result of ``call_id`` answers: the latest of that id not answered
        yet; for a result without an id, the earliest call without one not answered yet."""
        if not call_id:
            return self._unnamed.popleft() if self._unnamed else None
        calls = self._calls.get(call_id)
        while calls:
            if "result" not in calls[-1]:
                return calls[-1]
            calls.pop()
        return None

    def _warn(self, at: str, what: str) -> None:
        self.warnings.append(f"{self.where}: {at}: {what}")

    def _fail(self, at: str, why: str) -> NoReturn:
        raise InputError(f"{self.where}: {at}: {why}")


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
