"""OpenInference spans import as trajectories: agents, hand-offs, LLM calls, tools, retrievals.

The fixtures are OTLP/JSON export requests in OpenInference's exact shape (flattened,
indexed attribute keys, as Phoenix's instrumentations write them); one test records
spans with OpenInference's own SDK and reads them back from an OTLP protobuf file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from arbiter.contract import Handoff, LlmCall, Retrieval, ToolCall, Trajectory
from arbiter.errors import InputError
from arbiter.trajectories.openinference import (
    MAX_AGENT_DEPTH,
    load_openinference,
    looks_like_openinference,
    trajectories_from_openinference,
)
from arbiter.trajectories.spans import Span, decode_otlp_json

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
T0 = 1_764_547_200_000_000_000  # ns
MS = 1_000_000
SCOPE = "openinference.instrumentation.langchain"


def sid(n: int) -> str:
    return f"{n:016x}"


def any_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [any_value(v) for v in value]}}
    return {"stringValue": value}


def span(
    n: int,
    name: str,
    kind: str | None,
    attributes: dict[str, Any] | None = None,
    *,
    parent: int | None = None,
    start_ms: int = 0,
    end_ms: int | None = None,
    error: str | None = None,
    trace: str = TRACE,
) -> dict[str, Any]:
    attrs = dict(attributes or {})
    if kind is not None:
        attrs["openinference.span.kind"] = kind
    document: dict[str, Any] = {
        "traceId": trace,
        "spanId": sid(n),
        "name": name,
        "kind": 1,
        "startTimeUnixNano": str(T0 + start_ms * MS),
        "endTimeUnixNano": str(T0 + (end_ms if end_ms is not None else start_ms + 1) * MS),
        "attributes": [{"key": k, "value": any_value(v)} for k, v in attrs.items()],
        "status": {"code": 2, "message": error} if error else {"code": 1},
    }
    if parent is not None:
        document["parentSpanId"] = sid(parent)
    return document


def request(*spans: dict[str, Any]) -> dict[str, Any]:
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": any_value("bot")}]},
                "scopeSpans": [{"scope": {"name": SCOPE}, "spans": list(spans)}],
            }
        ]
    }


def decoded(*spans: dict[str, Any]) -> list[Span]:
    return decode_otlp_json(request(*spans), where="trace.jsonl:1")[0]


def run(*spans: dict[str, Any]) -> list[Trajectory]:
    return trajectories_from_openinference(decoded(*spans), file="trace.jsonl")


def one(*spans: dict[str, Any]) -> Trajectory:
    [trajectory] = run(*spans)
    return trajectory


def llm(n: int, parent: int, start_ms: int, **attributes: Any) -> dict[str, Any]:
    attrs = {"llm.model_name": "gpt-4o-2024-08-06", **attributes}
    return span(n, "ChatOpenAI", "LLM", attrs, parent=parent, start_ms=start_ms)


def asked(call_id: str | None, name: str, arguments: str, message: int = 0) -> dict[str, Any]:
    at = f"llm.output_messages.{message}.message"
    attrs = {
        f"{at}.role": "assistant",
        f"{at}.tool_calls.0.tool_call.function.name": name,
        f"{at}.tool_calls.0.tool_call.function.arguments": arguments,
    }
    if call_id is not None:
        attrs[f"{at}.tool_calls.0.tool_call.id"] = call_id
    return attrs


QUESTION = {
    "llm.input_messages.0.message.role": "system",
    "llm.input_messages.0.message.content": "You are a weather assistant.",
    "llm.input_messages.1.message.role": "user",
    "llm.input_messages.1.message.content": "Weather in Paris?",
}
ANSWERED = {
    **QUESTION,
    "llm.input_messages.2.message.role": "tool",
    "llm.input_messages.2.message.tool_call_id": "call_1",
    "llm.input_messages.2.message.content": '{"temp_c": 18}',
    "llm.output_messages.0.message.role": "assistant",
    "llm.output_messages.0.message.content": "18°C in Paris.",
}
TOKENS = {"llm.token_count.prompt": 52, "llm.token_count.completion": 17, "llm.cost.total": 0.0012}
AGENT = {
    "agent.name": "weather_agent",
    "session.id": "session-7",
    "input.value": "Weather in Paris?",
    "output.value": "It is 18°C in Paris.",
}


def weather_agent(*, with_tool_span: bool) -> list[dict[str, Any]]:
    spans = [
        span(1, "AgentExecutor", "AGENT", AGENT, end_ms=100),
        llm(2, 1, 1, **QUESTION, **asked("call_1", "get_weather", '{"city": "Paris"}'), **TOKENS),
        llm(4, 1, 30, **ANSWERED, **{"llm.token_count.prompt": 80}),
    ]
    if with_tool_span:
        tool = {
            "tool.name": "get_weather",
            "input.value": '{"city": "Paris"}',
            "input.mime_type": "application/json",
            "output.value": '{"temp_c": 18}',
            "output.mime_type": "application/json",
        }
        spans.append(span(3, "get_weather", "TOOL", tool, parent=1, start_ms=10, end_ms=20))
    return spans


def test_an_agent_span_is_a_trajectory_with_its_identity_session_and_answer() -> None:
    trajectory = one(*weather_agent(with_tool_span=True))
    assert trajectory.agent.name == "weather_agent"
    assert trajectory.conversation_id == "session-7"
    assert trajectory.final_answer == "It is 18°C in Paris."
    assert trajectory.status == "completed"
    assert trajectory.source is not None
    assert (trajectory.source.format, trajectory.source.file) == ("openinference", "trace.jsonl")
    assert trajectory.source.trace_id == TRACE
    assert trajectory.source.span_ids == [sid(1), sid(2), sid(3), sid(4)]


def test_steps_follow_the_spans_start_order() -> None:
    steps = one(*weather_agent(with_tool_span=True)).steps
    assert [(type(s), s.id) for s in steps] == [
        (LlmCall, sid(2)),
        (ToolCall, sid(3)),
        (LlmCall, sid(4)),
    ]


def test_an_llm_span_is_an_llm_call_with_model_messages_tokens_and_cost() -> None:
    first, second = one(*weather_agent(with_tool_span=True)).llm_calls
    assert first.model == "gpt-4o-2024-08-06"
    assert [(m.role, m.content) for m in first.input_messages] == [
        ("system", "You are a weather assistant."),
        ("user", "Weather in Paris?"),
    ]
    assert [(m.role, m.content) for m in first.output_messages] == [("assistant", None)]
    assert (first.input_tokens, first.output_tokens, first.cost_usd) == (52, 17, 0.0012)
    assert (second.input_tokens, second.output_tokens) == (80, None)
    assert second.output_messages[0].content == "18°C in Paris."


def test_a_tool_span_is_a_tool_call_tied_to_the_call_the_model_asked_for() -> None:
    [call] = one(*weather_agent(with_tool_span=True)).tool_calls
    assert (call.id, call.name, call.call_id) == (sid(3), "get_weather", "call_1")
    assert call.arguments == {"city": "Paris"}
    assert call.result == {"temp_c": 18}
    assert call.duration == pytest.approx(10.0)
    assert call.succeeded


def test_tool_calls_only_in_an_llm_output_become_tool_steps_with_their_results() -> None:
    trajectory = one(*weather_agent(with_tool_span=False))
    assert [type(s) for s in trajectory.steps] == [LlmCall, ToolCall, LlmCall]
    [call] = trajectory.tool_calls
    assert (call.name, call.call_id, call.arguments) == ("get_weather", "call_1", {"city": "Paris"})
    assert call.result == {"temp_c": 18}  # the tool message of the next LLM call, decoded
    assert call.id is None  # no span of its own


def test_a_tool_call_no_message_answers_has_no_result() -> None:
    spans = [
        span(1, "agent", "AGENT"),
        llm(2, 1, 1, **asked("call_9", "search", '{"q": "x"}')),
    ]
    [call] = one(*spans).tool_calls
    assert (call.name, call.result) == ("search", None)


def test_a_tool_span_without_an_id_is_matched_by_name_not_duplicated() -> None:
    spans = [
        span(1, "agent", "AGENT"),
        llm(2, 1, 1, **asked("call_1", "get_weather", '{"city": "Paris"}')),
        span(3, "get_weather", "TOOL", {"input.value": '{"city": "Paris"}'}, parent=1, start_ms=5),
        span(4, "lookup", "TOOL", {"tool.id": "other"}, parent=1, start_ms=6),
    ]
    calls = one(*spans).tool_calls
    assert [(c.name, c.call_id, c.id) for c in calls] == [
        ("get_weather", "call_1", sid(3)),
        ("lookup", "other", sid(4)),
    ]


def test_arguments_a_model_wrote_as_broken_json_are_kept_with_an_error() -> None:
    spans = [span(1, "agent", "AGENT"), llm(2, 1, 1, **asked("c", "f", '{"city": '))]
    [call] = one(*spans).tool_calls
    assert call.arguments == '{"city": '
    assert call.error is not None
    assert "not valid JSON" in call.error


@pytest.mark.parametrize(
    ("attributes", "arguments"),
    [
        pytest.param(
            {
                "input.value": '{"city": "Paris"}',
                "tool.parameters": '{"type": "object", "properties": {"city": {}}}',
            },
            {"city": "Paris"},
            id="input-value-over-schema",
        ),
        pytest.param(
            {"tool.parameters": '{"type": "object", "properties": {"city": {}}}'},
            None,
            id="schema-alone-is-not-arguments",
        ),
        pytest.param({"tool.parameters": '{"city": "Rome"}'}, {"city": "Rome"}, id="parameters"),
        pytest.param({"input.value": "Paris"}, "Paris", id="plain-text"),
        pytest.param(
            {"input.value": "{not json", "input.mime_type": "application/json"},
            "{not json",
            id="bad-json-kept-as-text",
        ),
    ],
)
def test_tool_arguments_come_from_input_value_else_from_parameters_not_a_schema(
    attributes: dict[str, Any], arguments: Any
) -> None:
    spans = [span(1, "agent", "AGENT"), span(2, "tool", "TOOL", attributes, parent=1)]
    [call] = one(*spans).tool_calls
    assert call.arguments == arguments


def test_nested_agents_become_handoffs_holding_their_own_trajectories() -> None:
    spans = [
        span(1, "coordinator", "AGENT", {"output.value": "Both done."}, end_ms=100),
        llm(2, 1, 1, **{"llm.token_count.prompt": 10, "llm.token_count.completion": 2}),
        span(3, "route", "CHAIN", parent=1, start_ms=5, end_ms=90),
        span(4, "flights", "AGENT", {"output.value": "Flight AF12."}, parent=3, start_ms=6),
        llm(5, 4, 7, **{"llm.token_count.prompt": 30, "llm.token_count.completion": 5}),
        span(6, "hotels", "AGENT", {"agent.name": "hotel_expert"}, parent=3, start_ms=50),
        span(7, "book", "TOOL", {"input.value": '{"n": 2}'}, parent=6, start_ms=51),
        span(8, "inner", "AGENT", parent=6, start_ms=60),
    ]
    [trajectory] = run(*spans)
    assert [type(s) for s in trajectory.steps] == [LlmCall, Handoff, Handoff]
    flights, hotels = (s for s in trajectory.steps if isinstance(s, Handoff))
    assert (flights.id, flights.trajectory.agent.name) == (sid(4), "flights")
    assert flights.trajectory.final_answer == "Flight AF12."
    assert [c.name for c in hotels.trajectory.tool_calls] == ["book"]
    assert hotels.trajectory.agent.name == "hotel_expert"
    assert isinstance(hotels.trajectory.steps[-1], Handoff)  # an agent two levels down
    assert trajectory.totals().input_tokens == 40
    assert trajectory.totals(include_handoffs=False).input_tokens == 10
    assert trajectory.source is not None
    assert sid(5) not in trajectory.source.span_ids


def test_a_retriever_span_is_a_retrieval_with_its_chunks_and_scores() -> None:
    attributes = {
        "input.value": "refund policy",
        "retrieval.documents.0.document.id": "kb/refunds.md",
        "retrieval.documents.0.document.content": "Refunds within 30 days.",
        "retrieval.documents.0.document.score": 0.91,
        "retrieval.documents.1.document.id": 42,
        "retrieval.documents.1.document.score": 1,
    }
    spans = [span(1, "rag", "CHAIN"), span(2, "retrieve", "RETRIEVER", attributes, parent=1)]
    [retrieval] = one(*spans).steps
    assert isinstance(retrieval, Retrieval)
    assert retrieval.query == "refund policy"
    assert [(c.source, c.text, c.similarity) for c in retrieval.chunks] == [
        ("kb/refunds.md", "Refunds within 30 days.", 0.91),
        ("42", None, 1.0),
    ]


def test_a_reranker_span_is_a_retrieval_of_its_output_documents() -> None:
    attributes = {
        "reranker.query": "refund policy",
        "reranker.input_documents.0.document.id": "a",
        "reranker.output_documents.0.document.id": "b",
        "reranker.output_documents.0.document.score": 0.5,
    }
    spans = [span(1, "rag", "CHAIN"), span(2, "rerank", "RERANKER", attributes, parent=1)]
    [retrieval] = one(*spans).steps
    assert isinstance(retrieval, Retrieval)
    assert (retrieval.query, [c.source for c in retrieval.chunks]) == ("refund policy", ["b"])


def test_chain_and_unknown_spans_are_containers_walked_in_start_order() -> None:
    spans = [
        span(1, "agent", "AGENT", end_ms=100),
        span(2, "outer", "CHAIN", parent=1, start_ms=1, end_ms=50),
        span(3, "later", "TOOL", parent=1, start_ms=60),
        span(4, "plain http", None, parent=2, start_ms=2, end_ms=40),
        span(5, "first", "TOOL", parent=4, start_ms=3),
        span(6, "embed", "EMBEDDING", parent=2, start_ms=45),
    ]
    assert [c.name for c in one(*spans).tool_calls] == ["first", "later"]


def test_without_agent_spans_each_root_is_a_trajectory() -> None:
    other = "0" * 31 + "1"
    spans = [
        span(1, "ChatCompletion", "LLM", ANSWERED),
        span(2, "ChatCompletion", "LLM", QUESTION, trace=other),
    ]
    first, second = run(*spans)
    assert first.id == sid(1)
    assert first.agent.name is None
    assert first.final_answer == "18°C in Paris."  # the last assistant message
    assert second.source is not None
    assert second.source.trace_id == other
    assert [type(s) for s in first.steps] == [LlmCall]
    assert first.source is not None
    assert first.source.span_ids == [sid(1)]
    assert second.status == "incomplete"


def test_sibling_agents_under_one_chain_are_two_trajectories() -> None:
    spans = [
        span(1, "workflow", "CHAIN"),
        span(2, "a", "AGENT", parent=1, start_ms=1),
        span(3, "b", "AGENT", parent=1, start_ms=2),
    ]
    assert [t.agent.name for t in run(*spans)] == ["a", "b"]


def test_a_json_root_output_gives_way_to_the_last_assistant_message() -> None:
    root = {"output.value": '{"messages": []}', "output.mime_type": "application/json"}
    spans = [span(1, "agent", "AGENT", root), llm(2, 1, 1, **ANSWERED)]
    assert one(*spans).final_answer == "18°C in Paris."


def test_a_failed_root_is_an_errored_run_and_a_failed_tool_a_failed_call() -> None:
    spans = [
        span(1, "agent", "AGENT", error="budget exceeded"),
        span(2, "get_weather", "TOOL", parent=1, error="HTTP 503"),
    ]
    trajectory = one(*spans)
    assert (trajectory.status, trajectory.error) == ("error", "budget exceeded")
    [call] = trajectory.tool_calls
    assert (call.succeeded, call.error) == (False, "HTTP 503")


def test_text_parts_of_message_contents_are_joined() -> None:
    parts = {
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.contents.0.message_content.type": "text",
        "llm.input_messages.0.message.contents.0.message_content.text": "Look at ",
        "llm.input_messages.0.message.contents.1.message_content.type": "image",
        "llm.input_messages.0.message.contents.1.message_content.image.image.url": "x",
        "llm.input_messages.0.message.contents.2.message_content.type": "text",
        "llm.input_messages.0.message.contents.2.message_content.text": "this.",
    }
    [call] = one(span(1, "agent", "AGENT"), llm(2, 1, 1, **parts)).llm_calls
    assert call.input_messages[0].content == "Look at this."


@pytest.mark.parametrize(
    ("attributes", "expected"),
    [
        ({"openinference.span.kind": "LLM"}, True),
        ({"gen_ai.operation.name": "chat"}, False),
        ({}, False),
    ],
)
def test_openinference_is_recognised_by_its_span_kind_attribute(
    attributes: dict[str, Any], expected: bool
) -> None:
    assert looks_like_openinference(decoded(span(1, "s", None, attributes))) is expected


@pytest.mark.parametrize(
    ("attributes", "message"),
    [
        (
            {"llm.token_count.prompt": "many"},
            "llm.token_count.prompt: must be a non-negative integer, got 'many'",
        ),
        ({"llm.token_count.completion": -1}, "llm.token_count.completion: must be a non-negative"),
        ({"llm.cost.total": "free"}, "llm.cost.total: must be a non-negative number"),
        (
            {"llm.input_messages.0.message.content": "hi"},
            "llm.input_messages.0.message.role: missing",
        ),
        (
            {"llm.input_messages.0.message.role": True},
            "llm.input_messages.0.message.role: must be a string, got boolean",
        ),
        (
            {"llm.input_messages.first.message.role": "user"},
            "llm.input_messages.first.message.role: expected llm.input_messages.<index>.<field>",
        ),
        (
            {
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.tool_calls.0.tool_call.id": "c",
            },
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.name: missing",
        ),
        (
            {
                "llm.input_messages.0.message.role": "user",
                "llm.input_messages.0.message.content": "x" * 1_000_001,
            },
            "field 'steps[0].input_messages[0].content'",
        ),
    ],
)
def test_an_llm_span_breaking_the_conventions_is_named_by_span_and_attribute(
    attributes: dict[str, Any], message: str
) -> None:
    with pytest.raises(InputError) as caught:
        run(span(1, "agent", "AGENT"), llm(2, 1, 1, **attributes))
    text = str(caught.value)
    assert "\n" not in text
    assert text.startswith("trace.jsonl: span ")
    assert message in text


def test_a_bad_retrieval_score_is_named() -> None:
    attributes = {"retrieval.documents.0.document.score": "high"}
    with pytest.raises(InputError, match=rf"span {sid(2)}: retrieval.documents.0.document.score"):
        run(span(1, "rag", "CHAIN"), span(2, "r", "RETRIEVER", attributes, parent=1))


def test_agents_nested_too_deep_are_refused() -> None:
    depth = MAX_AGENT_DEPTH + 2
    spans = [span(1, "a", "AGENT")] + [
        span(n, "a", "AGENT", parent=n - 1, start_ms=n) for n in range(2, depth + 1)
    ]
    with pytest.raises(InputError, match=f"agents nested deeper than {MAX_AGENT_DEPTH}"):
        run(*spans)


def test_a_file_of_otlp_json_lines_loads(tmp_path: Path) -> None:
    file = tmp_path / "oi.jsonl"
    lines = [request(*weather_agent(with_tool_span=False)), request(span(9, "x", "LLM", QUESTION))]
    file.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    first, second = load_openinference(file)
    assert [c.name for c in first.tool_calls] == ["get_weather"]
    assert first.source is not None
    assert first.source.file == str(file)
    assert second.id == sid(9)


def test_a_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read the trace file"):
        load_openinference(tmp_path / "absent.jsonl")


def test_spans_recorded_by_the_openinference_sdk_load_from_a_protobuf_file(
    tmp_path: Path,
) -> None:
    """OpenInference's own tracer writes the tool's schema into ``tool.parameters``."""
    oi = pytest.importorskip("openinference.instrumentation", reason="needs openinference")
    sdk_trace = pytest.importorskip("opentelemetry.sdk.trace", reason="needs opentelemetry-sdk")
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = sdk_trace.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = oi.OITracer(provider.get_tracer("test"), config=oi.TraceConfig())

    @tracer.tool
    def get_weather(city: str) -> str:
        return f"sunny in {city}"

    @tracer.agent(name="weather_agent")
    def agent(question: str) -> str:
        return get_weather(city="Paris")

    assert agent("Weather in Paris?") == "sunny in Paris"
    file = tmp_path / "spans.binpb"
    file.write_bytes(encode_spans(exporter.get_finished_spans()).SerializeToString())
    provider.shutdown()

    [trajectory] = load_openinference(file)
    assert trajectory.agent.name == "weather_agent"
    [call] = trajectory.tool_calls
    assert (call.name, call.arguments, call.result) == (
        "get_weather",
        {"city": "Paris"},
        "sunny in Paris",
    )
    assert trajectory.final_answer == "sunny in Paris"
