"""Import OTLP traces of GenAI instrumentations (OpenTelemetry GenAI conventions) as trajectories.

The spans come decoded by :mod:`~arbiter.trajectories.spans` (OTLP JSON or protobuf), with
the log records that older instrumentations write the chat messages into. What a span is
comes from ``gen_ai.operation.name`` (else from its span name's first word, else from the
GenAI attributes it carries). How they map:

- each outermost ``invoke_agent`` span is a trajectory; an ``invoke_agent`` span inside it
  is a ``handoff`` step holding the sub-agent's own trajectory. A trace without one gives
  a trajectory per root span. Spans outside every agent are not part of any run;
- ``chat``, ``text_completion``, ``generate_content`` and ``embeddings`` are ``llm_call``
  steps: ``gen_ai.response.model`` (else ``gen_ai.request.model``), tokens from
  ``gen_ai.usage.input_tokens`` / ``output_tokens`` (or the older ``prompt_tokens`` /
  ``completion_tokens``), cost only from a ``gen_ai.usage.cost`` attribute, the error from
  the span's status, and the messages wherever the instrumentation wrote them
  (:mod:`~arbiter.trajectories.otlp_messages`);
- ``execute_tool`` is a ``tool_call``: ``gen_ai.tool.name``, ``gen_ai.tool.call.id``,
  ``gen_ai.tool.call.arguments`` / ``.result`` (JSON texts decoded), the error from the
  status or ``error.type``;
- a tool call in a model's output that no ``execute_tool`` span records (a plain
  instrumented client records none) is a ``tool_call`` step right after the model call,
  its result taken from a later ``tool`` message with the same call id;
- ``retrieval`` is a ``retrieval``: ``gen_ai.retrieval.query.text`` and the
  ``gen_ai.retrieval.documents`` (``id`` the source, ``score`` the similarity, ``content``);
- every other span is a container whose children are walked in start order.

The agent is ``gen_ai.agent.name`` / ``.version`` (``gen_ai.agent.id`` in the metadata;
the resource's ``service.name`` when no name is given), the conversation
``gen_ai.conversation.id``. The final answer is the last assistant text of the agent
span's ``gen_ai.output.messages``, else of the run's last model call. The run is
``error`` when its root span's status is ``ERROR``, else ``completed``. A trace with no
content captured imports too: model, tokens and tool names, without messages.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

from arbiter.contract import Trajectory
from arbiter.contract.trajectory import MAX_NAME_CHARS, MAX_STEPS
from arbiter.datasets.jsonio import parse_json, read_text
from arbiter.errors import InputError
from arbiter.trajectories.otlp_messages import (
    RequestedToolCall,
    clip,
    decode_json_text,
    model_messages,
)
from arbiter.trajectories.spans import (
    MAX_BODY_BYTES,
    LogRecord,
    Span,
    SpanTree,
    decode_otlp_json,
    decode_otlp_protobuf,
    group_by_trace,
    read_otlp_json_lines,
    span_tree,
)
from arbiter.validation import validate_document

__all__ = [
    "JSON_FORMAT",
    "MAX_AGENT_DEPTH",
    "PROTOBUF_FORMAT",
    "import_otlp",
    "load_otlp",
    "looks_like_genai",
    "trajectories_from_spans",
]

JSON_FORMAT = "otlp_json"
"""The ``source.format`` of trajectories imported from OTLP JSON."""
PROTOBUF_FORMAT = "otlp_protobuf"
"""The ``source.format`` of trajectories imported from OTLP protobuf."""
MAX_AGENT_DEPTH = 64
"""Deepest nesting of agents (hand-offs) accepted in one trace."""

_OPERATION = "gen_ai.operation.name"
_MODEL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content", "embeddings"})
_KNOWN = _MODEL_OPERATIONS | {"invoke_agent", "execute_tool", "retrieval", "create_agent"}
_PROTOBUF_TYPES = frozenset({"application/x-protobuf", "application/protobuf"})
_PROTOBUF_SUFFIXES = frozenset({".pb", ".binpb", ".protobuf"})
_BODY = "request body"


def looks_like_genai(spans: Iterable[Span]) -> bool:
    """Whether any span carries a ``gen_ai.*`` attribute (for format detection)."""
    return any(key.startswith("gen_ai.") for span in spans for key in span.attributes)


def load_otlp(path: str | os.PathLike[str]) -> list[Trajectory]:
    """The trajectories of an OTLP trace file.

    ``.pb`` / ``.binpb`` files hold one protobuf ``ExportTraceServiceRequest``; any other
    file is OTLP JSON (the collector's file exporter: one export request a line, or one
    request as a whole document) when its first byte is ``{``, else protobuf.

    Raises:
        InputError: The file cannot be read or decoded (``file:line: why``).
    """
    file = Path(path)
    where = str(file)
    if file.suffix.lower() not in _PROTOBUF_SUFFIXES and _starts_like_json(file):
        spans, logs = read_otlp_json_lines(read_text(file, what="trace file"), source=where)
        return trajectories_from_spans(spans, logs, source_format=JSON_FORMAT, file=where)
    spans, logs = decode_otlp_protobuf(_read_bytes(file), where=where)
    return trajectories_from_spans(spans, logs, source_format=PROTOBUF_FORMAT, file=where)


def import_otlp(
    body: bytes, content_type: str, *, content_encoding: str | None = None
) -> list[Trajectory]:
    """The trajectories of one OTLP/HTTP ``POST /v1/traces`` request body.

    Args:
        body: The request body.
        content_type: Its ``Content-Type``: ``application/x-protobuf`` or
            ``application/json`` (parameters such as ``charset`` are ignored).
        content_encoding: Its ``Content-Encoding``: ``gzip``, ``identity`` or None.

    Raises:
        InputError: An unsupported type or encoding, or a body that is not a valid export
            request (``request body: why``).
    """
    media = content_type.split(";", 1)[0].strip().lower()
    body = _decompressed(body, content_encoding)
    if media in _PROTOBUF_TYPES:
        spans, logs = decode_otlp_protobuf(body, where=_BODY)
        return trajectories_from_spans(spans, logs, source_format=PROTOBUF_FORMAT)
    if media != "application/json":
        raise InputError(
            f"{_BODY}: unsupported content type {content_type[:80]!r}; "
            "expected application/x-protobuf or application/json"
        )
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{_BODY}: byte {exc.start} is not valid UTF-8") from None
    spans, logs = decode_otlp_json(parse_json(text, source=_BODY), where=_BODY)
    return trajectories_from_spans(spans, logs, source_format=JSON_FORMAT)


def trajectories_from_spans(
    spans: Sequence[Span],
    logs: Iterable[LogRecord] = (),
    *,
    source_format: str,
    file: str | None = None,
) -> list[Trajectory]:
    """The trajectories of GenAI spans, trace by trace in the order first seen.

    Args:
        spans: Decoded spans of any number of traces, in any order.
        logs: Log records; those linked to a span by its id lend it their chat messages.
        source_format: The ``source.format`` to record (``otlp_json``, ``otlp_protobuf``).
        file: The file they were read from, for ``source.file`` and messages.

    Raises:
        InputError: A run is too large or too deeply nested (``file: trace .. span ..: why``).
    """
    linked: dict[str, list[LogRecord]] = {}
    for log in logs:
        if log.span_id is not None and log.event_name is not None:
            linked.setdefault(log.span_id, []).append(log)
    trajectories: list[Trajectory] = []
    for trace_spans in group_by_trace(spans).values():
        tree = span_tree(_unique(trace_spans))
        run = _Run(tree, linked, source_format, file)
        for root in _run_roots(tree):
            document = run.document(root, depth=0)
            where = _where(file, root)
            trajectories.append(validate_document(Trajectory, document, where=where))
    return trajectories


def _unique(spans: list[Span]) -> list[Span]:
    """The spans without repeats of a span id (an exporter's retry writes a batch twice)."""
    seen: set[str] = set()
    unique = []
    for span in spans:
        if span.span_id not in seen:
            seen.add(span.span_id)
            unique.append(span)
    return unique


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


def _run_roots(tree: SpanTree) -> Iterator[Span]:
    """The outermost ``invoke_agent`` spans under each root; a root without any is a run."""
    for root in tree.roots:
        agents: list[Span] = []
        stack = [root]
        while stack:
            span = stack.pop()
            if operation(span) == "invoke_agent":
                agents.append(span)
            else:
                stack.extend(reversed(tree.children_of(span)))
        yield from agents or [root]


def _where(file: str | None, span: Span) -> str:
    return f"{file or _BODY}: trace {span.trace_id} span {span.span_id}"


def _fail(file: str | None, span: Span, why: str) -> NoReturn:
    raise InputError(f"{_where(file, span)}: {why}")


class _Run:
    """Builds the trajectory document of one run root, its sub-agents as hand-offs."""

    def __init__(
        self,
        tree: SpanTree,
        linked: dict[str, list[LogRecord]],
        source_format: str,
        file: str | None,
    ) -> None:
        self.tree, self.linked, self.format, self.file = tree, linked, source_format, file

    def document(self, root: Span, *, depth: int) -> dict[str, Any]:
        if depth > MAX_AGENT_DEPTH:
            _fail(self.file, root, f"agents nested deeper than {MAX_AGENT_DEPTH}")
        steps = _Steps()
        for span in self._walk(root):
            kind = operation(span)
            if kind == "invoke_agent":
                steps.add(span, {"kind": "handoff", "id": span.span_id, **_times(span)})
                steps.steps[-1]["trajectory"] = self.document(span, depth=depth + 1)
            elif kind in _MODEL_OPERATIONS:
                steps.model_call(span, self.linked.get(span.span_id, []))
            elif kind == "execute_tool":
                steps.add(span, _tool_call(span))
            elif kind == "retrieval":
                steps.add(span, _retrieval(span))
            if len(steps.steps) > MAX_STEPS:
                _fail(self.file, root, f"the run has more than {MAX_STEPS:,} steps")
        steps.attach_requested_tool_calls()
        attributes = root.attributes
        answer = _answer(root) or steps.last_answer
        agent_name = _text(attributes.get("gen_ai.agent.name"))
        if agent_name is None and operation(root) == "invoke_agent":
            agent_name = root.name.removeprefix("invoke_agent").strip() or None
        document: dict[str, Any] = {
            "id": root.span_id,
            "agent": {
                "name": agent_name or _text(root.resource.get("service.name")),
                "version": _text(attributes.get("gen_ai.agent.version")),
            },
            "conversation_id": _text(attributes.get("gen_ai.conversation.id"))
            or steps.conversation_id,
            "steps": steps.steps,
            "final_answer": answer,
            "status": "error" if root.error else "completed",
            "error": clip(root.error) if root.error else None,
            **_times(root),
            "source": {
                "format": self.format,
                "file": self.file,
                "trace_id": root.trace_id,
                "span_ids": [root.span_id, *steps.span_ids][:MAX_STEPS],
            },
        }
        metadata = {
            "agent_id": _text(attributes.get("gen_ai.agent.id")),
            "agent_description": _text(attributes.get("gen_ai.agent.description")),
            "provider": _text(attributes.get("gen_ai.provider.name"))
            or _text(attributes.get("gen_ai.system")),
            "service_name": _text(root.resource.get("service.name")),
        }
        document["metadata"] = {key: value for key, value in metadata.items() if value}
        return document

    def _walk(self, root: Span) -> Iterator[Span]:
        """The run's spans in start order, not descending into sub-agents.

        A root that is no agent is walked too: a bare instrumented client's model call is
        a trace of one span.
        """
        if operation(root) != "invoke_agent":
            yield root
        stack = [iter(self.tree.children_of(root))]
        while stack:
            span = next(stack[-1], None)
            if span is None:
                stack.pop()
                continue
            yield span
            if operation(span) != "invoke_agent":
                stack.append(iter(self.tree.children_of(span)))


class _Steps:
    """The steps of one run as they are found, and what the model calls asked for."""

    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []
        self.span_ids: list[str] = []
        self.conversation_id: str | None = None
        self.last_answer: str | None = None
        self._requested: list[tuple[int, RequestedToolCall]] = []  # (after step i, call)
        self._results: dict[str, Any] = {}  # call id -> result, from later tool messages

    def add(self, span: Span, step: dict[str, Any]) -> None:
        self.steps.append(step)
        self.span_ids.append(span.span_id)
        if self.conversation_id is None:
            self.conversation_id = _text(span.attributes.get("gen_ai.conversation.id"))

    def model_call(self, span: Span, logs: Sequence[LogRecord]) -> None:
        attributes = span.attributes
        messages = model_messages(span, logs)
        model = _text(attributes.get("gen_ai.response.model")) or _text(
            attributes.get("gen_ai.request.model")
        )
        step: dict[str, Any] = {
            "kind": "llm_call",
            "id": span.span_id,
            "model": clip(model, MAX_NAME_CHARS) if model else None,
            "input_messages": messages.input[:MAX_STEPS],
            "output_messages": messages.output[:MAX_STEPS],
            "input_tokens": _count(attributes, "input_tokens", "prompt_tokens"),
            "output_tokens": _count(attributes, "output_tokens", "completion_tokens"),
            "cost_usd": _cost(attributes),
            "error": clip(span.error) if span.error else None,
            **_times(span),
        }
        self.add(span, step)
        self._requested.extend((len(self.steps) - 1, call) for call in messages.tool_calls)
        self._results.update(messages.tool_results)
        if messages.output:
            self.last_answer = _last_assistant_text(messages.output)

    def attach_requested_tool_calls(self) -> None:
        """Tool calls only the model's output records become steps after their model call.

        A requested call that an ``execute_tool`` span records (same call id, else the same
        tool name not yet matched) is that span's step, lending it arguments and result
        it lacks.
        """
        spans = [s for s in self.steps if s["kind"] == "tool_call"]
        by_id = {s["call_id"]: s for s in spans if s.get("call_id") is not None}
        unmatched = [s for s in spans if s.get("call_id") is None]
        inserts: dict[int, list[dict[str, Any]]] = {}
        for index, call in self._requested:
            recorded = by_id.get(call.call_id) if call.call_id is not None else None
            if recorded is None:
                recorded = next((s for s in unmatched if s["name"] == call.name), None)
                if recorded is not None:
                    unmatched.remove(recorded)
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


def _tool_call(span: Span) -> dict[str, Any]:
    attributes = span.attributes
    name = _text(attributes.get("gen_ai.tool.name")) or (
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
        **_times(span),
    }


def _retrieval(span: Span) -> dict[str, Any]:
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
                "similarity": float(score)
                if isinstance(score, int | float) and not isinstance(score, bool)
                else None,
            }
        )
    query = _text(attributes.get("gen_ai.retrieval.query.text"))
    return {
        "kind": "retrieval",
        "id": span.span_id,
        "query": clip(query) if query else None,
        "chunks": chunks,
        **_times(span),
    }


