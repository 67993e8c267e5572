"""OTLP traces of GenAI instrumentations import as trajectories, old conventions and new."""

from __future__ import annotations

import base64
import copy
import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arbiter.contract import Handoff, LlmCall, Retrieval, ToolCall, Trajectory
from arbiter.errors import InputError
from arbiter.trajectories import otlp as otlp_module
from arbiter.trajectories.otlp import import_otlp, load_otlp, trajectories_from_spans
from arbiter.trajectories.spans import decode_otlp_json

DATA = Path(__file__).parent / "data"
TRACE = "0af7651916cd43dd8448eb211c80319c"
T0 = 1_700_000_000_000_000_000
MS = 1_000_000


def _value(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_value(v) for v in value]}}
    if isinstance(value, dict):
        return {"kvlistValue": {"values": _attrs(value)}}
    return {"stringValue": value}


def _attrs(attributes: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": _value(v)} for k, v in attributes.items()]


def _span(
    number: int,
    name: str,
    parent: int | None = None,
    *,
    start: int = 0,
    end: int = 10,
    status: dict[str, Any] | None = None,
    events: list[dict[str, Any]] | None = None,
    trace: str = TRACE,
    **attributes: Any,
) -> dict[str, Any]:
    span: dict[str, Any] = {
        "traceId": trace,
        "spanId": f"{number:016x}",
        "name": name,
        "kind": 1,
        "startTimeUnixNano": str(T0 + start * MS),
        "endTimeUnixNano": str(T0 + end * MS),
        "attributes": _attrs({k.replace("__", "."): v for k, v in attributes.items()}),
    }
    if parent is not None:
        span["parentSpanId"] = f"{parent:016x}"
    if status is not None:
        span["status"] = status
    if events is not None:
        span["events"] = events
    return span


def _request(*spans: dict[str, Any], service: str = "travel-svc") -> dict[str, Any]:
    resource = {"attributes": _attrs({"service.name": service})}
    return {"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": list(spans)}]}]}


def _import(*documents: dict[str, Any]) -> list[Trajectory]:
    spans, logs = [], []
    for document in documents:
        more_spans, more_logs = decode_otlp_json(document, where="body")
        spans += more_spans
        logs += more_logs
    return trajectories_from_spans(spans, logs, source_format="otlp_json", file="t.jsonl")


def _messages(*messages: dict[str, Any]) -> str:
    return json.dumps(list(messages))


