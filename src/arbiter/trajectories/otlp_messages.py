"""The chat messages of a GenAI model span, from whichever place its instrumentation wrote them.

The OpenTelemetry GenAI conventions moved the messages several times; each source below
is tried in turn, for the input and the output separately, and the first that holds any
message wins:

1. the span's ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (a JSON text or a
   structured value; ``role`` plus ``parts`` of type ``text``, ``tool_call``,
   ``tool_call_response``, or OpenAI's ``content`` / ``tool_calls`` where a message has no
   ``parts``), with ``gen_ai.system_instructions`` as a leading system message;
2. the same attributes on a ``gen_ai.client.inference.operation.details`` log event;
3. the older per-message events, as log records or span events: ``gen_ai.system.message``,
   ``gen_ai.user.message``, ``gen_ai.assistant.message``, ``gen_ai.tool.message`` (input)
   and ``gen_ai.choice`` (output), their bodies in OpenAI's shape (``content``,
   ``tool_calls`` with ``function.name`` / ``.arguments``, a tool message's ``id``);
4. the oldest span events ``gen_ai.content.prompt`` / ``gen_ai.content.completion``,
   with a JSON list of messages in ``gen_ai.prompt`` / ``gen_ai.completion``;
5. OpenLLMetry's indexed attributes ``gen_ai.prompt.N.role`` / ``.content`` and
   ``gen_ai.completion.N.role`` / ``.content`` / ``.tool_calls.M.name`` / ``.arguments``.

Attribute values that follow none of these shapes are ignored, not errors: the span's
wire format was valid, and what it carries is used as far as it is understood.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from arbiter.contract.trajectory import MAX_NAME_CHARS, MAX_TEXT_CHARS
from arbiter.datasets.jsonio import parse_json
from arbiter.errors import InputError
from arbiter.trajectories.span_model import LogRecord, Span

__all__ = [
    "ModelMessages",
    "RequestedToolCall",
    "clip",
    "decode_json_text",
    "model_messages",
]

_ROLE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
_DETAILS_EVENT = "gen_ai.client.inference.operation.details"
_Event = tuple[str | None, Any, dict[str, Any]]
"""An event's name, body and attributes (a span event's body is its attributes)."""
_INDEXED = re.compile(r"gen_ai\.(prompt|completion)\.(\d{1,6})\.(.+)")


@dataclass(slots=True)
class RequestedToolCall:
    """A tool call the model asked for in its output messages.

    Attributes:
        arguments: Decoded from JSON when they were a JSON text.
        arguments_error: Why the arguments could not be decoded, when they could not.
    """

    name: str
    call_id: str | None
    arguments: Any = None
    arguments_error: str | None = None


@dataclass(slots=True)
class ModelMessages:
    """What one model call was sent and answered.

    Attributes:
        input: ``ChatMessage`` documents sent.
        output: ``ChatMessage`` documents answered.
        tool_calls: The tool calls requested in the output, in order.
        tool_results: Results of earlier tool calls found in the input, by call id.
    """

    input: list[dict[str, Any]] = field(default_factory=list)
    output: list[dict[str, Any]] = field(default_factory=list)
    tool_calls: list[RequestedToolCall] = field(default_factory=list)
    tool_results: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class _Message:
    role: str
    content: str | None = None
    name: str | None = None
    tool_calls: list[RequestedToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    result: Any = None


def model_messages(span: Span, logs: Sequence[LogRecord]) -> ModelMessages:
    """The messages of a model span, from its attributes, its events or its log records.

    Args:
        span: A model call (``chat``, ``text_completion``, ``generate_content``) span.
        logs: The log records linked to the span by its span id, in time order.
    """
    events: list[_Event] = [(log.event_name, log.body, log.attributes) for log in logs]
    events += [(event.name, event.attributes, event.attributes) for event in span.events]
    details = [attrs for name, _, attrs in events if name == _DETAILS_EVENT]
    # The current conventions' attributes come first and usually hold the messages: the
    # older places are looked at (and their readers made) only when they do not.
    inputs = _structured(span.attributes, "gen_ai.input.messages", system=True) or _first(
        *(partial(_structured, attrs, "gen_ai.input.messages", system=True) for attrs in details),
        partial(_role_events, events),
        partial(_content_event, events, "gen_ai.content.prompt", "gen_ai.prompt"),
        partial(_indexed, span.attributes, "prompt"),
    )
    outputs = _structured(span.attributes, "gen_ai.output.messages", system=False) or _first(
        *(partial(_structured, attrs, "gen_ai.output.messages", system=False) for attrs in details),
        partial(_choice_events, events),
        partial(_content_event, events, "gen_ai.content.completion", "gen_ai.completion"),
        partial(_indexed, span.attributes, "completion"),
    )
    found = ModelMessages(
        input=[_document(m) for m in inputs], output=[_document(m) for m in outputs]
    )
    for message in outputs:
        found.tool_calls.extend(message.tool_calls)
    for message in inputs:
        if message.tool_call_id is not None:
            found.tool_results[message.tool_call_id] = message.result
    return found


def decode_json_text(value: Any) -> tuple[Any, str | None]:
    """A value decoded from JSON when it is a JSON text, and why not when it is not."""
    if not isinstance(value, str):
        return value, None
    if not value.strip():
        return value, None
    try:
        # An instrumentation's own JSON text, read on the hot path of every trace: a key
        # given twice keeps its last value, as a trace export's keys do.
        return parse_json(value, source="value", unique_keys=False), None
    except InputError as exc:
        return value, f"not valid JSON ({getattr(exc, 'reason', str(exc))})"


def clip(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    """``text`` cut to ``limit`` characters (the contract's bound for untrusted text)."""
    return text if len(text) <= limit else text[:limit]


def _first(*sources: Callable[[], list[_Message]]) -> list[_Message]:
    for source in sources:
        messages = source()
        if messages:
            return messages
    return []


def _document(message: _Message) -> dict[str, Any]:
    document: dict[str, Any] = {"role": clip(message.role, MAX_NAME_CHARS)}
    if message.content is not None:
        document["content"] = clip(message.content)
    if message.name is not None:
        document["name"] = clip(message.name, MAX_NAME_CHARS)
    return document


def _as_list(value: Any) -> list[Any]:
    """A list value, or one decoded from a JSON text; anything else is no messages."""
    decoded, _ = decode_json_text(value)
    return decoded if isinstance(decoded, list) else []


def _structured(attributes: dict[str, Any], key: str, *, system: bool) -> list[_Message]:
    """Messages in the current conventions: ``{role, parts: [...]}``."""
    messages: list[_Message] = []
    if system:
        instructions = _as_list(attributes.get("gen_ai.system_instructions"))
        text = _parts_text(instructions)
        if text is not None:
            messages.append(_Message(role="system", content=text))
    for raw in _as_list(attributes.get(key)):
        if not isinstance(raw, dict) or not isinstance(raw.get("role"), str):
            continue
        if not isinstance(raw.get("parts"), list):  # OpenAI's shape under the new name
            messages.append(_openai_message(raw, raw["role"]))
            continue
        parts: list[Any] = raw["parts"]
        message = _Message(
            role=raw["role"], content=_parts_text(parts), name=_text(raw.get("name"))
        )
        for part in parts:
            if not isinstance(part, dict):
                continue
            if part.get("type") == "tool_call" and isinstance(part.get("name"), str):
                message.tool_calls.append(
                    _requested(part["name"], part.get("id"), part.get("arguments"))
                )
            elif part.get("type") == "tool_call_response" and isinstance(part.get("id"), str):
                message.tool_call_id = part["id"]
                message.result = decode_json_text(part.get("response"))[0]
                if message.content is None:
                    message.content = _result_text(part.get("response"))
        messages.append(message)
    return messages


def _parts_text(parts: Iterable[Any]) -> str | None:
    texts = [
        part["content"]
        for part in parts
        if isinstance(part, dict)
        and part.get("type") == "text"
        and isinstance(part.get("content"), str)
    ]
    return "".join(texts) if texts else None


def _role_events(events: list[_Event]) -> list[_Message]:
    """Input messages written as one event each (``gen_ai.user.message``, ...)."""
    messages: list[_Message] = []
    for name, body, _ in events:
        role = _ROLE_EVENTS.get(name or "")
        if role is not None:
            messages.append(_openai_message(body if isinstance(body, dict) else {}, role))
    return messages


def _choice_events(events: list[_Event]) -> list[_Message]:
    messages: list[_Message] = []
    for name, body, _ in events:
        if name == "gen_ai.choice" and isinstance(body, dict):
            message = body.get("message")
            message = message if isinstance(message, dict) else body
            messages.append(_openai_message(message, "assistant"))
    return messages


def _content_event(events: list[_Event], event: str, key: str) -> list[_Message]:
    for name, _, attributes in events:
        if name == event:
            return [
                _openai_message(raw, "user" if key == "gen_ai.prompt" else "assistant")
                for raw in _as_list(attributes.get(key))
                if isinstance(raw, dict)
            ]
    return []


def _openai_message(body: dict[str, Any], default_role: str) -> _Message:
    """A message in OpenAI's chat shape, as the older GenAI events carry it."""
    role = _text(body.get("role")) or default_role
    content = body.get("content")
    message = _Message(role=role, content=_content_text(content), name=_text(body.get("name")))
    tool_calls = body.get("tool_calls")
    for raw in tool_calls if isinstance(tool_calls, list) else []:
        function = raw.get("function") if isinstance(raw, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            message.tool_calls.append(
                _requested(function["name"], raw.get("id"), function.get("arguments"))
            )
    call_id = body.get("tool_call_id", body.get("id")) if role == "tool" else None
    if isinstance(call_id, str):
        message.tool_call_id = call_id
        message.result = decode_json_text(content)[0]
    return message


def _content_text(content: Any) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts
        texts = [
            p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
        ]
        return "".join(texts) if texts else None
    return _result_text(content)


def _indexed(attributes: dict[str, Any], kind: str) -> list[_Message]:
    """OpenLLMetry's flattened ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*``."""
    fields: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        match = _INDEXED.fullmatch(key)
        if match is not None and match.group(1) == kind:
            fields.setdefault(int(match.group(2)), {})[match.group(3)] = value
    messages: list[_Message] = []
    for index in sorted(fields):
        entry = fields[index]
        message = _Message(
            role=_text(entry.get("role")) or ("user" if kind == "prompt" else "assistant"),
            content=_content_text(entry.get("content")),
        )
        calls: dict[int, dict[str, Any]] = {}
        for key, value in entry.items():
            parts = key.split(".")
            if len(parts) == 3 and parts[0] == "tool_calls" and parts[1].isdigit():
                calls.setdefault(int(parts[1]), {})[parts[2]] = value
        for call_index in sorted(calls):
            call = calls[call_index]
            if isinstance(call.get("name"), str):
                message.tool_calls.append(
                    _requested(call["name"], call.get("id"), call.get("arguments"))
                )
        if isinstance(entry.get("tool_call_id"), str):
            message.tool_call_id = entry["tool_call_id"]
            message.result = decode_json_text(entry.get("content"))[0]
        messages.append(message)
    return messages


def _requested(name: str, call_id: Any, arguments: Any) -> RequestedToolCall:
    decoded, error = decode_json_text(arguments)
    return RequestedToolCall(
        name=clip(name, MAX_NAME_CHARS),
        call_id=clip(call_id, MAX_NAME_CHARS) if isinstance(call_id, str) else None,
        arguments=decoded,
        arguments_error=f"the arguments are {error}" if error else None,
    )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _result_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)
