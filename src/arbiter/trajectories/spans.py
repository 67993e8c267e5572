"""A format-neutral span model, and the decoding of OTLP traces and logs into it.

OTLP arrives in two encodings: protobuf (``application/x-protobuf``, the ``.binpb`` files)
and JSON (``application/json``, the collector's file exporter, one export request a line).
Both decode into the same plain values, so the importers of span-based formats (OTLP
GenAI, OpenInference) read :class:`Span` and :class:`LogRecord` and never a wire format:

- ids are lower-case hex (OTLP JSON writes them as hex; the base64 that a generic
  protobuf-to-JSON converter writes is accepted too); an empty parent id means a root;
- an attribute's ``AnyValue`` becomes plain Python: ``str``, ``int`` (``intValue`` is a
  string in JSON), ``float``, ``bool``, ``list``, ``dict``, and bytes as hex text;
- enums (span kind, status code) are read as integers or as their proto names, and held
  as short names (``CLIENT``, ``ERROR``);
- times are nanoseconds since the epoch, ``None`` when unset (0).

Unknown fields are ignored, as OTLP receivers must. A malformed request is an
:class:`~arbiter.errors.InputError` with one line naming where (``file:line``, the field,
the span id) and why. A request holds at most :data:`MAX_SPANS` spans and log records
and :data:`MAX_BODY_BYTES` bytes; decoding is linear in the size of the input.

The protobuf classes come from the optional extra ``arbiter[otlp]``; JSON needs nothing
beyond the core install.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from typing import Any, Literal

from arbiter.datasets.jsonio import json_type, parse_json
from arbiter.errors import InputError
from arbiter.trajectories.span_model import (
    MAX_BODY_BYTES,
    MAX_SPANS,
    SPAN_KINDS,
    STATUS_CODES,
    LogRecord,
    Rejected,
    Span,
    SpanEvent,
    SpanTree,
    bytes_id,
    check_size,
    check_span_times,
    fail,
    group_by_trace,
    span_tree,
)

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_SPANS",
    "LogRecord",
    "Rejected",
    "Span",
    "SpanEvent",
    "SpanTree",
    "decode_otlp_json",
    "decode_otlp_protobuf",
    "group_by_trace",
    "normalized_id",
    "read_otlp_json_lines",
    "span_tree",
]

_INT64 = (-(2**63), 2**63 - 1)
_UINT64_MAX = 2**64 - 1


def read_otlp_json_lines(text: str, *, source: str) -> tuple[list[Span], list[LogRecord]]:
    """The spans and log records of a collector file-exporter file: a request a line.

    Blank lines are skipped. A file holding one (pretty-printed) export request as a whole
    JSON document is read too.

    Raises:
        InputError: ``source:line: why`` for the first bad line.
    """
    decoder = _JsonDecoder()
    first = True
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        check_size(len(line), where)
        try:
            document = parse_json(line.rstrip("\r"), source=source, line=number)
        except InputError:
            if not (first and line.lstrip().startswith("{")):
                raise
            # Not a request a line: perhaps one pretty-printed request, the whole file.
            check_size(len(text), source)
            document = _whole_document(text, source=source)
            if document is None:
                raise
            decoder.request(document, where)
            break
        first = False
        decoder.request(document, where)
    return decoder.spans, decoder.logs


def _whole_document(text: str, *, source: str) -> Any:
    try:
        return parse_json(text, source=source)
    except InputError:
        return None


def decode_otlp_json(
    document: Any, *, where: str, rejected: list[Rejected] | None = None
) -> tuple[list[Span], list[LogRecord]]:
    """The spans and log records of one parsed OTLP/JSON export request.

    Args:
        document: An ``ExportTraceServiceRequest`` (``resourceSpans``) or
            ``ExportLogsServiceRequest`` (``resourceLogs``) object, parsed.
        where: Where it came from, for messages (``file:line``, ``request body``).
        rejected: When given, a malformed span or log record is left out and noted
            here instead of failing the request (an OTLP receiver's partial success).

    Raises:
        InputError: ``where: field (span id): why``.
    """
    decoder = _JsonDecoder(rejected)
    decoder.request(document, where)
    return decoder.spans, decoder.logs


def decode_otlp_protobuf(
    body: bytes,
    *,
    where: str,
    kind: Literal["traces", "logs"] = "traces",
    rejected: list[Rejected] | None = None,
) -> tuple[list[Span], list[LogRecord]]:
    """The spans and log records of one protobuf export request.

    Args:
        body: A serialised ``ExportTraceServiceRequest`` (``kind="traces"``) or
            ``ExportLogsServiceRequest`` (``kind="logs"``).
        where: Where it came from, for messages.
        kind: Which request ``body`` holds.
        rejected: When given, a malformed span or log record is left out and noted
            here instead of failing the request.

    Raises:
        InputError: The body is too large or not such a request, a span is malformed, or
            the ``arbiter[otlp]`` extra is not installed.
    """
    from arbiter.trajectories.otlp_protobuf import decode_protobuf_request

    check_size(len(body), where)
    return decode_protobuf_request(body, where=where, kind=kind, rejected=rejected)


class _JsonDecoder:
    """Decodes OTLP/JSON requests into spans and log records, counting against the caps."""

    def __init__(self, rejected: list[Rejected] | None = None) -> None:
        self.spans: list[Span] = []
        self.logs: list[LogRecord] = []
        self.rejected = rejected

    def request(self, document: Any, where: str) -> None:
        if not isinstance(document, dict) or not (
            document.keys() & {"resourceSpans", "resourceLogs", "resourceMetrics"}
        ):
            fail(
                where,
                "expected an OTLP export request (an object with 'resourceSpans' or "
                f"'resourceLogs'), got {_describe(document)}",
            )
        for index, block in enumerate(_list(document, "resourceSpans", where)):
            at = f"resourceSpans[{index}]"
            resource = self._resource(block, at, where)
            scopes = _list(block, "scopeSpans", where, at) or _list(
                block, "instrumentationLibrarySpans", where, at
            )
            for s_index, scope_block in enumerate(scopes):
                s_at = f"{at}.scopeSpans[{s_index}]"
                scope = self._scope(scope_block, s_at, where)
                for span_index, raw in enumerate(_list(scope_block, "spans", where, s_at)):
                    if len(self.spans) >= MAX_SPANS:
                        fail(where, f"more than {MAX_SPANS:,} spans")
                    at_span = f"{s_at}.spans[{span_index}]"
                    try:
                        self.spans.append(self._span(raw, at_span, where, resource, scope))
                    except InputError as exc:
                        self._reject(exc, raw, at_span, where)
        for index, block in enumerate(_list(document, "resourceLogs", where)):
            at = f"resourceLogs[{index}]"
            self._resource(block, at, where)
            for s_index, scope_block in enumerate(_list(block, "scopeLogs", where, at)):
                s_at = f"{at}.scopeLogs[{s_index}]"
                self._scope(scope_block, s_at, where)
                for r_index, raw in enumerate(_list(scope_block, "logRecords", where, s_at)):
                    if len(self.logs) >= MAX_SPANS:
                        fail(where, f"more than {MAX_SPANS:,} log records")
                    at_log = f"{s_at}.logRecords[{r_index}]"
                    try:
                        self.logs.append(self._log(raw, at_log, where))
                    except InputError as exc:
                        self._reject(exc, raw, at_log, where)

    def _reject(self, exc: InputError, raw: Any, at: str, where: str) -> None:
        """Note a malformed item (and its trace), or fail when no one takes the note."""
        if self.rejected is None:
            raise exc
        trace_id = None
        if isinstance(raw, dict):
            try:
                trace_id = _id(raw.get("traceId"), 16, f"{at}.traceId", where)
            except InputError:
                trace_id = None
        self.rejected.append(Rejected(trace_id, str(exc)))

    def _resource(self, block: Any, at: str, where: str) -> dict[str, Any]:
        _object(block, at, where)
        resource = block.get("resource")
        if resource is None:
            return {}
        _object(resource, f"{at}.resource", where)
        return _attributes(resource.get("attributes"), f"{at}.resource.attributes", where)

    def _scope(self, block: Any, at: str, where: str) -> str | None:
        _object(block, at, where)
        scope = block.get("scope", block.get("instrumentationLibrary"))
        if scope is None:
            return None
        _object(scope, f"{at}.scope", where)
        name = scope.get("name")
        return name if isinstance(name, str) and name else None

    def _span(
        self, raw: Any, at: str, where: str, resource: dict[str, Any], scope: str | None
    ) -> Span:
        found = _plain_span(raw, resource, scope)
        if found is not None:
            return found
        return self._checked_span(raw, at, where, resource, scope)

    def _checked_span(
        self, raw: Any, at: str, where: str, resource: dict[str, Any], scope: str | None
    ) -> Span:
        """A span read field by field, each problem named with its path."""
        _object(raw, at, where)
        trace_id = _id(raw.get("traceId"), 16, f"{at}.traceId", where, required=True)
        span_id = _id(raw.get("spanId"), 8, f"{at}.spanId", where, required=True)
        assert trace_id is not None
        assert span_id is not None
        at = f"{at} (span {span_id})"
        parent = _id(raw.get("parentSpanId"), 8, f"{at}.parentSpanId", where)
        start = _time(raw.get("startTimeUnixNano"), f"{at}.startTimeUnixNano", where)
        end = _time(raw.get("endTimeUnixNano"), f"{at}.endTimeUnixNano", where)
        check_span_times(start, end, at, where)
        name = raw.get("name", "")
        if not isinstance(name, str):
            fail(where, f"{at}.name: must be a string, got {_describe(name)}")
        status = raw.get("status") or {}
        _object(status, f"{at}.status", where)
        message = status.get("message", "")
        if not isinstance(message, str):
            fail(where, f"{at}.status.message: must be a string, got {_describe(message)}")
        events = tuple(
            self._event(event, f"{at}.events[{i}]", where)
            for i, event in enumerate(_list(raw, "events", where, at))
        )
        return Span(
            trace_id=trace_id,
            span_id=span_id,
            parent_span_id=parent,
            name=name,
            kind=_enum(raw.get("kind", 0), SPAN_KINDS, "SPAN_KIND_", f"{at}.kind", where),
            start_ns=start,
            end_ns=end,
            attributes=_attributes(raw.get("attributes"), f"{at}.attributes", where),
            events=events,
            status_code=_enum(
                status.get("code", 0), STATUS_CODES, "STATUS_CODE_", f"{at}.status.code", where
            ),
            status_message=message,
            resource=resource,
            scope=scope,
        )

    def _event(self, raw: Any, at: str, where: str) -> SpanEvent:
        _object(raw, at, where)
        name = raw.get("name", "")
        if not isinstance(name, str):
            fail(where, f"{at}.name: must be a string, got {_describe(name)}")
        return SpanEvent(
            name=name,
            time_ns=_time(raw.get("timeUnixNano"), f"{at}.timeUnixNano", where),
            attributes=_attributes(raw.get("attributes"), f"{at}.attributes", where),
        )

    def _log(self, raw: Any, at: str, where: str) -> LogRecord:
        _object(raw, at, where)
        attributes = _attributes(raw.get("attributes"), f"{at}.attributes", where)
        event_name = raw.get("eventName") or attributes.get("event.name")
        time_ns = _time(raw.get("timeUnixNano"), f"{at}.timeUnixNano", where)
        if time_ns is None:
            time_ns = _time(raw.get("observedTimeUnixNano"), f"{at}.observedTimeUnixNano", where)
        return LogRecord(
            trace_id=_id(raw.get("traceId"), 16, f"{at}.traceId", where),
            span_id=_id(raw.get("spanId"), 8, f"{at}.spanId", where),
            time_ns=time_ns,
            event_name=event_name if isinstance(event_name, str) and event_name else None,
            attributes=attributes,
            body=_any_value(raw.get("body"), f"{at}.body", where),
        )


_HEX_TRACE_ID = re.compile(r"[0-9a-f]{32}")
_HEX_SPAN_ID = re.compile(r"[0-9a-f]{16}")


def _plain_id(value: Any, pattern: re.Pattern[str]) -> str | None:
    """``value`` when it is an id as exporters write it (lower-case hex, not all zeros)."""
    if isinstance(value, str) and pattern.fullmatch(value) is not None and value.strip("0"):
        return value
    return None


_NOT_PLAIN = -1


def _plain_time(value: Any) -> int | None:
    """Nanoseconds as exporters write them (a short digit string); ``_NOT_PLAIN`` for
    anything else (the checked reader reads or names it)."""
    if value is None:
        return None
    if isinstance(value, str) and len(value) <= 19 and value.isascii() and value.isdigit():
        return int(value) or None
    return _NOT_PLAIN


def _plain_span(raw: Any, resource: dict[str, Any], scope: str | None) -> Span | None:
    """A span in the shape exporters write, read without building an error path for
    every field; None for anything else, which the checked reader then reads (or names).

    It accepts only what the checked reader accepts, and reads it the same way. (Parsed
    JSON holds no subclass of ``dict``, ``list``, ``str`` or ``int``: ``type(...) is`` is
    ``isinstance`` here, at a fraction of its cost.)
    """
    if type(raw) is not dict:
        return None
    get = raw.get
    trace_id, span_id, written = get("traceId"), get("spanId"), get("parentSpanId")
    if not (
        type(trace_id) is str
        and type(span_id) is str
        and _HEX_TRACE_ID.fullmatch(trace_id) is not None
        and _HEX_SPAN_ID.fullmatch(span_id) is not None
        and trace_id.strip("0")
        and span_id.strip("0")
    ):
        return None
    parent = None
    if written is not None and written != "":
        parent = _plain_id(written, _HEX_SPAN_ID)
        if parent is None:
            return None
    start = _plain_time(get("startTimeUnixNano"))
    end = _plain_time(get("endTimeUnixNano"))
    if _NOT_PLAIN in (start, end) or (start is not None and end is not None and end < start):
        return None
    name, kind = get("name", ""), get("kind", 0)
    status = get("status") or {}
    if not (type(name) is str and type(status) is dict and not get("events")):
        return None
    code, message = status.get("code", 0), status.get("message", "")
    if not (
        type(kind) is int
        and 0 <= kind < len(SPAN_KINDS)
        and type(code) is int
        and 0 <= code < len(STATUS_CODES)
        and type(message) is str
    ):
        return None
    attributes = _plain_attributes(get("attributes"))
    if attributes is None:
        try:  # a bad attribute is named by the checked reader, with its path
            attributes = _attributes(get("attributes"), "attributes", "span")
        except InputError:
            return None
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        kind=SPAN_KINDS[kind],
        start_ns=start,
        end_ns=end,
        attributes=attributes,
        events=(),
        status_code=STATUS_CODES[code],
        status_message=message,
        resource=resource,
        scope=scope,
    )


def _plain_attributes(value: Any) -> dict[str, Any] | None:
    """:func:`_attributes` of key/value pairs whose values are strings (most are) or
    integers as OTLP JSON writes them (18 ASCII digits at most: well inside an int64);
    None for anything else (read by the full one)."""
    if value is None:
        return {}
    if type(value) is not list:
        return None
    result: dict[str, Any] = {}
    for pair in value:
        if type(pair) is not dict:
            return None
        key, raw = pair.get("key"), pair.get("value")
        if type(key) is not str or type(raw) is not dict:
            return None
        text = raw.get("stringValue")
        if type(text) is str:
            result[key] = text
            continue
        number = raw.get("intValue")
        if (
            "stringValue" in raw
            or "boolValue" in raw
            or type(number) is not str
            or not (0 < len(number) <= 18 and number.isascii() and number.isdigit())
        ):
            return None
        result[key] = int(number)
    return result


def _describe(value: Any) -> str:
    return json_type(value)


def _object(value: Any, at: str, where: str) -> None:
    if not isinstance(value, dict):
        fail(where, f"{at}: must be an object, got {_describe(value)}")


def _list(block: dict[str, Any], key: str, where: str, at: str = "") -> list[Any]:
    value = block.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        path = f"{at}.{key}" if at else key
        fail(where, f"{path}: must be an array, got {_describe(value)}")
    return value


def normalized_id(raw: bytes) -> str:
    """A trace id as the decoder gives it (lower-case hex), from its raw JSON text; the
    text itself when it is no valid id (the decoder then names the problem)."""
    text = raw.decode("ascii", "replace")
    try:
        return _id(text, 16, "traceId", "scan") or text
    except InputError:
        return text


def _id(value: Any, size: int, at: str, where: str, *, required: bool = False) -> str | None:
    """A hex id of ``size`` bytes; base64 (a generic protobuf JSON converter's) is accepted."""
    if value is None or value == "":
        if required:
            fail(where, f"{at}: missing (every span has a {'trace' if size == 16 else 'span'} id)")
        return None
    if not isinstance(value, str):
        fail(where, f"{at}: must be a hex string, got {_describe(value)}")
    if len(value) == 2 * size:
        try:
            raw = bytes.fromhex(value)
        except ValueError:
            fail(where, f"{at}: {value[:40]!r} is not hex")
    elif len(value) == 4 * math.ceil(size / 3):
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            fail(where, f"{at}: {value[:40]!r} is neither hex nor base64")
    else:
        fail(where, f"{at}: {value[:40]!r} is not {2 * size} hex digits ({size} bytes)")
    return bytes_id(raw, size, at, where, required=required)


def _time(value: Any, at: str, where: str) -> int | None:
    """Nanoseconds since the epoch (a uint64, written as a string in JSON); 0 is unset."""
    if value is None:
        return None
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 20:
        number = int(value)
    elif isinstance(value, int) and not isinstance(value, bool):
        number = value
    else:
        fail(where, f"{at}: must be nanoseconds since the epoch, got {str(value)[:40]!r}")
    if not 0 <= number <= _UINT64_MAX:
        fail(where, f"{at}: {number} is outside the range of a uint64")
    return number or None


def _enum(value: Any, names: tuple[str, ...], prefix: str, at: str, where: str) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(names):
        return names[value]
    if isinstance(value, str) and value.removeprefix(prefix) in names:
        return value.removeprefix(prefix)
    expected = ", ".join(f"{i} ({n})" for i, n in enumerate(names))
    fail(where, f"{at}: {str(value)[:40]!r} is not one of {expected}")


def _attributes(value: Any, at: str, where: str) -> dict[str, Any]:
    """``[{key, value: AnyValue}]`` as a dict; a repeated key keeps its last value."""
    if value is None:
        return {}
    if not isinstance(value, list):
        fail(where, f"{at}: must be an array of key/value pairs, got {_describe(value)}")
    result: dict[str, Any] = {}
    for index, pair in enumerate(value):
        if not isinstance(pair, dict) or not isinstance(key := pair.get("key"), str):
            fail(where, f"{at}[{index}]: must be an object with a string 'key'")
        raw = pair.get("value")
        # Most values are strings: read without the path an error message would need.
        if isinstance(raw, dict) and isinstance(text := raw.get("stringValue"), str):
            result[key] = text
        else:
            result[key] = _any_value(raw, f"{at}[{index}].value", where)
    return result


def _any_value(value: Any, at: str, where: str) -> Any:
    """An OTLP/JSON ``AnyValue`` as plain Python (``None`` when it holds nothing)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        fail(where, f"{at}: must be an AnyValue object, got {_describe(value)}")
    if "stringValue" in value:
        text = value["stringValue"]
        if not isinstance(text, str):
            fail(where, f"{at}.stringValue: must be a string, got {_describe(text)}")
        return text
    if "boolValue" in value:
        flag = value["boolValue"]
        if not isinstance(flag, bool):
            fail(where, f"{at}.boolValue: must be a boolean, got {_describe(flag)}")
        return flag
    if "intValue" in value:
        return _int64(value["intValue"], f"{at}.intValue", where)
    if "doubleValue" in value:
        return _double(value["doubleValue"], f"{at}.doubleValue", where)
    if "arrayValue" in value:
        array = value["arrayValue"] or {}
        _object(array, f"{at}.arrayValue", where)
        items = _list(array, "values", where, f"{at}.arrayValue")
        return [
            _any_value(item, f"{at}.arrayValue.values[{i}]", where) for i, item in enumerate(items)
        ]
    if "kvlistValue" in value:
        kvlist = value["kvlistValue"] or {}
        _object(kvlist, f"{at}.kvlistValue", where)
        return _attributes(kvlist.get("values"), f"{at}.kvlistValue.values", where)
    if "bytesValue" in value:
        data = value["bytesValue"]
        try:
            return base64.b64decode(data, validate=True).hex()
        except (binascii.Error, ValueError, TypeError):
            fail(where, f"{at}.bytesValue: must be base64 text")
    return None


def _int64(value: Any, at: str, where: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and len(value) <= 20 and value.lstrip("-").isdigit():
        number = int(value)
    else:
        fail(where, f"{at}: must be an integer (a string in OTLP JSON), got {str(value)[:40]!r}")
    if not _INT64[0] <= number <= _INT64[1]:
        fail(where, f"{at}: {number} is outside the range of an int64")
    return number


def _double(value: Any, at: str, where: str) -> float | None:
    """A double; proto JSON may write it as a string. Not-a-number and infinities are None."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str) and len(value) <= 40:
        try:
            number = float(value)
        except ValueError:
            fail(where, f"{at}: must be a number, got {value!r}")
    else:
        fail(where, f"{at}: must be a number, got {_describe(value)}")
    return number if math.isfinite(number) else None
