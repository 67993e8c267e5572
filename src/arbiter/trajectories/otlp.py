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
- every other span (``execute_tool`` included) is a container whose children are walked
  in start order; a model call's children (its HTTP spans, or a second instrumentation
  of the same call) are not steps.

The agent is ``gen_ai.agent.name`` / ``.version`` (``gen_ai.agent.id`` in the metadata;
the resource's ``service.name`` when no name is given), the conversation
``gen_ai.conversation.id``. The final answer is the last assistant text of the agent
span's ``gen_ai.output.messages``, else of the run's last model call. The run is
``error`` when its root span's status is ``ERROR``, else ``completed``. A trace with no
content captured imports too: model, tokens and tool names, without messages.
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal, NoReturn

from arbiter.contract import Trajectory
from arbiter.contract.trajectory import MAX_STEPS
from arbiter.datasets.jsonio import parse_json
from arbiter.errors import InputError
from arbiter.trajectories.formats import (
    MATCH,
    ImportedRun,
    ImportOptions,
    SpanReading,
    TrajectoryFormat,
    TrajectoryFormatRegistry,
    numbered_runs,
    record_runs,
)
from arbiter.trajectories.otlp_messages import clip, model_messages
from arbiter.trajectories.otlp_steps import (
    MODEL_OPERATIONS,
    RunSteps,
    last_assistant_text,
    name_text,
    operation,
    retrieval_step,
    span_times,
    tool_call_step,
)
from arbiter.trajectories.spans import (
    MAX_BODY_BYTES,
    LogRecord,
    Rejected,
    Span,
    SpanTree,
    decode_otlp_json,
    decode_otlp_protobuf,
    group_by_trace,
    span_tree,
)
from arbiter.validation import validate_document

__all__ = [
    "JSON_FORMAT",
    "MAX_AGENT_DEPTH",
    "PROTOBUF_FORMAT",
    "TRAJECTORY_FORMAT",
    "body_format",
    "decode_otlp_body",
    "export_response",
    "import_otlp",
    "iter_otlp",
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

_PROTOBUF_TYPES = frozenset({"application/x-protobuf", "application/protobuf"})
_PROTOBUF_SUFFIXES = frozenset({".pb", ".binpb", ".protobuf"})
_BODY = "request body"


def looks_like_genai(spans: Iterable[Span]) -> bool:
    """Whether any span carries a ``gen_ai.*`` attribute (for format detection)."""
    return any(key.startswith("gen_ai.") for span in spans for key in span.attributes)


def load_otlp(path: str | os.PathLike[str]) -> list[Trajectory]:
    """The trajectories of an OTLP trace file (see :func:`iter_otlp`), all at once."""
    return list(iter_otlp(path))


def iter_otlp(path: str | os.PathLike[str]) -> Iterator[Trajectory]:
    """The trajectories of an OTLP trace file, one trace at a time.

    ``.pb`` / ``.binpb`` files hold one protobuf ``ExportTraceServiceRequest``; any other
    file is OTLP JSON (the collector's file exporter: one export request a line, read a
    trace at a time without holding the file; or one request as a whole document) when
    its first byte is ``{``, else protobuf.

    Raises:
        InputError: The file cannot be read or decoded (``file:line: why``).
    """
    from arbiter.trajectories.otlp_stream import iter_otlp_json_traces

    file = Path(path)
    where = str(file)
    if file.suffix.lower() not in _PROTOBUF_SUFFIXES and _starts_like_json(file):
        for spans, logs in iter_otlp_json_traces(file):
            yield from trajectories_from_spans(spans, logs, source_format=JSON_FORMAT, file=where)
        return
    spans, logs = decode_otlp_protobuf(_read_bytes(file), where=where)
    yield from trajectories_from_spans(spans, logs, source_format=PROTOBUF_FORMAT, file=where)


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
    spans, logs = decode_otlp_body(body, content_type, content_encoding=content_encoding)
    return trajectories_from_spans(spans, logs, source_format=body_format(content_type))


def body_format(content_type: str) -> str:
    """The ``source.format`` of runs imported from a body of this ``Content-Type``."""
    media = content_type.split(";", 1)[0].strip().lower()
    return PROTOBUF_FORMAT if media in _PROTOBUF_TYPES else JSON_FORMAT


def decode_otlp_body(
    body: bytes,
    content_type: str,
    *,
    content_encoding: str | None = None,
    kind: Literal["traces", "logs"] = "traces",
    rejected: list[Rejected] | None = None,
) -> tuple[list[Span], list[LogRecord]]:
    """The spans and log records of one OTLP/HTTP request body, as the exporters send it.

    Args:
        body: The body of a ``POST /v1/traces`` (``kind="traces"``) or ``POST /v1/logs``
            (``kind="logs"``) request.
        content_type: ``application/x-protobuf`` or ``application/json``.
        content_encoding: ``gzip``, ``identity`` or None.
        kind: Which export request a protobuf body holds (a JSON body says itself).
        rejected: When given, a malformed span or log record is left out and noted here
            instead of failing the whole request.

    Raises:
        InputError: An unsupported type or encoding, or a body that is not a valid export
            request (``request body: why``).
    """
    media = content_type.split(";", 1)[0].strip().lower()
    body = _decompressed(body, content_encoding)
    if media in _PROTOBUF_TYPES:
        return decode_otlp_protobuf(body, where=_BODY, kind=kind, rejected=rejected)
    if media != "application/json":
        raise InputError(
            f"{_BODY}: unsupported content type {content_type[:80]!r}; "
            "expected application/x-protobuf or application/json"
        )
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{_BODY}: byte {exc.start} is not valid UTF-8") from None
    return decode_otlp_json(parse_json(text, source=_BODY), where=_BODY, rejected=rejected)


def export_response(
    kind: Literal["traces", "logs"], content_type: str, *, rejected: int = 0, message: str = ""
) -> tuple[bytes, str]:
    """The body and media type of an OTLP/HTTP export response in the request's encoding:
    empty when everything was taken, else its ``partial_success`` (how many spans or log
    records were rejected, and why)."""
    if body_format(content_type) == PROTOBUF_FORMAT:
        from arbiter.trajectories.otlp_protobuf import encode_export_response

        encoded = encode_export_response(kind, rejected=rejected, message=message)
        return encoded, "application/x-protobuf"
    if not rejected and not message:
        return b"{}", "application/json"
    # Proto3's JSON mapping writes an int64 as a decimal string.
    count = "rejectedSpans" if kind == "traces" else "rejectedLogRecords"
    partial = {"partialSuccess": {count: str(rejected), "errorMessage": message}}
    return json.dumps(partial, ensure_ascii=False).encode("utf-8"), "application/json"


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
        for root in tree.run_roots(lambda span: operation(span) == "invoke_agent"):
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
        steps = RunSteps()
        for span in self._walk(root):
            kind = operation(span)
            if kind == "invoke_agent":
                steps.add(span, {"kind": "handoff", "id": span.span_id, **span_times(span)})
                steps.steps[-1]["trajectory"] = self.document(span, depth=depth + 1)
            elif kind in MODEL_OPERATIONS:
                steps.model_call(span, self.linked.get(span.span_id, []))
            elif kind == "execute_tool":
                steps.add(span, tool_call_step(span))
            elif kind == "retrieval":
                steps.add(span, retrieval_step(span))
            if len(steps.steps) > MAX_STEPS:
                _fail(self.file, root, f"the run has more than {MAX_STEPS:,} steps")
        steps.attach_requested_tool_calls()
        attributes = root.attributes
        answer = _answer(root) or steps.last_answer
        agent_name = name_text(attributes.get("gen_ai.agent.name"))
        if agent_name is None and operation(root) == "invoke_agent":
            agent_name = root.name.removeprefix("invoke_agent").strip() or None
        document: dict[str, Any] = {
            "id": root.span_id,
            "agent": {
                "name": agent_name or name_text(root.resource.get("service.name")),
                "version": name_text(attributes.get("gen_ai.agent.version")),
            },
            "conversation_id": name_text(attributes.get("gen_ai.conversation.id"))
            or steps.conversation_id,
            "steps": steps.steps,
            "final_answer": answer,
            "status": "error" if root.error else "completed",
            "error": clip(root.error) if root.error else None,
            **span_times(root),
            "source": {
                "format": self.format,
                "file": self.file,
                "trace_id": root.trace_id,
                "span_ids": [root.span_id, *steps.span_ids][:MAX_STEPS],
            },
        }
        metadata = {
            "agent_id": name_text(attributes.get("gen_ai.agent.id")),
            "agent_description": name_text(attributes.get("gen_ai.agent.description")),
            "provider": name_text(attributes.get("gen_ai.provider.name"))
            or name_text(attributes.get("gen_ai.system")),
            "service_name": name_text(root.resource.get("service.name")),
        }
        document["metadata"] = {key: value for key, value in metadata.items() if value}
        return document

    def _walk(self, root: Span) -> Iterator[Span]:
        """The run's spans in start order, descending into neither sub-agents nor model calls.

        A root that is no agent is walked too (a bare instrumented client's model call is a
        trace of one span). A model call's children are its transport (HTTP spans) or a
        second instrumentation of the same call, never further steps.
        """
        opaque = MODEL_OPERATIONS | {"invoke_agent"}
        if operation(root) == "invoke_agent":
            stack = [iter(self.tree.children_of(root))]
        else:
            stack = [iter([root])]
        while stack:
            span = next(stack[-1], None)
            if span is None:
                stack.pop()
                continue
            yield span
            if operation(span) not in opaque:
                stack.append(iter(self.tree.children_of(span)))


def _answer(root: Span) -> str | None:
    """The last assistant text of the agent span's own ``gen_ai.output.messages``."""
    if operation(root) != "invoke_agent":
        return None
    return last_assistant_text(model_messages(root, ()).output)


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


def _read_file(file: Path, options: ImportOptions) -> Iterator[ImportedRun]:
    if file.suffix.lower() in _PROTOBUF_SUFFIXES and options.formats is not None:
        # A protobuf file is told by its suffix alone: its traces may be any span format's.
        spans, logs = decode_otlp_protobuf(_read_bytes(file), where=str(file))
        return numbered_runs(_by_span_format(spans, logs, options.formats, file), file, "otlp")
    return numbered_runs(iter_otlp(file), file, "otlp")


def _by_span_format(
    spans: list[Span], logs: list[LogRecord], formats: TrajectoryFormatRegistry, file: Path
) -> Iterator[Trajectory]:
    """Each trace read by the span format that claims it most (this one when none does)."""
    for trace_spans in group_by_trace(spans).values():
        reader = formats.span_format(trace_spans)
        if reader is None or reader.spans is None or reader.name == "otlp":
            yield from trajectories_from_spans(
                trace_spans, logs, source_format=PROTOBUF_FORMAT, file=str(file)
            )
        else:
            yield from reader.spans.read(trace_spans, logs, PROTOBUF_FORMAT)


def _read_record(record: Any, options: ImportOptions) -> list[ImportedRun]:
    spans, logs = decode_otlp_json(record, where=options.source)
    trajectories = trajectories_from_spans(spans, logs, source_format=JSON_FORMAT)
    return record_runs(trajectories, "otlp", options.source)


def _resemblance(record: Any) -> float:
    return MATCH if isinstance(record, dict) and "resourceSpans" in record else 0.0


def _claims(spans: Sequence[Span]) -> float:
    return MATCH if looks_like_genai(spans) else 0.0


def _read_spans(
    spans: Sequence[Span], logs: Sequence[LogRecord], source_format: str
) -> list[Trajectory]:
    return trajectories_from_spans(spans, logs, source_format=source_format)


TRAJECTORY_FORMAT = TrajectoryFormat(
    name="otlp",
    summary="OpenTelemetry traces following the GenAI semantic conventions "
    "(`invoke_agent`, `execute_tool`, `chat` spans): the collector's file-exporter JSON "
    "lines, or OTLP protobuf (`.pb`)",
    read_file=_read_file,
    read_record=_read_record,
    resemblance=_resemblance,
    suffixes=frozenset({".pb", ".binpb"}),
    spans=SpanReading(claims=_claims, read=_read_spans),
)
"""The ``otlp`` trajectory format."""
