"""Import OpenInference spans (Arize Phoenix's conventions) as trajectories.

OpenInference spans are OTLP spans whose ``openinference.span.kind`` attribute says what
they are; lists are flattened into indexed keys (``llm.input_messages.0.message.role``).
The spans come decoded by :mod:`~arbiter.trajectories.spans`, from OTLP JSON lines or
protobuf alike. How they map:

- each outermost ``AGENT`` span is a trajectory (a trace without one: each root span;
  spans outside every agent of a trace that has one belong to no run); an ``AGENT`` span
  inside it is a ``handoff`` step holding the sub-agent's trajectory;
- ``LLM`` is an ``llm_call`` (``llm.model_name``, ``llm.input_messages`` /
  ``llm.output_messages``, ``llm.token_count.prompt`` / ``.completion``, ``llm.cost.total``);
- ``TOOL`` is a ``tool_call``: ``tool.name``, ``tool.id`` as the call id, the arguments
  from ``input.value``, the result from ``output.value`` (JSON texts decoded). OpenInference's
  own SDK writes the tool's JSON *schema* into ``tool.parameters``, so that attribute is read
  as the arguments only when ``input.value`` is absent and it is not a schema;
- a tool call in an LLM's output messages that no ``TOOL`` span answers (instrumented
  clients such as ``openinference-instrumentation-openai`` record no tool spans) is a
  ``tool_call`` step right after the LLM call, its result taken from a later ``tool``
  message with the same ``tool_call_id`` (decoded when it is JSON);
- ``RETRIEVER`` is a ``retrieval`` (``input.value`` as the query, ``retrieval.documents``
  as chunks: ``document.id`` the source, ``document.score`` the similarity); ``RERANKER``
  too, from ``reranker.query`` and ``reranker.output_documents``;
- every other span (``CHAIN``, ``GUARDRAIL``, spans without a kind) is a container whose
  children are walked in start order; ``EMBEDDING`` spans are left out.

The final answer is the root's ``output.value`` when it is text, else the last assistant
message with text. The run's status is ``error`` when the root span failed, ``completed``
when there is an answer, else ``incomplete``.

A span whose attributes break these conventions is an :class:`~arbiter.errors.InputError`
naming the file, the span id and the attribute.
"""

from __future__ import annotations

import json
import os
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from arbiter.contract import Trajectory
from arbiter.datasets.jsonio import json_type, read_text
from arbiter.errors import InputError
from arbiter.trajectories.formats import (
    MATCH,
    ImportedRun,
    ImportOptions,
    SpanReading,
    TrajectoryFormat,
    numbered_runs,
    record_runs,
)
from arbiter.trajectories.openinference_attributes import SpanReader, decoded, span_where
from arbiter.trajectories.spans import (
    LogRecord,
    Span,
    SpanTree,
    decode_otlp_protobuf,
    group_by_trace,
    read_otlp_json_lines,
    span_tree,
)
from arbiter.validation import validate_document

__all__ = [
    "FORMAT",
    "MAX_AGENT_DEPTH",
    "TRAJECTORY_FORMAT",
    "load_openinference",
    "looks_like_openinference",
    "trajectories_from_openinference",
]

FORMAT = "openinference"
"""The ``source.format`` of the trajectories this importer makes."""

MAX_AGENT_DEPTH = 64
"""Deepest nesting of agents (hand-offs) accepted in one trace."""

SPAN_KIND = "openinference.span.kind"
_MODEL_KEYS = ("llm.model_name", "llm.response.model_name", "llm.request.model_name")
_STEP_KINDS = frozenset({"LLM", "TOOL", "RETRIEVER", "RERANKER", "EMBEDDING"})


def looks_like_openinference(spans: Iterable[Span]) -> bool:
    """Whether any span carries ``openinference.span.kind`` (for format detection)."""
    return any(SPAN_KIND in span.attributes for span in spans)


