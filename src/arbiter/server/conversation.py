"""A trajectory as the conversation it held: system, user, assistant and tool messages.

The thread reads the run's own steps in order. A model call adds the input messages not
shown yet (traces often send the whole history again on every call) and what it
answered; a tool call adds one tool message with its arguments and its result or error;
a hand-off adds a line naming the sub-agent. Tool results that come back as a model
call's input are shown once, from the tool call. The final answer closes the thread
when the last message did not already say it. Texts are passed through as they are (the
template escapes and clips them); the thread holds at most :data:`MAX_MESSAGES`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from arbiter.contract import Handoff, LlmCall, Retrieval, ToolCall, Trajectory

__all__ = ["MAX_MESSAGES", "Message", "Thread", "thread"]

MAX_MESSAGES = 200
"""Messages a thread shows; a longer one says how many it left out."""


@dataclass(frozen=True)
class Message:
    """One message of the thread."""

    role: str
    """``system``, ``user``, ``assistant``, ``tool``, ``agent`` (a hand-off), or the
    trace's own role name."""
    content: str
    """What it says (a tool's result or error)."""
    name: str | None = None
    """The tool, the sub-agent or the model that wrote it."""
    arguments: str | None = None
    """A tool call's arguments, as JSON."""
    error: bool = False
    """A tool call that failed."""


@dataclass(frozen=True)
class Thread:
    """The messages of a run, in order."""

    messages: list[Message]
    """At most :data:`MAX_MESSAGES` of them."""
    hidden: int
    """Messages left out past the cap."""

    @property
    def has_prompt(self) -> bool:
        """Whether the thread shows what the agent was asked (a system or user message)."""
        return any(m.role in ("system", "user") for m in self.messages)


def _json(value: object) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


def thread(run: Trajectory, *, limit: int = MAX_MESSAGES) -> Thread:
    """The conversation ``run`` held (see the module's docstring)."""
    messages: list[Message] = []
    seen: set[tuple[str, str]] = set()
    tools_shown = any(isinstance(step, ToolCall) for step in run.steps)

    def add(message: Message) -> None:
        key = (message.role, message.content)
        if message.role != "tool" and key in seen:
            return
        seen.add(key)
        messages.append(message)

    for step in run.steps:
        if isinstance(step, LlmCall):
            for given in step.input_messages:
                if given.role == "tool" and tools_shown:
                    continue
                if given.content:
                    add(Message(given.role, given.content, name=given.name))
            for said in step.output_messages:
                if said.content:
                    add(Message("assistant", said.content, name=step.model))
        elif isinstance(step, ToolCall):
            failed = step.error is not None
            result = step.error if failed else _json(step.result) if step.result is not None else ""
            messages.append(
                Message(
                    "tool",
                    result or "",
                    name=step.name,
                    arguments=_json(step.arguments) if step.arguments is not None else None,
                    error=failed,
                )
            )
        elif isinstance(step, Handoff):
            sub = step.trajectory
            who = sub.agent.name or "a sub-agent"
            messages.append(Message("agent", sub.final_answer or "", name=who))
        elif isinstance(step, Retrieval) and step.query:
            found = f"{len(step.chunks)} chunk{'s' if len(step.chunks) != 1 else ''} found"
            messages.append(Message("tool", found, name="retrieval", arguments=step.query))
    answer = run.final_answer
    last = next((m for m in reversed(messages) if m.role == "assistant"), None)
    if answer and (last is None or last.content.strip() != answer.strip()):
        messages.append(Message("assistant", answer, name="final answer"))
    return Thread(messages[:limit], max(len(messages) - limit, 0))