def _answer(root: Span) -> str | None:
    """The last assistant text of the agent span's own ``gen_ai.output.messages``."""
    if operation(root) != "invoke_agent":
        return None
    return _last_assistant_text(model_messages(root, ()).output)


def _last_assistant_text(messages: list[dict[str, Any]]) -> str | None:
    for message in reversed(messages):
        content = message.get("content")
        if message["role"] == "assistant" and isinstance(content, str) and content.strip():
            return content
    return None


def _times(span: Span) -> dict[str, Any]:
    return {"started_at": span.started_at, "ended_at": span.ended_at}


def _text(value: Any) -> str | None:
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
    value = attributes.get("gen_ai.usage.cost")
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    return None


def _decompressed(body: bytes, encoding: str | None) -> bytes:
    """The body without its ``Content-Encoding``, never inflated past the size cap."""
    name = (encoding or "identity").strip().lower()
    if name == "identity":
        return body
    if name != "gzip":
        raise InputError(f"{_BODY}: unsupported content encoding {name[:40]!r}; expected gzip")
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        data = inflater.decompress(body, MAX_BODY_BYTES + 1)
    except zlib.error as exc:
        raise InputError(f"{_BODY}: not valid gzip ({exc})") from None
    if len(data) > MAX_BODY_BYTES or inflater.unconsumed_tail:
        raise InputError(f"{_BODY}: inflates past {MAX_BODY_BYTES:,} bytes")
    if not inflater.eof:
        raise InputError(f"{_BODY}: the gzip stream is truncated")
    return data


def _starts_like_json(file: Path) -> bool:
    try:
        with file.open("rb") as stream:
            head = stream.read(64).lstrip(b"\xef\xbb\xbf \t\r\n")
    except OSError:
        return True  # read_text names the problem
    return head[:1] in (b"{", b"")


def _read_bytes(file: Path) -> bytes:
    try:
        size = file.stat().st_size
        if not file.is_file():
            raise InputError(f"{file}: not a regular file")
        if size > MAX_BODY_BYTES:
            raise InputError(f"{file}: {size:,} bytes; at most {MAX_BODY_BYTES:,} are accepted")
        return file.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{file}: no such file") from None
    except OSError as exc:
        raise InputError(f"{file}: cannot read the trace file: {exc.strerror or exc}") from None
