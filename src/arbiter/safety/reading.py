"""The texts of an agent run a safety scorer reads, each with where it is in the run.

What an agent *read*: the case's input, the results of its tool calls, the chunks it
retrieved, the user and tool messages its LLM calls were given. What it *said*: its
final answer, the assistant messages of its LLM calls, the arguments of the tool calls
it sent. A sub-agent's steps (a hand-off) are read the same way, under
``steps[i].trajectory``. A JSON result or argument is read string by string, each with
its path (``steps[2].result.items[0].body``).

Bounded: at most :data:`MAX_TEXTS` texts and :data:`MAX_RUN_CHARS` characters per run
(the rest is left unread and said in ``RunTexts.capped``); a text seen twice (the same
conversation history given to every LLM call) is read once, where it first appears.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from arbiter.contract import Example, Handoff, LlmCall, Retrieval, ToolCall, Trajectory
from arbiter.contract.safety import Surface
from arbiter.escape import clip
from arbiter.safety.text import visible

__all__ = ["MAX_RUN_CHARS", "MAX_TEXTS", "RunText", "RunTexts", "run_texts", "string_leaves"]

MAX_TEXTS = 5_000
"""Texts read of one run."""
MAX_RUN_CHARS = 4_000_000
"""Characters read of one run, all its texts together."""
_MAX_DEPTH = 32
"""Deepest JSON nesting and hand-off chain read."""
_MAX_KEY_CHARS = 40
"""Characters of a JSON key kept in a path."""
_READ_ROLES = frozenset({"user", "tool", "function", "human", "ipython"})
_SAID_ROLES = frozenset({"assistant", "ai", "model"})

Part = Literal["input", "tool_result", "retrieval", "message", "answer", "tool_arguments"]
"""What kind of text of a run it is."""


@dataclass(frozen=True)
class RunText:
    """One text of a run."""

    where: str
    """Its place in the run (``steps[2].result``)."""
    text: str
    surface: Surface
    part: Part
    tool: str | None = None
    """The tool, for a tool call's result or arguments."""


@dataclass
class RunTexts:
    """The texts of a run read on one surface, and the bounds that were reached."""

    texts: list[RunText] = field(default_factory=list)
    capped: list[str] = field(default_factory=list)

    @property
    def chars(self) -> int:
        """Characters of all the texts."""
        return sum(len(t.text) for t in self.texts)


def string_leaves(value: Any, path: str, depth: int = 0) -> Iterator[tuple[str, str]]:
    """Every string in a JSON value, with its path; at most :data:`_MAX_DEPTH` deep."""
    if isinstance(value, str):
        yield path, value
    elif depth >= _MAX_DEPTH:
        return
    elif isinstance(value, Mapping):
        for key, item in value.items():
            # A key is the source's text: shown visibly and short in a path.
            name = clip(visible(str(key)), _MAX_KEY_CHARS)
            yield from string_leaves(item, f"{path}.{name}", depth + 1)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from string_leaves(item, f"{path}[{index}]", depth + 1)


def _steps(trajectory: Trajectory, prefix: str, depth: int) -> Iterator[tuple[str, Any]]:
    for index, step in enumerate(trajectory.steps):
        where = f"{prefix}steps[{index}]"
        yield where, step
        if isinstance(step, Handoff) and depth < _MAX_DEPTH:
            yield from _steps(step.trajectory, f"{where}.trajectory.", depth + 1)


def _candidates(
    trajectory: Trajectory | None, example: Example | None, answer: str | None
) -> Iterator[RunText]:
    if example is not None:
        for where, text in string_leaves(example.input, "input"):
            yield RunText(where, text, "read", "input")
    if trajectory is not None:
        for where, step in _steps(trajectory, "", 0):
            if isinstance(step, ToolCall):
                for path, text in string_leaves(step.result, f"{where}.result"):
                    yield RunText(path, text, "read", "tool_result", step.name)
                if step.error:
                    yield RunText(f"{where}.error", step.error, "read", "tool_result", step.name)
                for path, text in string_leaves(step.arguments, f"{where}.arguments"):
                    yield RunText(path, text, "said", "tool_arguments", step.name)
            elif isinstance(step, Retrieval):
                for number, chunk in enumerate(step.chunks):
                    if chunk.text:
                        yield RunText(f"{where}.chunks[{number}]", chunk.text, "read", "retrieval")
            elif isinstance(step, LlmCall):
                for number, message in enumerate(step.input_messages):
                    if message.content and message.role.lower() in _READ_ROLES:
                        place = f"{where}.input_messages[{number}]"
                        yield RunText(place, message.content, "read", "message")
                for number, message in enumerate(step.output_messages):
                    if message.content and message.role.lower() in _SAID_ROLES:
                        place = f"{where}.output_messages[{number}]"
                        yield RunText(place, message.content, "said", "message")
        answer = trajectory.final_answer if answer is None else answer
    if answer:
        yield RunText("final_answer", answer, "said", "answer")


def run_texts(
    trajectory: Trajectory | None,
    example: Example | None,
    surface: Surface,
    *,
    parts: frozenset[Part] | None = None,
    answer: str | None = None,
    max_texts: int = MAX_TEXTS,
    max_chars: int = MAX_RUN_CHARS,
) -> RunTexts:
    """The texts of a run on one surface, each once, bounded.

    Args:
        trajectory: The run; None reads only ``example`` and ``answer``.
        example: The case (its input is read); None: no input.
        surface: ``read`` or ``said``.
        parts: Only these kinds of text (``tool_result``, ...); None: all of the surface.
        answer: The final answer, when it is not the trajectory's (a text output).
        max_texts: Most texts read.
        max_chars: Most characters read, all texts together.
    """
    found = RunTexts()
    seen: set[bytes] = set()
    chars = 0
    for candidate in _candidates(trajectory, example, answer):
        if candidate.surface != surface or (parts is not None and candidate.part not in parts):
            continue
        if not candidate.text.strip():
            continue
        digest = hashlib.blake2b(
            candidate.text.encode("utf-8", "surrogatepass"), digest_size=16
        ).digest()
        if digest in seen:
            continue
        if len(found.texts) >= max_texts:
            found.capped.append(f"texts: first {max_texts} of the run read")
            break
        if chars + len(candidate.text) > max_chars:
            found.capped.append(f"characters: first {max_chars} of the run read")
            break
        seen.add(digest)
        chars += len(candidate.text)
        found.texts.append(candidate)
    return found