def load_openinference(path: str | os.PathLike[str]) -> list[Trajectory]:
    """The trajectories of an OTLP file of OpenInference spans.

    The file is OTLP JSON (the collector's file exporter: one export request a line) or
    one protobuf ``ExportTraceServiceRequest``; which is told from its first byte.

    Raises:
        InputError: The file cannot be read or decoded, or a span breaks the conventions.
    """
    file = Path(path)
    try:
        with file.open("rb") as stream:
            head = stream.read(64).lstrip(b"\xef\xbb\xbf \t\r\n")
    except OSError as exc:
        raise InputError(f"{file}: cannot read the trace file: {exc.strerror or exc}") from None
    if head[:1] in (b"{", b""):
        spans, _ = read_otlp_json_lines(read_text(file, what="trace file"), source=str(file))
    else:
        try:
            body = file.read_bytes()
        except OSError as exc:
            raise InputError(f"{file}: cannot read the trace file: {exc.strerror or exc}") from None
        spans, _ = decode_otlp_protobuf(body, where=str(file))
    return trajectories_from_openinference(spans, file=str(file))


def trajectories_from_openinference(
    spans: Sequence[Span], *, file: str | None = None
) -> list[Trajectory]:
    """The trajectories of OpenInference spans, trace by trace in the order first seen.

    Args:
        spans: Decoded spans of any number of traces, in any order.
        file: The file they were read from, for ``source.file`` and messages.

    Raises:
        InputError: A span breaks the conventions (``file: span <id>: attribute: why``).
    """
    trajectories: list[Trajectory] = []
    for trace_spans in group_by_trace(spans).values():
        tree = span_tree(trace_spans)
        for root in tree.run_roots(lambda span: _kind(span) == "AGENT"):
            document = _Run(tree, file).document(root, depth=0)
            trajectories.append(
                validate_document(Trajectory, document, where=span_where(file, root))
            )
    return trajectories


def _kind(span: Span) -> str | None:
    kind = span.attributes.get(SPAN_KIND)
    return kind.upper() if isinstance(kind, str) else None


class _Run:
    """Builds the trajectory document of one run root, its sub-agents as hand-offs."""

    def __init__(self, tree: SpanTree, file: str | None) -> None:
        self.tree, self.file = tree, file

    def document(self, root: Span, *, depth: int) -> dict[str, Any]:
        if depth > MAX_AGENT_DEPTH:
            SpanReader(root, self.file).fail(f"agents nested deeper than {MAX_AGENT_DEPTH}")
        scope = _Scope(self, root)
        # A root that is itself a step (a lone LLM call) is the run's one step.
        for span in [root] if _kind(root) in _STEP_KINDS else self._walk(root):
            scope.add(span, depth)
        scope.attach_tool_calls()
        reader = SpanReader(root, self.file)
        answer = _final_answer(root, self.file, scope.steps)
        document: dict[str, Any] = {
            "id": root.span_id,
            "agent": {"name": reader.text("agent.name") or _agent_name(root)},
            "conversation_id": scope.session_id,
            "steps": scope.steps,
            "final_answer": answer,
            "status": "error" if root.error else ("completed" if answer else "incomplete"),
            "error": root.error,
            "started_at": root.started_at,
            "ended_at": root.ended_at,
            "source": {
                "format": FORMAT,
                "file": self.file,
                "trace_id": root.trace_id,
                "span_ids": scope.span_ids,
            },
        }
        user = reader.text("user.id")
        if user is not None:
            document["metadata"] = {"user_id": user}
        return document

    def _walk(self, root: Span) -> Iterator[Span]:
        """The run's spans below ``root`` in start order, not descending into steps."""
        stack = [iter(self.tree.children_of(root))]
        while stack:
            span = next(stack[-1], None)
            if span is None:
                stack.pop()
                continue
            yield span
            if _kind(span) not in _STEP_KINDS and _kind(span) != "AGENT":
                stack.append(iter(self.tree.children_of(span)))


def _agent_name(root: Span) -> str | None:
    return (root.name or None) if _kind(root) == "AGENT" else None


