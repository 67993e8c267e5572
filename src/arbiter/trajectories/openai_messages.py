"""Import OpenAI chat conversations with ``tool_calls`` as trajectories.

The file is JSONL, one conversation a line, each line either

- an object ``{"messages": [...]}``, optionally with ``id``, ``conversation_id``,
  ``model`` (the model of every assistant turn) and ``metadata`` (an object); the
  ``tools`` and ``parallel_tool_calls`` keys of the fine-tuning format are ignored, and
  any other key is kept in the trajectory's metadata; or
- a bare list of messages.

Each message is an object with a string ``role`` and a ``content`` that is a string,
null, or a list of content parts (their ``text`` parts are joined). How they map:

- every assistant message is an ``llm_call`` step whose input is the messages since the
  previous assistant message (not the whole history again, so a long conversation stays
  linear in size) and whose output is the assistant message itself;
- each of its ``tool_calls`` is a ``tool_call`` step after it, with the arguments decoded
  from their JSON text and the result taken from the ``tool`` message with the same
  ``tool_call_id``: the latest call of that id not answered yet (real logs use an id
  again for a later call). A call no tool message answers keeps ``result`` None;
  arguments that are not valid JSON are kept as the text the model wrote, with the
  call's ``error`` saying so (a model writing broken arguments is a finding, not bad
  input);
- a result that reports a failure in one of the shapes providers and frameworks write
  (``{"error": "timeout"}``, ``is_error``, a ``status`` of ``error``, ``Error: ...``;
  see :mod:`~arbiter.trajectories.tool_errors`) sets the call's ``error``;
- the last assistant message with text is the final answer; the run is ``completed``
  when the conversation ends on an assistant message with text and no tool calls, else
  ``incomplete``.

The deprecated ``function_call`` of an assistant message (``{name, arguments}``, the API
before ``tool_calls``) is a tool call too, without a call id; its result is the next
``function`` message with the same ``name`` (the legacy API had no ids, so results are
paired by name, first asked first answered).

What real logs get wrong and can be read anyway is repaired, each repair a warning of
the run (``file:line: messages[i].field: what was done``): a tool call id used again, a
result that answers no call still waiting (kept as a message of the next model call,
attached to no call), a tool message without a ``tool_call_id`` (paired by its ``name``),
a legacy ``function`` result no call asked for. Only what cannot be read is refused: a
line that is not such a conversation, or a message of the wrong shape, is an
:class:`~arbiter.errors.InputError` naming ``file:line`` and the message at fault.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

from arbiter.contract import Trajectory
from arbiter.datasets.jsonio import (
    JsonInputError,
    iter_json_lines,
    json_type,
    parse_json,
    read_text,
)
from arbiter.errors import InputError
from arbiter.trajectories.formats import (
    MATCH,
    ImportedRun,
    ImportOptions,
    TrajectoryFormat,
    numbered_runs,
    record_runs,
)
from arbiter.trajectories.tool_errors import tool_error
from arbiter.validation import validate_document

__all__ = [
    "FORMAT",
    "TRAJECTORY_FORMAT",
    "conversation_to_trajectory",
    "load_openai_messages",
    "messages_document",
    "parse_openai_messages",
]

FORMAT = "openai_messages"
"""The ``source.format`` of the trajectories this importer makes."""

_RECORD_KEYS = frozenset({"messages", "id", "conversation_id", "model", "metadata"})
_IGNORED_KEYS = frozenset({"tools", "parallel_tool_calls"})


def load_openai_messages(path: str | os.PathLike[str]) -> list[Trajectory]:
    """The trajectories of a JSONL file of OpenAI chat conversations, in file order.

    Raises:
        InputError: The file cannot be read, or a line is not a conversation
            (``file:line: why``).
    """
    file = Path(path)
    return parse_openai_messages(read_text(file, what="conversations file"), source=str(file))


def parse_openai_messages(text: str, *, source: str) -> list[Trajectory]:
    """The trajectories of JSONL text, one conversation a non-blank line.

    Args:
        text: The JSONL text.
        source: Where it came from (a file name), for messages and ``source.file``.

    Raises:
        InputError: A line is not valid JSON or not a conversation (``source:line: why``).
    """
    return [
        conversation_to_trajectory(record, source=source, line=number)
        for number, record in iter_json_lines(text, source=source)
    ]


def conversation_to_trajectory(
    record: Any, *, source: str, line: int, warnings: list[str] | None = None
) -> Trajectory:
    """One parsed conversation (an object with ``messages``, or a bare list) as a trajectory.

    Args:
        record: The parsed conversation.
        source: Where it came from (a file name), for messages and ``source.file``.
        line: Its line in that file.
        warnings: Where each repair of the conversation is appended, one line each.

    Raises:
        InputError: It is not a conversation (``source:line: why``).
    """
    where = f"{source}:{line}"
    header = _header(record, where)
    messages = record if isinstance(record, list) else record["messages"]
    model = header.pop("model", None)
    document = {
        **header,
        **messages_document(messages, where=where, model=model, warnings=warnings),
        "source": {"format": FORMAT, "file": source, "line": line},
    }
    return validate_document(Trajectory, document, where=where)


def messages_document(
    messages: list[Any],
    *,
    where: str,
    key: str = "messages",
    model: str | None = None,
    warnings: list[str] | None = None,
) -> dict[str, Any]:
    """The ``steps``, ``final_answer`` and ``status`` of a trajectory document, from messages.

    For importers of formats that embed OpenAI chat messages (τ-bench's ``traj``); the
    caller adds its own fields and validates the document as a ``Trajectory``.

    Args:
        messages: The parsed messages.
        where: The location of the conversation, for messages (``file:line``).
        key: What the list is called in the source, for messages (``traj[3].role``).
        model: The model of every assistant turn, when known.
        warnings: Where each repair is appended (``where: key[i].field: what was done``).

    Raises:
        InputError: A message is malformed (``where: key[i].field: why``).
    """
    builder = _Builder(where, model=model, warnings=warnings)
    for index, message in enumerate(messages):
        builder.add(message, f"{key}[{index}]")
    return {"steps": builder.steps, "final_answer": builder.final_answer, "status": builder.status}


def _header(record: Any, where: str) -> dict[str, Any]:
    if isinstance(record, list):
        return {}
    if not isinstance(record, dict):
        raise InputError(
            f"{where}: expected an object with 'messages' or a list of messages, "
            f"got {json_type(record)}"
        )
    if not isinstance(record.get("messages"), list):
        got = json_type(record["messages"]) if "messages" in record else "nothing"
        raise InputError(f"{where}: 'messages' must be a list of messages, got {got}")
    for key in ("id", "conversation_id", "model"):
        if record.get(key) is not None and not isinstance(record[key], str):
            raise InputError(f"{where}: {key!r} must be a string, got {json_type(record[key])}")
    header: dict[str, Any] = {
        k: record[k] for k in ("id", "conversation_id", "model") if k in record
    }
    metadata = record.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise InputError(f"{where}: 'metadata' must be an object, got {json_type(metadata)}")
    kept = dict(metadata or {})
    for key in sorted(set(record) - _RECORD_KEYS - _IGNORED_KEYS):
        kept.setdefault(key, record[key])  # what the record carries and the shape has no place for
    if kept or "metadata" in record:
        header["metadata"] = kept
    return header


class _Builder:
    """Steps of one conversation, built message by message in one pass."""

    def __init__(self, where: str, *, model: str | None, warnings: list[str] | None) -> None:
        self.where, self.model = where, model
        self.warnings = warnings if warnings is not None else []
        self.steps: list[dict[str, Any]] = []
        self.final_answer: str | None = None
        self.status = "incomplete"
        self._pending: list[dict[str, Any]] = []  # input of the next LLM call
        self._ids: set[str] = set()  # every tool call id seen
        self._waiting: dict[str, list[dict[str, Any]]] = {}  # id -> its calls, in order
        self._by_name: dict[str, list[dict[str, Any]]] = {}  # tool name -> its calls
        self._unanswered: dict[str, list[dict[str, Any]]] = {}  # legacy name -> its calls

    def add(self, message: Any, at: str) -> None:
        if not isinstance(message, dict):
            self._fail(at, f"a message must be an object, got {json_type(message)}")
        role = message.get("role")
        if not isinstance(role, str):
            self._fail(f"{at}.role", f"must be a string, got {json_type(role)}")
        content = _content(message.get("content"), lambda why: self._fail(f"{at}.content", why))
        if role == "assistant":
            self._assistant(message, content, at)
            return
        if role == "tool":
            self._tool_result(message, content, at)
        elif role == "function":
            self._function_result(message, content, at)
        self.status = "incomplete"
        entry: dict[str, Any] = {"role": role, "content": content}
        if isinstance(message.get("name"), str):
            entry["name"] = message["name"]
        self._pending.append(entry)

    def _assistant(self, message: dict[str, Any], content: str | None, at: str) -> None:
        tool_calls = message.get("tool_calls") or []
        if not isinstance(tool_calls, list):
            self._fail(f"{at}.tool_calls", f"must be a list, got {json_type(tool_calls)}")
        legacy = message.get("function_call")
        call: dict[str, Any] = {
            "kind": "llm_call",
            "input_messages": self._pending,
            "output_messages": [{"role": "assistant", "content": content}],
        }
        if self.model is not None:
            call["model"] = self.model
        self.steps.append(call)
        self._pending = []
        for index, tool_call in enumerate(tool_calls):
            self.steps.append(self._tool_call(tool_call, f"{at}.tool_calls[{index}]"))
        if legacy is not None:
            step = self._function_call(legacy, f"{at}.function_call")
            self._unanswered.setdefault(step["name"], []).append(step)
            self.steps.append(step)
        if content is not None and content.strip():
            self.final_answer = content
        calls = bool(tool_calls) or legacy is not None
        self.status = "completed" if content and content.strip() and not calls else "incomplete"

    def _tool_call(self, tool_call: Any, at: str) -> dict[str, Any]:
        if not isinstance(tool_call, dict):
            self._fail(at, f"a tool call must be an object, got {json_type(tool_call)}")
        call_id = tool_call.get("id")
        if call_id is not None and not isinstance(call_id, str):
            self._fail(f"{at}.id", f"must be a string, got {json_type(call_id)}")
        step = self._function_call(tool_call.get("function"), f"{at}.function")
        step["call_id"] = call_id
        if call_id is not None:
            if call_id in self._ids:
                self._warn(
                    f"{at}.id",
                    f"tool call id {call_id[:80]!r} is used again; a result of that id "
                    "answers the latest call not answered yet",
                )
            self._ids.add(call_id)
            self._waiting.setdefault(call_id, []).append(step)
        self._by_name.setdefault(step["name"], []).append(step)
        return step

    def _function_call(self, function: Any, at: str) -> dict[str, Any]:
        """A tool call step from ``{name, arguments}`` (a tool call's or a legacy one)."""
        if not isinstance(function, dict):
            self._fail(at, f"must be an object, got {json_type(function)}")
        name = function.get("name")
        if not isinstance(name, str):
            self._fail(f"{at}.name", f"must be a string, got {json_type(name)}")
        step: dict[str, Any] = {"kind": "tool_call", "name": name, "call_id": None}
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            try:
                step["arguments"] = parse_json(arguments, source="arguments") if arguments else {}
            except JsonInputError as exc:
                step["arguments"] = arguments
                step["error"] = f"the arguments are not valid JSON ({exc.reason})"
        else:  # some exporters write the arguments as an object already
            step["arguments"] = arguments
        return step

    def _function_result(self, message: dict[str, Any], content: str | None, at: str) -> None:
        name = message.get("name")
        if not isinstance(name, str):
            self._fail(f"{at}.name", f"must be a string, got {json_type(name)}")
        waiting = self._unanswered.get(name)
        if not waiting:
            self._warn(
                f"{at}.name",
                f"{name[:80]!r} answers no earlier function_call; kept as a message only",
            )
            return
        self._answer(waiting.pop(0), content, message)

    def _tool_result(self, message: dict[str, Any], content: str | None, at: str) -> None:
        call_id = message.get("tool_call_id")
        if call_id is None:
            self._result_by_name(message, content, at)
            return
        if not isinstance(call_id, str):
            self._fail(f"{at}.tool_call_id", f"must be a string, got {json_type(call_id)}")
        step = _latest_waiting(self._waiting.get(call_id))
        if step is None:
            why = "is answered already" if call_id in self._ids else "answers no earlier call"
            self._warn(
                f"{at}.tool_call_id",
                f"tool call {call_id[:80]!r} {why}; the result is kept as a message only",
            )
            return
        self._answer(step, content, message)

    def _result_by_name(self, message: dict[str, Any], content: str | None, at: str) -> None:
        """A tool message without a call id: the latest waiting call of its tool's name."""
        name = message.get("name")
        step = _latest_waiting(self._by_name.get(name)) if isinstance(name, str) else None
        if step is None:
            self._warn(
                f"{at}.tool_call_id",
                "missing, and no waiting call has the message's name; kept as a message only",
            )
            return
        self._warn(
            f"{at}.tool_call_id", f"missing; paired with the latest waiting call of {name!r}"
        )
        self._answer(step, content, message)

    def _answer(self, step: dict[str, Any], content: str | None, message: dict[str, Any]) -> None:
        step["result"] = content
        error = tool_error(content, message=message)
        if error is not None and step.get("error") is None:
            step["error"] = error

    def _warn(self, at: str, what: str) -> None:
        self.warnings.append(f"{self.where}: {at}: {what}")

    def _fail(self, at: str, why: str) -> NoReturn:
        raise InputError(f"{self.where}: {at}: {why}")


def _latest_waiting(calls: list[dict[str, Any]] | None) -> dict[str, Any] | None:
    """The latest call of ``calls`` not answered yet; answered ones at the end are dropped
    on the way, so pairing stays linear in the conversation's length."""
    while calls:
        if "result" not in calls[-1]:
            return calls[-1]
        calls.pop()
    return None


def _content(value: Any, fail: Callable[[str], NoReturn]) -> str | None:
    """A message's text: a string, null, or the ``text`` of its content parts joined."""
    if value is None or isinstance(value, str):
        return value
    if not isinstance(value, list):
        fail(f"must be a string, a list of parts or null, got {json_type(value)}")
    texts: list[str] = []
    for part in value:
        if isinstance(part, dict) and part.get("type") == "text":
            text = part.get("text")
            if not isinstance(text, str):
                fail(f"a text part's 'text' must be a string, got {json_type(text)}")
            texts.append(text)
    return "".join(texts) if texts else None


def _read_file(file: Path, options: ImportOptions) -> Iterator[ImportedRun]:
    text = read_text(file, what="conversations file")
    return numbered_runs(_conversations(text, str(file)), file, FORMAT)


def _conversations(text: str, source: str) -> Iterator[tuple[Trajectory, list[str]]]:
    for number, record in iter_json_lines(text, source=source):
        warnings: list[str] = []
        trajectory = conversation_to_trajectory(
            record, source=source, line=number, warnings=warnings
        )
        yield trajectory, warnings


def _read_record(record: Any, options: ImportOptions) -> list[ImportedRun]:
    warnings: list[str] = []
    trajectory = conversation_to_trajectory(
        record, source=options.source, line=1, warnings=warnings
    )
    return record_runs([(trajectory, warnings)], FORMAT, options.source)


def _resemblance(record: Any) -> float:
    """A conversation record or a list of messages; partly: ``messages`` that is not a
    list, or a list in which only some items are messages."""
    if isinstance(record, dict):
        if isinstance(record.get("messages"), list):
            return MATCH
        return 0.5 if "messages" in record else 0.0
    if not isinstance(record, list) or not record:
        return 0.0
    roles = [isinstance(m, dict) and isinstance(m.get("role"), str) for m in record]
    if all(roles):
        return MATCH
    return 0.5 if any(isinstance(m, dict) and "role" in m for m in record) else 0.0


TRAJECTORY_FORMAT = TrajectoryFormat(
    name=FORMAT,
    summary="OpenAI chat conversations with `tool_calls`, one a line "
    '(`{"id": ..., "messages": [...]}`)',
    read_file=_read_file,
    read_record=_read_record,
    resemblance=_resemblance,
)
"""The ``openai_messages`` trajectory format."""
