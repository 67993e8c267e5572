"""OpenAI chat conversations with tool calls import as trajectories, and bad lines are named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from arbiter.contract import LlmCall, ToolCall
from arbiter.errors import InputError
from arbiter.trajectories import load_openai_messages, parse_openai_messages
from arbiter.trajectories.openai_messages import conversation_to_trajectory


def _call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


WEATHER = [
    {"role": "system", "content": "You are a travel assistant."},
    {"role": "user", "content": "Weather in Paris and Rome?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            _call("call_1", "get_weather", '{"city": "Paris"}'),
            _call("call_2", "get_weather", '{"city": "Rome", "unit": "c"}'),
        ],
    },
    {"role": "tool", "tool_call_id": "call_2", "content": '{"temp": 24}'},
    {"role": "tool", "tool_call_id": "call_1", "content": '{"temp": 18}'},
    {"role": "assistant", "content": [{"type": "text", "text": "Paris 18°C, Rome 24°C."}]},
]


def _one(record: Any) -> Any:
    [trajectory] = parse_openai_messages(json.dumps(record), source="c.jsonl")
    return trajectory


def test_tool_calls_become_steps_with_decoded_arguments_and_their_results() -> None:
    trajectory = _one({"id": "conv-1", "model": "gpt-4o", "messages": WEATHER})
    calls = trajectory.tool_calls
    assert [(c.name, c.call_id, c.arguments, c.result) for c in calls] == [
        ("get_weather", "call_1", {"city": "Paris"}, '{"temp": 18}'),
        ("get_weather", "call_2", {"city": "Rome", "unit": "c"}, '{"temp": 24}'),
    ]
    assert all(c.succeeded for c in calls)


def test_steps_follow_the_conversation_order() -> None:
    kinds = [type(step) for step in _one(WEATHER).steps]
    assert kinds == [LlmCall, ToolCall, ToolCall, LlmCall]


def test_an_llm_call_holds_the_messages_since_the_previous_assistant_turn() -> None:
    first, second = _one({"model": "gpt-4o", "messages": WEATHER}).llm_calls
    assert [m.role for m in first.input_messages] == ["system", "user"]
    assert [(m.role, m.content) for m in second.input_messages] == [
        ("tool", '{"temp": 24}'),
        ("tool", '{"temp": 18}'),
    ]
    assert second.output_messages[0].content == "Paris 18°C, Rome 24°C."
    assert first.model == second.model == "gpt-4o"


def test_last_assistant_text_is_the_final_answer_of_a_completed_run() -> None:
    trajectory = _one({"id": "conv-1", "conversation_id": "s-9", "messages": WEATHER})
    assert trajectory.final_answer == "Paris 18°C, Rome 24°C."
    assert (trajectory.status, trajectory.id, trajectory.conversation_id) == (
        "completed",
        "conv-1",
        "s-9",
    )


def test_a_tool_call_without_a_result_keeps_none_and_the_run_is_incomplete() -> None:
    trajectory = _one(WEATHER[:3])
    assert [c.result for c in trajectory.tool_calls] == [None, None]
    assert (trajectory.status, trajectory.final_answer) == ("incomplete", None)


def test_malformed_arguments_are_kept_as_written_with_an_error() -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [_call("c1", "f", '{"a": 1')]},
        {"role": "tool", "tool_call_id": "c1", "content": "bad request"},
    ]
    [call] = _one(messages).tool_calls
    assert call.arguments == '{"a": 1'
    assert call.error is not None
    assert call.error.startswith("the arguments are not valid JSON")
    assert not call.succeeded


def test_empty_arguments_read_as_no_arguments() -> None:
    messages = [{"role": "assistant", "content": None, "tool_calls": [_call("c1", "now", "")]}]
    assert _one(messages).tool_calls[0].arguments == {}


def test_hostile_text_is_kept_verbatim_as_data() -> None:
    hostile = "<script>alert(1)</script>\x1b[2J\u202e; DROP TABLE runs; --"
    messages = [
        {"role": "user", "content": hostile},
        {"role": "assistant", "content": None, "tool_calls": [_call("c1", hostile, "{}")]},
        {"role": "tool", "tool_call_id": "c1", "content": hostile},
        {"role": "assistant", "content": hostile},
    ]
    trajectory = _one(messages)
    assert trajectory.final_answer == hostile
    assert (trajectory.tool_calls[0].name, trajectory.tool_calls[0].result) == (hostile, hostile)


def test_source_names_the_file_and_line(tmp_path: Path) -> None:
    file = tmp_path / "conversations.jsonl"
    file.write_text("\n" + json.dumps(WEATHER) + "\n\n" + json.dumps({"messages": WEATHER}) + "\n")
    first, second = load_openai_messages(file)
    assert first.source is not None
    assert second.source is not None
    assert (first.source.format, first.source.file, first.source.line) == (
        "openai_messages",
        str(file),
        2,
    )
    assert second.source.line == 4


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{", r"c\.jsonl:2:2: invalid JSON"),
        ('"hello"', r"c\.jsonl:2: expected an object with 'messages' or a list of messages"),
        ('{"messages": {}}', r"c\.jsonl:2: 'messages' must be a list of messages, got object"),
        ('{"msgs": []}', r"c\.jsonl:2: 'messages' must be a list of messages, got nothing"),
        ('{"id": 3, "messages": []}', r"c\.jsonl:2: 'id' must be a string, got number"),
        ("[1]", r"c\.jsonl:2: messages\[0\]: a message must be an object"),
        ('[{"content": "x"}]', r"c\.jsonl:2: messages\[0\]\.role: must be a string, got null"),
        ('[{"role": "user", "content": 5}]', r"messages\[0\]\.content: must be a string"),
        (
            '[{"role": "tool", "tool_call_id": 7, "content": "x"}]',
            r"c\.jsonl:2: messages\[0\]\.tool_call_id: must be a string, got number",
        ),
        (
            '[{"role": "assistant", "tool_calls": [{"id": "c", "function": {"arguments": "{}"}}]}]',
            r"messages\[0\]\.tool_calls\[0\]\.function\.name: must be a string",
        ),
        (
            '{"messages": [], "metadata": [1]}',
            r"c\.jsonl:2: 'metadata' must be an object, got array",
        ),
    ],
)
def test_a_line_that_is_not_a_conversation_is_named(line: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_openai_messages("\n" + line + "\n", source="c.jsonl")


def test_a_second_answer_to_a_call_is_a_repair_kept_as_a_message_only() -> None:
    answer = {"role": "tool", "tool_call_id": "call_1", "content": "again"}
    warnings: list[str] = []
    trajectory = conversation_to_trajectory(
        [*WEATHER[:5], answer], source="c.jsonl", line=1, warnings=warnings
    )
    assert [c.result for c in trajectory.tool_calls] == ['{"temp": 18}', '{"temp": 24}']
    assert warnings == [
        "c.jsonl:1: messages[5].tool_call_id: tool call 'call_1' is answered already; "
        "the result is kept as a message only"
    ]


def test_an_oversized_answer_is_refused_with_its_field() -> None:
    messages = [{"role": "assistant", "content": "x" * 1_000_001}]
    with pytest.raises(InputError, match=r"c\.jsonl:1: field 'steps\[0\]\.output_messages"):
        parse_openai_messages(json.dumps(messages), source="c.jsonl")


def test_a_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        load_openai_messages(tmp_path / "absent.jsonl")


LEGACY = [
    {"role": "user", "content": "Weather in Oslo?"},
    {
        "role": "assistant",
        "content": None,
        "function_call": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
    },
    {"role": "function", "name": "get_weather", "content": '{"temp": -3}'},
    {"role": "assistant", "content": "Oslo is at -3°C."},
]


def test_a_legacy_function_call_is_a_tool_call_with_its_result() -> None:
    trajectory = _one({"messages": LEGACY})
    [call] = trajectory.tool_calls
    assert (call.name, call.call_id, call.arguments, call.result) == (
        "get_weather",
        None,
        {"city": "Oslo"},
        '{"temp": -3}',
    )
    assert [type(step) for step in trajectory.steps] == [LlmCall, ToolCall, LlmCall]
    assert (trajectory.status, trajectory.final_answer) == ("completed", "Oslo is at -3°C.")


def test_a_function_result_is_an_input_message_of_the_next_llm_call() -> None:
    second = _one(LEGACY).llm_calls[1]
    assert [(m.role, m.name, m.content) for m in second.input_messages] == [
        ("function", "get_weather", '{"temp": -3}')
    ]


def test_legacy_results_pair_with_calls_of_their_name_in_order() -> None:
    def ask(city: str) -> dict[str, Any]:
        arguments = json.dumps({"city": city})
        return {"role": "assistant", "function_call": {"name": "w", "arguments": arguments}}

    def answer(name: str, text: str) -> dict[str, Any]:
        return {"role": "function", "name": name, "content": text}

    messages = [ask("A"), ask("B"), answer("w", "a"), answer("w", "b")]
    assert [(c.arguments, c.result) for c in _one(messages).tool_calls] == [
        ({"city": "A"}, "a"),
        ({"city": "B"}, "b"),
    ]


def test_a_conversation_ending_on_a_legacy_call_is_incomplete() -> None:
    trajectory = _one(LEGACY[:2])
    assert trajectory.status == "incomplete"
    assert trajectory.tool_calls[0].result is None


def test_legacy_arguments_that_are_not_json_are_kept_with_an_error() -> None:
    message = {"role": "assistant", "function_call": {"name": "w", "arguments": "{city:"}}
    [call] = _one([message]).tool_calls
    assert call.arguments == "{city:"
    assert call.error is not None
    assert "not valid JSON" in call.error


@pytest.mark.parametrize(
    ("messages", "message"),
    [
        (
            [{"role": "function", "content": "x"}],
            r"messages\[0\]\.name: must be a string, got null",
        ),
        (
            [{"role": "assistant", "function_call": "w()"}],
            r"messages\[0\]\.function_call: must be an object, got string",
        ),
        (
            [{"role": "assistant", "function_call": {"arguments": "{}"}}],
            r"messages\[0\]\.function_call\.name: must be a string, got null",
        ),
    ],
)
def test_a_malformed_legacy_call_is_named(messages: list[Any], message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_openai_messages(json.dumps(messages), source="c.jsonl")


@pytest.mark.parametrize(
    ("messages", "warning"),
    [
        (
            [{"role": "function", "name": "w", "content": "x"}],
            "c.jsonl:1: messages[0].name: 'w' answers no earlier function_call; "
            "kept as a message only",
        ),
        (
            [*LEGACY[:3], {"role": "function", "name": "get_weather", "content": "again"}],
            "c.jsonl:1: messages[3].name: 'get_weather' answers no earlier function_call; "
            "kept as a message only",
        ),
    ],
)
def test_a_legacy_result_no_call_asked_for_is_a_repair(messages: list[Any], warning: str) -> None:
    warnings: list[str] = []
    trajectory = conversation_to_trajectory(messages, source="c.jsonl", line=1, warnings=warnings)
    assert warnings == [warning]
    assert all(call.result != "again" for call in trajectory.tool_calls)