class _Scope:
    """The steps of one agent, in order, and the tool calls its LLM calls asked for."""

    def __init__(self, run: _Run, root: Span) -> None:
        self.run, self.file = run, run.file
        self.steps: list[dict[str, Any]] = []
        self.span_ids = [] if _kind(root) in _STEP_KINDS else [root.span_id]
        self.session_id = SpanReader(root, run.file).text("session.id")
        self._asked: list[tuple[int, list[dict[str, Any]]]] = []  # (llm step, its calls)
        self._results: dict[str, str | None] = {}  # tool_call_id -> tool message content
        self._tool_steps: list[int] = []  # indices of the steps made from TOOL spans

    def add(self, span: Span, depth: int) -> None:
        kind = _kind(span)
        reader = SpanReader(span, self.file)
        self.span_ids.append(span.span_id)
        if self.session_id is None:
            self.session_id = reader.text("session.id")
        if kind == "AGENT":
            handoff = {"kind": "handoff", "id": span.span_id, **_times(span)}
            self.steps.append({**handoff, "trajectory": self.run.document(span, depth=depth + 1)})
        elif kind == "LLM":
            self.steps.append(self._llm_call(reader))
        elif kind == "TOOL":
            self._tool_steps.append(len(self.steps))
            self.steps.append(_tool_call(reader))
        elif kind == "RETRIEVER":
            self.steps.append(_retrieval(reader, "retrieval.documents", reader.io("input")))
        elif kind == "RERANKER":
            query = reader.text("reranker.query")
            self.steps.append(_retrieval(reader, "reranker.output_documents", query))

    def _llm_call(self, reader: SpanReader) -> dict[str, Any]:
        inputs = reader.messages("llm.input_messages")
        outputs = reader.messages("llm.output_messages")
        for call_id, content in inputs.results.items():
            self._results.setdefault(call_id, content)
        if outputs.tool_calls:
            self._asked.append((len(self.steps), outputs.tool_calls))
        models = (reader.text(key) for key in _MODEL_KEYS)
        return {
            "kind": "llm_call",
            "id": reader.span.span_id,
            "model": next((model for model in models if model is not None), None),
            "input_messages": inputs.messages,
            "output_messages": outputs.messages,
            "input_tokens": reader.count("llm.token_count.prompt"),
            "output_tokens": reader.count("llm.token_count.completion"),
            "cost_usd": reader.number("llm.cost.total"),
            "error": reader.span.error,
            **_times(reader.span),
        }

    def attach_tool_calls(self) -> None:
        """Tie asked-for tool calls to TOOL spans; insert those no span answers."""
        by_id: dict[str, deque[int]] = {}  # TOOL steps with a call id, in order
        by_name: dict[str, deque[int]] = {}  # the others, by tool name
        for index in self._tool_steps:
            step = self.steps[index]
            if step.get("call_id"):
                by_id.setdefault(step["call_id"], deque()).append(index)
            else:
                by_name.setdefault(step["name"], deque()).append(index)
        inserted: dict[int, list[dict[str, Any]]] = {}
        for llm_index, calls in self._asked:
            for call in calls:
                answered = _first_after(by_id.get(call["call_id"] or ""), llm_index)
                if answered is None:
                    answered = _first_after(by_name.get(call["name"]), llm_index)
                if answered is not None:
                    self.steps[answered].setdefault("call_id", call["call_id"])
                    continue
                if call["call_id"] in self._results:
                    call["result"] = decoded(self._results[call["call_id"]], None)
                inserted.setdefault(llm_index, []).append(call)
        if inserted:
            steps: list[dict[str, Any]] = []
            for index, step in enumerate(self.steps):
                steps.append(step)
                steps.extend(inserted.get(index, ()))
            self.steps[:] = steps


def _first_after(queue: deque[int] | None, position: int) -> int | None:
    """Pop and return the first index after ``position`` (earlier ones answer nothing later)."""
    while queue:
        index = queue.popleft()
        if index > position:
            return index
    return None


def _times(span: Span) -> dict[str, Any]:
    return {"started_at": span.started_at, "ended_at": span.ended_at}


