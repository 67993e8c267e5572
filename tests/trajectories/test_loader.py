"""The loader tells a trajectory file's format and imports its runs with what the source says."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from arbiter.errors import InputError
from arbiter.trajectories.loader import FORMATS, detect_format, load_runs

from .test_tau2_bench import _results as tau2_results
from .test_tau2_bench import _simulation as tau2_simulation
from .test_tau_bench import _record as tau_record

UDERIA_SAMPLE = Path(__file__).parent / "data" / "uderia_turn.jsonl"

CHAT = [
    {"role": "user", "content": "Weather in Oslo?"},
    {
        "role": "assistant",
        "tool_calls": [
            {"id": "c1", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "-3"},
    {"role": "assistant", "content": "It is -3°C."},
]


def _attribute(key: str, value: str) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value}}


def _span(
    span_id: str, name: str, attributes: list[dict[str, Any]], **extra: Any
) -> dict[str, Any]:
    return {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": span_id,
        "name": name,
        "kind": 1,
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000001000000000",
        "attributes": attributes,
        **extra,
    }


def _export(spans: list[dict[str, Any]]) -> dict[str, Any]:
    resource = {"attributes": [_attribute("service.name", "travel-agent")]}
    return {"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": spans}]}]}


GENAI = _export(
    [
        _span(
            "eee19b7ec3c1b174",
            "invoke_agent travel",
            [
                _attribute("gen_ai.operation.name", "invoke_agent"),
                _attribute("gen_ai.agent.name", "travel"),
                _attribute("gen_ai.conversation.id", "conv-7"),
            ],
        ),
        _span(
            "eee19b7ec3c1b175",
            "execute_tool get_weather",
            [
                _attribute("gen_ai.operation.name", "execute_tool"),
                _attribute("gen_ai.tool.name", "get_weather"),
                _attribute("gen_ai.tool.call.arguments", '{"city": "Oslo"}'),
            ],
            parentSpanId="eee19b7ec3c1b174",
        ),
    ]
)
OPENINFERENCE = _export(
    [
        _span(
            "aaa19b7ec3c1b174",
            "agent",
            [_attribute("openinference.span.kind", "AGENT"), _attribute("output.value", "Done.")],
        ),
        _span(
            "aaa19b7ec3c1b175",
            "get_weather",
            [
                _attribute("openinference.span.kind", "TOOL"),
                _attribute("tool.name", "get_weather"),
                _attribute("input.value", '{"city": "Oslo"}'),
            ],
            parentSpanId="aaa19b7ec3c1b174",
        ),
    ]
)


def _write(tmp_path: Path, name: str, content: Any, *, lines: bool = False) -> Path:
    file = tmp_path / name
    if lines:
        file.write_text("".join(json.dumps(record) + "\n" for record in content))
    else:
        file.write_text(json.dumps(content, indent=2))
    return file


@pytest.mark.parametrize(
    ("name", "content", "lines", "expected"),
    [
        ("spans.jsonl", [GENAI], True, "otlp"),
        ("spans.json", GENAI, False, "otlp"),
        ("phoenix.jsonl", [OPENINFERENCE], True, "openinference"),
        ("results.json", None, False, "tau2_bench"),
        ("tau.json", [tau_record(0, 0, 1.0)], False, "tau_bench"),
        ("tau.jsonl", [tau_record(0, 0, 1.0), tau_record(0, 1, 0.0)], True, "tau_bench"),
        ("chats.jsonl", [{"messages": CHAT}], True, "openai_messages"),
        ("bare.jsonl", [CHAT], True, "openai_messages"),
    ],
)
def test_the_format_is_told_from_the_first_record(
    tmp_path: Path, name: str, content: Any, lines: bool, expected: str
) -> None:
    content = tau2_results() if content is None else content
    assert detect_format(_write(tmp_path, name, content, lines=lines)) == expected


@pytest.mark.parametrize("suffix", [".pb", ".binpb", ".PB"])
def test_a_protobuf_file_is_otlp_by_its_extension(tmp_path: Path, suffix: str) -> None:
    file = tmp_path / f"spans{suffix}"
    file.write_bytes(b"\x0a\x00")
    assert detect_format(file) == "otlp"


@pytest.mark.parametrize("content", ['{"rows": [1, 2]}\n', "[1, 2]\n", "", "\n\n"])
def test_a_file_whose_format_cannot_be_told_lists_the_formats(tmp_path: Path, content: str) -> None:
    file = tmp_path / "mystery.json"
    file.write_text(content)
    with pytest.raises(InputError, match=r"mystery\.json: cannot tell the format") as raised:
        detect_format(file)
    assert all(name in str(raised.value) for name in FORMATS)


def test_tau_bench_trials_are_runs_of_their_task_with_the_reward_and_gold_actions(
    tmp_path: Path,
) -> None:
    records = [tau_record(3, trial, reward) for trial, reward in enumerate([1.0, 0.0])]
    first, second = load_runs([_write(tmp_path, "tau.json", records)])
    assert (first.case_id, first.repetition, second.repetition) == ("3", 0, 1)
    assert [(s.name, s.passed) for s in second.scores] == [("reward", False)]
    assert first.assertions["expected_tool_calls"] == [
        {"name": "find_user_id_by_zip", "arguments": {"first_name": "Yusuf", "zip": "19122"}},
        {"name": "cancel_pending_order", "arguments": {"order_id": "#W2378156", "reason": "no"}},
    ]
    assert first.source_format == "tau_bench"
    assert first.trajectory is not None
    assert first.flow is None


def test_tau2_simulations_are_runs_of_their_task(tmp_path: Path) -> None:
    simulations = [tau2_simulation("3", 1, 1.0), tau2_simulation("3", 0, 0.0)]
    runs = load_runs([_write(tmp_path, "results.json", tau2_results(simulations))])
    assert [(r.case_id, r.repetition, r.scores[0].passed) for r in runs] == [
        ("3", 1, True),
        ("3", 0, False),
    ]
    assert runs[0].source_format == "tau2_bench"
    expected = runs[0].assertions["expected_tool_calls"]
    assert isinstance(expected, list)
    assert [call["name"] for call in expected if isinstance(call, dict)] == [
        "get_user_details",
        "cancel_reservation",
    ]


def test_a_task_without_gold_actions_asserts_nothing(tmp_path: Path) -> None:
    record = tau_record(1, 0, 1.0)
    record["info"]["task"]["actions"] = []
    [run] = load_runs([_write(tmp_path, "tau.json", [record])])
    assert run.assertions == {}


def test_runs_are_cases_by_their_id_then_conversation_then_line(
    tmp_path: Path,
) -> None:
    records = [
        {"conversation_id": "s-1", "id": "a", "messages": CHAT},
        {"id": "b", "messages": CHAT},
        {"messages": CHAT},
        {"conversation_id": "s-1", "messages": CHAT},
    ]
    file = _write(tmp_path, "chats.jsonl", records, lines=True)
    runs = load_runs([file])
    # A conversation's turns are different questions: only a run's own id (or a
    # case_id it names) makes it a repetition of a case.
    assert [(r.case_id, r.repetition) for r in runs] == [
        ("a", 0),
        ("b", 0),
        (f"{file}:3", 0),
        ("s-1", 0),
    ]
    assert {r.source_format for r in runs} == {"openai_messages"}
    assert all(r.scores == [] and r.assertions == {} for r in runs)


def test_several_files_of_several_formats_load_in_order(tmp_path: Path) -> None:
    chats = _write(tmp_path, "chats.jsonl", [{"messages": CHAT}], lines=True)
    tau = _write(tmp_path, "tau.json", [tau_record(0, 0, 1.0)])
    assert [r.source_format for r in load_runs([tau, chats])] == ["tau_bench", "openai_messages"]


def test_format_forces_the_importer(tmp_path: Path) -> None:
    file = _write(tmp_path, "chats.jsonl", [{"messages": CHAT}], lines=True)
    with pytest.raises(InputError, match=r"chats\.jsonl"):
        load_runs([file], format="tau_bench")


def test_a_mapping_selects_the_mapping_format(tmp_path: Path) -> None:
    runs = load_runs([UDERIA_SAMPLE], mapping="uderia_turn")
    assert [(r.case_id, r.repetition, r.source_format) for r in runs] == [
        ("turn-0007", 0, "mapping"),
        ("turn-0008", 0, "mapping"),
    ]
    assert runs[0].trajectory is not None
    assert runs[0].trajectory.id == "turn-0007"


def test_the_mapping_format_without_a_mapping_is_refused() -> None:
    with pytest.raises(InputError, match=r"the mapping format needs a mapping \(--mapping FILE"):
        load_runs([UDERIA_SAMPLE], format="mapping")


def test_an_unknown_format_is_refused_with_the_known_ones() -> None:
    with pytest.raises(
        InputError,
        match=(
            r"--format 'csv': unknown format; expected one of "
            r"atif, inspect, mapping, openai_messages"
        ),
    ):
        load_runs([UDERIA_SAMPLE], format="csv")


def test_a_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        load_runs([tmp_path / "absent.jsonl"])


def test_otlp_traces_load_through_the_otlp_importer(tmp_path: Path) -> None:
    pytest.importorskip("arbiter.trajectories.otlp")
    [run] = load_runs([_write(tmp_path, "spans.jsonl", [GENAI], lines=True)])
    assert run.source_format == "otlp"
    assert run.trajectory is not None
    assert run.case_id == run.trajectory.id  # the root span: one run, one case
    assert run.trajectory is not None
    assert [(c.name, c.arguments) for c in run.trajectory.tool_calls] == [
        ("get_weather", {"city": "Oslo"})
    ]


def test_openinference_spans_load_through_the_openinference_importer(tmp_path: Path) -> None:
    pytest.importorskip("arbiter.trajectories.openinference")
    [run] = load_runs([_write(tmp_path, "phoenix.jsonl", [OPENINFERENCE], lines=True)])
    assert run.source_format == "openinference"
    assert run.trajectory is not None
    assert [c.name for c in run.trajectory.tool_calls] == ["get_weather"]
    assert run.trajectory.final_answer == "Done."