def _text(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


CALL = {"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}
ANSWER = "Paris is 18°C and sunny."


def _agent_trace() -> dict[str, Any]:
    """An agent in the current conventions: two model calls around one tool span."""
    return _request(
        _span(
            1,
            "invoke_agent Weather",
            end=100,
            gen_ai__operation__name="invoke_agent",
            gen_ai__agent__name="Weather",
            gen_ai__agent__id="asst_7",
            gen_ai__agent__version="2.1",
            gen_ai__conversation__id="conv-9",
            gen_ai__provider__name="openai",
        ),
        _span(
            2,
            "chat gpt-4o",
            1,
            start=5,
            end=20,
            gen_ai__operation__name="chat",
            gen_ai__request__model="gpt-4o",
            gen_ai__response__model="gpt-4o-2024-08-06",
            gen_ai__usage__input_tokens=120,
            gen_ai__usage__output_tokens=15,
            gen_ai__system_instructions=json.dumps([{"type": "text", "content": "Be brief."}]),
            gen_ai__input__messages=_messages(_text("user", "Weather in Paris?")),
            gen_ai__output__messages=_messages({"role": "assistant", "parts": [CALL]}),
        ),
        _span(
            3,
            "execute_tool get_weather",
            1,
            start=21,
            end=30,
            gen_ai__operation__name="execute_tool",
            gen_ai__tool__name="get_weather",
            gen_ai__tool__call__id="call_1",
            gen_ai__tool__call__arguments='{"city": "Paris"}',
            gen_ai__tool__call__result='{"temp": 18}',
        ),
        _span(
            4,
            "chat gpt-4o",
            1,
            start=31,
            end=60,
            gen_ai__operation__name="chat",
            gen_ai__request__model="gpt-4o",
            gen_ai__usage__input_tokens=150,
            gen_ai__usage__output_tokens=9,
            gen_ai__input__messages=_messages(
                {
                    "role": "tool",
                    "parts": [
                        {"type": "tool_call_response", "id": "call_1", "response": {"temp": 18}}
                    ],
                }
            ),
            gen_ai__output__messages=_messages(_text("assistant", ANSWER)),
        ),
    )


def test_an_agent_of_the_current_conventions_imports_with_its_steps_in_order() -> None:
    [trajectory] = _import(_agent_trace())
    assert [type(step) for step in trajectory.steps] == [LlmCall, ToolCall, LlmCall]
    [tool] = trajectory.tool_calls
    assert (tool.name, tool.call_id, tool.arguments, tool.result, tool.error) == (
        "get_weather",
        "call_1",
        {"city": "Paris"},
        {"temp": 18},
        None,
    )
    assert tool.duration == pytest.approx(9.0)
    assert trajectory.final_answer == ANSWER
    assert trajectory.status == "completed"


def test_the_agent_identity_and_conversation_come_from_the_agent_span() -> None:
    [trajectory] = _import(_agent_trace())
    assert (trajectory.agent.name, trajectory.agent.version) == ("Weather", "2.1")
    assert trajectory.conversation_id == "conv-9"
    assert trajectory.metadata == {
        "agent_id": "asst_7",
        "provider": "openai",
        "service_name": "travel-svc",
    }
    assert trajectory.source is not None
    assert (trajectory.source.format, trajectory.source.file, trajectory.source.trace_id) == (
        "otlp_json",
        "t.jsonl",
        TRACE,
    )
    assert trajectory.source.span_ids == [f"{n:016x}" for n in (1, 2, 3, 4)]


def test_model_calls_carry_model_tokens_and_structured_messages() -> None:
    first, second = _import(_agent_trace())[0].llm_calls
    assert (first.model, first.input_tokens, first.output_tokens) == ("gpt-4o-2024-08-06", 120, 15)
    assert [(m.role, m.content) for m in first.input_messages] == [
        ("system", "Be brief."),
        ("user", "Weather in Paris?"),
    ]
    assert [(m.role, m.content) for m in first.output_messages] == [("assistant", None)]
    assert [(m.role, m.content) for m in second.input_messages] == [("tool", '{"temp": 18}')]
    assert second.model == "gpt-4o"
    assert _import(_agent_trace())[0].totals().total_tokens == 294


def test_a_tool_span_without_arguments_takes_them_from_the_model_request() -> None:
    document = _agent_trace()
    tool_span = document["resourceSpans"][0]["scopeSpans"][0]["spans"][2]
    tool_span["attributes"] = [
        a for a in tool_span["attributes"] if a["key"] != "gen_ai.tool.call.arguments"
    ]
    [tool] = _import(document)[0].tool_calls
    assert tool.arguments == {"city": "Paris"}


def test_the_agent_span_output_messages_are_the_final_answer() -> None:
    document = _agent_trace()
    agent = document["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    agent["attributes"] += _attrs(
        {"gen_ai.output.messages": _messages(_text("assistant", "Sunny, 18°C."))}
    )
    assert _import(document)[0].final_answer == "Sunny, 18°C."


@pytest.mark.parametrize(
    ("status", "attributes", "error"),
    [
        ({"code": 2, "message": "city not found"}, {}, "city not found"),
        (None, {"error.type": "TimeoutError"}, "TimeoutError"),
    ],
)
def test_a_failed_tool_span_is_a_failed_tool_call(
    status: dict[str, Any] | None, attributes: dict[str, Any], error: str
) -> None:
    document = _request(
        _span(1, "invoke_agent A", gen_ai__operation__name="invoke_agent"),
        _span(
            2, "execute_tool lookup", 1, status=status, gen_ai__tool__name="lookup", **attributes
        ),
    )
    [tool] = _import(document)[0].tool_calls
    assert (tool.error, tool.succeeded) == (error, False)


def test_a_failed_root_span_makes_a_failed_run() -> None:
    document = _request(
        _span(
            1,
            "invoke_agent A",
            status={"code": 2, "message": "budget exceeded"},
            gen_ai__operation__name="invoke_agent",
        )
    )
    [trajectory] = _import(document)
    assert (trajectory.status, trajectory.error, trajectory.agent.name) == (
        "error",
        "budget exceeded",
        "A",
    )


def _openai_v2(name: str) -> list[Trajectory]:
    return load_otlp(DATA / f"otlp_openai_v2_{name}.jsonl")


def test_opentelemetry_instrumentation_openai_v2_traces_import_from_their_log_events() -> None:
    """The fixture is what opentelemetry-instrumentation-openai-v2 2.3b0 exported for an
    OpenAI client (httpx MockTransport) asked for the weather: a tool call, its result,
    the answer; spans and log events as the collector's file exporter writes them."""
    [trajectory] = _openai_v2("content")
    assert [type(step) for step in trajectory.steps] == [LlmCall, ToolCall, LlmCall]
    first, second = trajectory.llm_calls
    assert [(m.role, m.content) for m in first.input_messages] == [
        ("system", "You are a weather assistant."),
        ("user", "Weather in Paris?"),
    ]
    assert (first.model, first.input_tokens, first.output_tokens) == (
        "gpt-4o-mini-2024-07-18",
        42,
        11,
    )
    assert [m.role for m in second.input_messages] == ["system", "user", "assistant", "tool"]
    [tool] = trajectory.tool_calls
    assert (tool.name, tool.call_id, tool.arguments, tool.result) == (
        "get_weather",
        "call_w1",
        {"city": "Paris"},
        {"temperature_c": 18, "sky": "sunny"},
    )
    assert trajectory.final_answer == "It is 18°C and sunny in Paris."
    assert (trajectory.agent.name, trajectory.status, trajectory.metadata["service_name"]) == (
        "weather-bot",
        "completed",
        "weather-bot",
    )


def test_a_trace_without_captured_content_imports_with_models_tokens_and_tool_names() -> None:
    [trajectory] = _openai_v2("no_content")
    assert [type(step) for step in trajectory.steps] == [LlmCall, ToolCall, LlmCall]
    [tool] = trajectory.tool_calls
    assert (tool.name, tool.call_id, tool.arguments, tool.result) == (
        "get_weather",
        "call_w1",
        None,
        None,
    )
    assert all(m.content is None for call in trajectory.llm_calls for m in call.input_messages)
    assert [c.input_tokens for c in trajectory.llm_calls] == [42, 70]
    assert (trajectory.final_answer, trajectory.status) == (None, "completed")


def test_a_trace_of_spans_only_without_any_message_still_imports() -> None:
    document = _request(
        _span(
            1,
            "chat gpt-4o",
            gen_ai__system="openai",
            gen_ai__request__model="gpt-4o",
            gen_ai__usage__prompt_tokens=7,
            gen_ai__usage__completion_tokens=3,
        )
    )
    [trajectory] = _import(document)
    [call] = trajectory.llm_calls
    assert (call.model, call.input_tokens, call.output_tokens, call.input_messages) == (
        "gpt-4o",
        7,
        3,
        [],
    )
    assert trajectory.agent.name == "travel-svc"


def test_older_message_events_on_the_span_itself_are_read() -> None:
    events = [
        {
            "name": "gen_ai.content.prompt",
            "attributes": _attrs(
                {"gen_ai.prompt": json.dumps([{"role": "user", "content": "Hi"}])}
            ),
        },
        {
            "name": "gen_ai.content.completion",
            "attributes": _attrs(
                {"gen_ai.completion": json.dumps([{"role": "assistant", "content": "Hello!"}])}
            ),
        },
    ]
    [trajectory] = _import(
        _request(_span(1, "chat m", events=events, gen_ai__operation__name="chat"))
    )
    [call] = trajectory.llm_calls
    assert [(m.role, m.content) for m in [*call.input_messages, *call.output_messages]] == [
        ("user", "Hi"),
        ("assistant", "Hello!"),
    ]
    assert trajectory.final_answer == "Hello!"


def test_openllmetry_indexed_prompt_and_completion_attributes_are_read() -> None:
    attributes = {
        "gen_ai.system": "openai",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.prompt.0.role": "user",
        "gen_ai.prompt.0.content": "Book a table",
        "gen_ai.completion.0.role": "assistant",
        "gen_ai.completion.0.tool_calls.0.id": "c9",
        "gen_ai.completion.0.tool_calls.0.name": "book",
        "gen_ai.completion.0.tool_calls.0.arguments": '{"seats": 2}',
    }
    span = _span(1, "openai.chat")
    span["attributes"] = _attrs(attributes)
    [trajectory] = _import(_request(span))
    assert [(m.role, m.content) for m in trajectory.llm_calls[0].input_messages] == [
        ("user", "Book a table")
    ]
    [tool] = trajectory.tool_calls
    assert (tool.name, tool.call_id, tool.arguments) == ("book", "c9", {"seats": 2})


def test_inference_details_log_events_lend_their_structured_messages() -> None:
    log = {
        "eventName": "gen_ai.client.inference.operation.details",
        "traceId": TRACE,
        "spanId": f"{1:016x}",
        "attributes": _attrs(
            {
                "gen_ai.input.messages": [
                    {"role": "user", "parts": [{"type": "text", "content": "Q?"}]}
                ],
                "gen_ai.output.messages": [
                    {"role": "assistant", "parts": [{"type": "text", "content": "A."}]}
                ],
            }
        ),
    }
    logs = {"resourceLogs": [{"scopeLogs": [{"logRecords": [log]}]}]}
    [trajectory] = _import(_request(_span(1, "chat m", gen_ai__operation__name="chat")), logs)
    assert trajectory.final_answer == "A."
    assert trajectory.llm_calls[0].input_messages[0].content == "Q?"


def test_a_model_requested_tool_call_with_broken_arguments_keeps_the_text_and_says_so() -> None:
    output = _messages({"role": "assistant", "parts": [{**CALL, "arguments": "{city: Paris"}]})
    [trajectory] = _import(
        _request(
            _span(1, "chat m", gen_ai__operation__name="chat", gen_ai__output__messages=output)
        )
    )
    [tool] = trajectory.tool_calls
    assert tool.arguments == "{city: Paris"
    assert tool.error is not None
    assert "not valid JSON" in tool.error


def _nested_trace() -> dict[str, Any]:
    return _request(
        _span(1, "invoke_agent Coordinator", end=100, gen_ai__operation__name="invoke_agent"),
        _span(
            2,
            "chat",
            1,
            start=1,
            end=5,
            gen_ai__operation__name="chat",
            gen_ai__usage__input_tokens=10,
            gen_ai__usage__output_tokens=2,
        ),
        _span(
            3,
            "invoke_agent Flights",
            1,
            start=6,
            end=40,
            gen_ai__operation__name="invoke_agent",
            gen_ai__agent__name="Flights",
        ),
        _span(
            4,
            "chat",
            3,
            start=7,
            end=9,
            gen_ai__operation__name="chat",
            gen_ai__usage__input_tokens=20,
            gen_ai__usage__output_tokens=4,
        ),
        _span(
            5,
            "execute_tool search",
            3,
            start=10,
            end=30,
            gen_ai__operation__name="execute_tool",
            gen_ai__tool__name="search_flights",
        ),
        _span(
            6,
            "invoke_agent Hotels",
            1,
            start=41,
            end=80,
            status={"code": 2, "message": "no rooms"},
            gen_ai__operation__name="invoke_agent",
        ),
        _span(
            7,
            "execute_tool find",
            6,
            start=45,
            end=50,
            gen_ai__operation__name="execute_tool",
            gen_ai__tool__name="find_hotel",
        ),
    )


def test_nested_agents_become_handoffs_holding_their_own_trajectories() -> None:
    [coordinator] = _import(_nested_trace())
    assert coordinator.agent.name == "Coordinator"
    assert [type(s) for s in coordinator.steps] == [LlmCall, Handoff, Handoff]
    flights, hotels = (s.trajectory for s in coordinator.steps if isinstance(s, Handoff))
    assert (flights.agent.name, flights.status, [t.name for t in flights.tool_calls]) == (
        "Flights",
        "completed",
        ["search_flights"],
    )
    assert (hotels.agent.name, hotels.status, hotels.error) == ("Hotels", "error", "no rooms")
    assert [t.name for t in hotels.tool_calls] == ["find_hotel"]
    assert coordinator.tool_calls == []
    assert coordinator.totals().total_tokens == 36
    assert coordinator.totals(include_handoffs=False).total_tokens == 12


def test_agents_side_by_side_in_one_trace_are_separate_trajectories() -> None:
    document = _request(
        _span(1, "workflow"),
        _span(2, "invoke_agent A", 1, start=1, end=4, gen_ai__operation__name="invoke_agent"),
        _span(3, "invoke_agent B", 1, start=5, end=9, gen_ai__operation__name="invoke_agent"),
    )
    assert [t.agent.name for t in _import(document)] == ["A", "B"]


def test_each_trace_without_an_agent_is_one_trajectory_of_its_root() -> None:
    other = "1" * 32
    document = _request(
        _span(1, "POST /ask"),
        _span(2, "chat", 1, gen_ai__operation__name="chat"),
        _span(3, "chat", trace=other, gen_ai__operation__name="chat"),
    )
    first, second = _import(document)
    assert (
        first.id,
        len(first.llm_calls),
        second.id,
        second.source and second.source.trace_id,
    ) == (
        f"{1:016x}",
        1,
        f"{3:016x}",
        other,
    )


def test_a_batch_exported_twice_imports_once() -> None:
    document = _agent_trace()
    spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans.extend(copy.deepcopy(spans))
    [trajectory] = _import(document)
    assert len(trajectory.steps) == 3


def test_retrieval_spans_become_retrievals_with_ranked_chunks() -> None:
    documents = json.dumps(
        [{"id": "doc_1", "score": 0.91, "content": "Paris weather"}, {"id": 7, "score": 0.5}]
    )
    document = _request(
        _span(1, "invoke_agent R", gen_ai__operation__name="invoke_agent"),
        _span(
            2,
            "retrieval kb",
            1,
            gen_ai__operation__name="retrieval",
            gen_ai__retrieval__query__text="paris",
            gen_ai__retrieval__documents=documents,
        ),
    )
    [retrieval] = _import(document)[0].steps
    assert isinstance(retrieval, Retrieval)
    assert retrieval.query == "paris"
    assert [(c.source, c.text, c.similarity) for c in retrieval.chunks] == [
        ("doc_1", "Paris weather", 0.91),
        ("7", None, 0.5),
    ]


def test_agents_nested_too_deep_are_an_input_error_naming_the_span(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(otlp_module, "MAX_AGENT_DEPTH", 1)
    spans = [_span(1, "invoke_agent a", gen_ai__operation__name="invoke_agent")]
    spans += [
        _span(n, "invoke_agent a", n - 1, gen_ai__operation__name="invoke_agent") for n in (2, 3)
    ]
    with pytest.raises(
        InputError, match=rf"^t.jsonl: trace {TRACE} span {3:016x}: agents nested deeper than 1$"
    ):
        _import(_request(*spans))


def _without_source(trajectories: list[Trajectory]) -> list[dict[str, Any]]:
    dumped = [t.model_dump(mode="json") for t in trajectories]
    for item in dumped:
        item["source"]["format"] = None
        for step in item["steps"]:
            if step["kind"] == "handoff":
                step["trajectory"]["source"]["format"] = None
    return dumped


def _protobuf(document: dict[str, Any]) -> bytes:
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    as_base64 = copy.deepcopy(document)  # the protobuf JSON mapping writes bytes as base64
    for block in as_base64["resourceSpans"]:
        for scope in block["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    return json_format.ParseDict(as_base64, ExportTraceServiceRequest()).SerializeToString()


@pytest.mark.parametrize("trace", [_agent_trace, _nested_trace])
def test_protobuf_bodies_import_to_the_same_trajectories_as_json(trace: Any) -> None:
    document = trace()
    from_json = import_otlp(json.dumps(document).encode(), "application/json")
    from_protobuf = import_otlp(_protobuf(document), "application/x-protobuf")
    assert _without_source(from_protobuf) == _without_source(from_json)
    assert from_protobuf[0].source is not None
    assert from_protobuf[0].source.format == "otlp_protobuf"
    assert from_json[0].source is not None
    assert from_json[0].source.format == "otlp_json"


def test_a_gzip_encoded_body_imports() -> None:
    body = gzip.compress(json.dumps(_agent_trace()).encode())
    [trajectory] = import_otlp(body, "application/json; charset=utf-8", content_encoding="gzip")
    assert trajectory.final_answer == ANSWER


def test_load_otlp_reads_protobuf_files_and_pretty_printed_json(tmp_path: Path) -> None:
    binary, pretty = tmp_path / "trace.binpb", tmp_path / "trace.json"
    binary.write_bytes(_protobuf(_agent_trace()))
    pretty.write_text(json.dumps(_agent_trace(), indent=2), encoding="utf-8")
    [from_binary], [from_pretty] = load_otlp(binary), load_otlp(pretty)
    assert from_binary.source is not None
    assert from_pretty.source is not None
    assert (from_binary.source.format, from_binary.source.file) == ("otlp_protobuf", str(binary))
    assert (from_pretty.source.format, from_pretty.final_answer) == ("otlp_json", ANSWER)


@pytest.mark.parametrize(
    ("body", "content_type", "encoding", "expected"),
    [
        (b"{}", "text/plain", None, "request body: unsupported content type 'text/plain'"),
        (b"{}", "application/json", "br", "request body: unsupported content encoding 'br'"),
        (b"not gzip", "application/json", "gzip", "request body: not valid gzip"),
        (
            gzip.compress(b"{}", mtime=0)[:-6],
            "application/json",
            "gzip",
            "request body: the gzip stream is truncated",
        ),
        (b"\xff{}", "application/json", None, "request body: byte 0 is not valid UTF-8"),
        (b"{]", "application/json", None, "request body:1:2: invalid JSON"),
        (b"[]", "application/json", None, "request body: expected an OTLP export request"),
        (
            b"\x0a\x03abc",
            "application/x-protobuf",
            None,
            "request body: not a protobuf ExportTraceServiceRequest",
        ),
    ],
)
def test_a_bad_request_body_is_an_input_error_naming_it(
    body: bytes, content_type: str, encoding: str | None, expected: str
) -> None:
    with pytest.raises(InputError) as caught:
        import_otlp(body, content_type, content_encoding=encoding)
    assert str(caught.value).startswith(expected), str(caught.value)


def test_a_gzip_bomb_is_refused_before_it_inflates(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(otlp_module, "MAX_BODY_BYTES", 1000)
    with pytest.raises(InputError, match="inflates past 1,000 bytes"):
        import_otlp(gzip.compress(b" " * 100_000), "application/json", content_encoding="gzip")


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("{oops", "f.jsonl:2:2: invalid JSON"),
        (
            json.dumps(_request({"traceId": TRACE, "name": "x"})),
            "f.jsonl:2: resourceSpans[0].scopeSpans[0].spans[0].spanId: missing",
        ),
        (
            json.dumps(_request(_span(9, "x", start=10, end=5))),
            f"f.jsonl:2: resourceSpans[0].scopeSpans[0].spans[0] (span {9:016x}): endTimeUnixNano",
        ),
    ],
)
def test_a_bad_line_of_a_trace_file_names_file_and_line(
    tmp_path: Path, line: str, expected: str
) -> None:
    file = tmp_path / "f.jsonl"
    file.write_text(json.dumps(_agent_trace()) + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_otlp(file)
    assert str(caught.value).startswith(f"{tmp_path}/{expected}"), str(caught.value)


def test_a_missing_trace_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        load_otlp(tmp_path / "absent.binpb")


_scalar = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30)
)
_json = st.recursive(
    _scalar,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=3),
    max_leaves=12,
)
_keys = st.sampled_from(
    [
        "gen_ai.operation.name",
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.system_instructions",
        "gen_ai.tool.name",
        "gen_ai.tool.call.id",
        "gen_ai.tool.call.arguments",
        "gen_ai.usage.input_tokens",
        "gen_ai.agent.name",
        "gen_ai.retrieval.documents",
        "gen_ai.prompt.0.content",
        "gen_ai.completion.0.tool_calls.0.name",
        "gen_ai.request.model",
        "error.type",
        "gen_ai.usage.cost",
    ]
)
_operations = st.sampled_from(
    ["invoke_agent", "chat", "execute_tool", "retrieval", "embeddings", "other"]
)


@settings(max_examples=200, deadline=None)
@given(
    spans=st.lists(
        st.tuples(
            _operations,
            st.dictionaries(_keys, _json | _json.map(json.dumps), max_size=5),
            st.integers(0, 5),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_genai_attributes_of_any_shape_never_fail_an_import(
    spans: list[tuple[str, dict[str, Any], int]],
) -> None:
    built = []
    for number, (op, attributes, parent) in enumerate(spans, start=1):
        span = _span(
            number, op, parent if 0 < parent < number else None, start=number, end=number + 1
        )
        span["attributes"] = _attrs({"gen_ai.operation.name": op, **attributes})
        built.append(span)
    trajectories = _import(_request(*built))
    assert trajectories
    assert all(isinstance(t, Trajectory) for t in trajectories)


@settings(max_examples=200, deadline=None)
@given(document=_json)
def test_arbitrary_json_bodies_raise_nothing_but_input_error(document: Any) -> None:
    try:
        import_otlp(json.dumps(document).encode(), "application/json")
    except InputError as exc:
        message = str(exc)
    else:
        message = ""
    assert "\n" not in message


def test_a_model_call_recorded_twice_by_nested_instrumentations_is_one_call() -> None:
    document = _request(
        _span(1, "invoke_agent A", gen_ai__operation__name="invoke_agent"),
        _span(2, "chat gpt-4o", 1, gen_ai__operation__name="chat", gen_ai__usage__input_tokens=5),
        _span(3, "chat gpt-4o", 2, gen_ai__operation__name="chat", gen_ai__usage__input_tokens=5),
    )
    [trajectory] = _import(document)
    assert [call.id for call in trajectory.llm_calls] == [f"{2:016x}"]


def test_an_agent_called_as_a_tool_is_a_handoff_after_the_tool_call() -> None:
    document = _request(
        _span(1, "invoke_agent Boss", gen_ai__operation__name="invoke_agent"),
        _span(2, "execute_tool ask_expert", 1, start=1, end=9, gen_ai__tool__name="ask_expert"),
        _span(3, "invoke_agent Expert", 2, start=2, end=8, gen_ai__operation__name="invoke_agent"),
    )
    [boss] = _import(document)
    assert [type(step) for step in boss.steps] == [ToolCall, Handoff]


def test_a_run_of_more_steps_than_the_contract_holds_is_an_input_error_naming_the_root(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(otlp_module, "MAX_STEPS", 2)
    document = _request(
        _span(1, "invoke_agent A", gen_ai__operation__name="invoke_agent"),
        *(_span(n, "execute_tool t", 1, gen_ai__tool__name="t") for n in (2, 3, 4)),
    )
    with pytest.raises(
        InputError, match=rf"^t.jsonl: trace {TRACE} span {1:016x}: .*more than 2 steps"
    ):
        _import(document)


def test_a_retrieval_score_too_large_for_a_float_is_no_similarity() -> None:
    documents = '[{"id": "d", "score": 1' + "0" * 400 + "}]"
    document = _request(
        _span(
            1,
            "retrieval",
            gen_ai__operation__name="retrieval",
            gen_ai__retrieval__documents=documents,
        )
    )
    [retrieval] = _import(document)[0].steps
    assert isinstance(retrieval, Retrieval)
    assert [(c.source, c.similarity) for c in retrieval.chunks] == [("d", None)]


def test_openai_shaped_messages_under_the_new_attribute_names_are_read() -> None:
    output = _messages(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "function": {"name": "lookup", "arguments": '{"q": "x"}'}}],
        }
    )
    inputs = _messages({"role": "user", "content": [{"type": "text", "text": "find x"}]})
    span = _span(
        1,
        "chat m",
        gen_ai__operation__name="chat",
        gen_ai__input__messages=inputs,
        gen_ai__output__messages=output,
    )
    [trajectory] = _import(_request(span))
    assert trajectory.llm_calls[0].input_messages[0].content == "find x"
    assert [(t.name, t.call_id, t.arguments) for t in trajectory.tool_calls] == [
        ("lookup", "c1", {"q": "x"})
    ]