def _tool_call(reader: SpanReader) -> dict[str, Any]:
    attributes, span = reader.attributes, reader.span
    arguments = reader.io("input")
    if "input.value" not in attributes and "tool.parameters" in attributes:
        parameters = decoded(attributes["tool.parameters"], None)
        if not _is_json_schema(parameters):
            arguments = parameters
    step: dict[str, Any] = {
        "kind": "tool_call",
        "id": span.span_id,
        "name": reader.text("tool.name") or span.name,
        "arguments": arguments,
        "result": reader.io("output"),
        "error": span.error,
        **_times(span),
    }
    call_id = reader.text("tool.id")
    if call_id is not None:
        step["call_id"] = call_id
    return step


def _is_json_schema(value: Any) -> bool:
    return isinstance(value, dict) and value.get("type") == "object" and "properties" in value


def _retrieval(reader: SpanReader, key: str, query: Any) -> dict[str, Any]:
    chunks = []
    for index, document in enumerate(reader.indexed(key)):
        at = f"{key}.{index}.document"
        source = document.get("document.id")
        if source is not None and (isinstance(source, bool) or not isinstance(source, str | int)):
            reader.fail(f"{at}.id: must be a string or an integer, got {json_type(source)}")
        score = document.get("document.score")
        if score is not None and (isinstance(score, bool) or not isinstance(score, int | float)):
            reader.fail(f"{at}.score: must be a number, got {json_type(score)}")
        chunks.append(
            {
                "source": None if source is None else str(source),
                "text": reader.string(f"{at}.content", document.get("document.content")),
                "similarity": None if score is None else float(score),
            }
        )
    if query is not None and not isinstance(query, str):
        query = json.dumps(query, ensure_ascii=False)  # a structured query, shown as JSON
    return {
        "kind": "retrieval",
        "id": reader.span.span_id,
        "query": query,
        "chunks": chunks,
        **_times(reader.span),
    }


def _final_answer(root: Span, file: str | None, steps: list[dict[str, Any]]) -> str | None:
    output = SpanReader(root, file).io("output")
    if isinstance(output, str) and output.strip():
        return output
    for step in reversed(steps):
        if step["kind"] != "llm_call":
            continue
        for message in reversed(step["output_messages"]):
            content = message.get("content")
            if message["role"] == "assistant" and content and content.strip():
                return str(content)
    return None


_SPECIFIC = MATCH + 0.5  # OpenInference spans are OTLP spans that also say their kind


def _read_file(file: Path, options: ImportOptions) -> Iterator[ImportedRun]:
    return numbered_runs(load_openinference(file), file, FORMAT)


def _read_record(record: Any, options: ImportOptions) -> list[ImportedRun]:
    from arbiter.trajectories.spans import decode_otlp_json

    spans, _ = decode_otlp_json(record, where=options.source)
    return record_runs(trajectories_from_openinference(spans), FORMAT, options.source)


def _resemblance(record: Any) -> float:
    if not (isinstance(record, dict) and "resourceSpans" in record):
        return 0.0
    return _SPECIFIC if _has_kind_attribute(record) else 0.0


def _has_kind_attribute(request: dict[str, Any]) -> bool:
    """Whether a span of a parsed export request carries ``openinference.span.kind``."""
    for resource in _dicts(request.get("resourceSpans")):
        for scope in _dicts(resource.get("scopeSpans")):
            for span in _dicts(scope.get("spans")):
                if any(a.get("key") == SPAN_KIND for a in _dicts(span.get("attributes"))):
                    return True
    return False


def _dicts(value: Any) -> Iterator[dict[str, Any]]:
    return (
        (item for item in value if isinstance(item, dict)) if isinstance(value, list) else iter(())
    )


def _claims(spans: Sequence[Span]) -> float:
    return _SPECIFIC if looks_like_openinference(spans) else 0.0


def _read_spans(
    spans: Sequence[Span], logs: Sequence[LogRecord], source_format: str
) -> list[Trajectory]:
    return trajectories_from_openinference(spans)


TRAJECTORY_FORMAT = TrajectoryFormat(
    name=FORMAT,
    summary="OpenInference spans (`openinference.span.kind` AGENT / TOOL / LLM / RETRIEVER ...)",
    read_file=_read_file,
    read_record=_read_record,
    resemblance=_resemblance,
    spans=SpanReading(claims=_claims, read=_read_spans),
)
"""The ``openinference`` trajectory format."""
