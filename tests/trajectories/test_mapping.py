"""JSON turn records import as trajectories through a TOML mapping of dotted paths."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from arbiter.contract import LlmCall, Retrieval, ToolCall
from arbiter.errors import InputError
from arbiter.trajectories.mapping import RecordMapping, load_mapped, load_mapping, map_record

SAMPLE = Path(__file__).parent / "data" / "uderia_turn.jsonl"


def _sample_records() -> list[dict[str, Any]]:
    return [json.loads(line) for line in SAMPLE.read_text().splitlines()]


def _mapping(tmp_path: Path, text: str) -> RecordMapping:
    file = tmp_path / "m.toml"
    file.write_text(text)
    return load_mapping(file)


MINIMAL = """
[trajectory]
id = "turn.id"
final_answer = "answer"

[steps]
path = "trace"

[steps.tool_call]
match = { type = "tool" }
name = "tool"
arguments = "args"
result = "out"
error = "failed"
"""


def test_the_uderia_sample_maps_onto_a_trajectory() -> None:
    first, second = load_mapped(SAMPLE, "uderia_turn")
    assert (first.id, first.conversation_id, first.status) == (
        "turn-0007",
        "sess-41c2",
        "completed",
    )
    assert (first.agent.name, first.agent.version, first.agent.agent_class) == (
        "@OPS",
        "3",
        "tool_enabled",
    )
    assert first.final_answer == "Orders took 3.4 days on average to deliver in Q4 2025."
    assert first.metadata["query"] == "What was the average order delivery time last quarter?"
    assert first.metadata["mapping"] == "uderia_turn"
    assert (second.status, second.error) == ("error", "The model provider timed out.")
    assert second.agent.agent_class == "llm_only"


def test_the_uderia_trace_becomes_typed_steps() -> None:
    first = load_mapped(SAMPLE, "uderia_turn")[0]
    assert [type(step) for step in first.steps] == [
        Retrieval,
        ToolCall,
        ToolCall,
        ToolCall,
        LlmCall,
    ]
    retrieval = first.steps[0]
    assert isinstance(retrieval, Retrieval)
    assert [(c.source, c.similarity) for c in retrieval.chunks] == [
        ("kb/orders.md", 0.83),
        ("kb/returns.md", 0.41),
    ]
    failed, succeeded, final = first.tool_calls
    assert (failed.name, failed.error, failed.result) == (
        "base_readQuery",
        "Object 'sales.order' does not exist.",
        None,
    )
    assert succeeded.succeeded
    assert succeeded.result == [{"avg_days": 3.4}]
    assert succeeded.arguments == {"sql": "SELECT AVG(delivered_at - shipped_at) FROM sales.orders"}
    assert succeeded.duration == pytest.approx(2000.0)
    assert final.name == "TDA_FinalReport"
    assert first.metadata["unmapped_steps"] == 1


def test_turn_totals_become_one_llm_call_when_the_trace_reports_no_usage() -> None:
    first, second = load_mapped(SAMPLE, "uderia_turn")
    totals = first.totals()
    assert (totals.input_tokens, totals.output_tokens, totals.cost_usd) == (5120, 410, 0.0123)
    assert first.llm_calls[0].model == "gemini-2.5-flash"
    assert first.metadata["usage_from"] == "turn totals"
    # The second turn's trace reports its own LLM call: the totals are not added again.
    assert len(second.llm_calls) == 1
    assert second.totals().input_tokens == 900
    assert "usage_from" not in second.metadata


def test_source_names_the_file_line_and_format() -> None:
    second = load_mapped(SAMPLE, "uderia_turn")[1]
    assert second.source is not None
    assert (second.source.format, second.source.file, second.source.line) == (
        "mapping",
        str(SAMPLE),
        2,
    )


def test_paths_index_lists_and_absent_paths_read_as_none(tmp_path: Path) -> None:
    mapping = _mapping(tmp_path, '[trajectory]\nid = "ids.1"\nfinal_answer = "a.b.c"\n')
    trajectory = map_record({"ids": ["x", "y"], "a": {}}, mapping, where="r:1")
    assert (trajectory.id, trajectory.final_answer, trajectory.steps) == ("y", None, [])


@pytest.mark.parametrize(
    ("value", "status"),
    [
        ("success", "completed"),
        ("failed", "error"),
        ("incomplete", "incomplete"),
        (None, "unknown"),
    ],
)
def test_status_values_map_onto_trajectory_statuses(
    tmp_path: Path, value: str | None, status: str
) -> None:
    mapping = _mapping(
        tmp_path,
        '[trajectory]\nstatus = "state"\n'
        '[trajectory.status_values]\nsuccess = "completed"\nfailed = "error"\n',
    )
    assert map_record({"state": value}, mapping, where="r:1").status == status


def test_a_status_the_mapping_cannot_place_is_refused(tmp_path: Path) -> None:
    mapping = _mapping(tmp_path, '[trajectory]\nstatus = "state"\n')
    with pytest.raises(InputError, match=r"r:4: state: 'weird' is not a trajectory status"):
        map_record({"state": "weird"}, mapping, where="r:4")


@pytest.mark.parametrize(
    ("failed", "error"),
    [
        (None, None),
        (False, None),
        ("", None),
        (True, "the step reported an error"),
        ("boom", "boom"),
    ],
)
def test_a_step_error_is_a_message_a_flag_or_nothing(
    tmp_path: Path, failed: Any, error: str | None
) -> None:
    record = {"trace": [{"type": "tool", "tool": "t", "failed": failed}]}
    [call] = map_record(record, _mapping(tmp_path, MINIMAL), where="r:1").tool_calls
    assert call.error == error


def test_an_error_object_is_kept_as_json(tmp_path: Path) -> None:
    record = {"trace": [{"type": "tool", "tool": "t", "failed": {"code": 7}}]}
    [call] = map_record(record, _mapping(tmp_path, MINIMAL), where="r:1").tool_calls
    assert call.error == '{"code": 7}'


@pytest.mark.parametrize(("value", "taken"), [("tool", True), ("other", False), (True, False)])
def test_match_takes_only_steps_whose_field_equals_the_value(
    tmp_path: Path, value: Any, taken: bool
) -> None:
    record = {"trace": [{"type": value, "tool": "t"}]}
    trajectory = map_record(record, _mapping(tmp_path, MINIMAL), where="r:1")
    assert len(trajectory.tool_calls) == int(taken)
    assert trajectory.metadata.get("unmapped_steps") == (None if taken else 1)


def test_a_true_match_does_not_take_a_one(tmp_path: Path) -> None:
    mapping = _mapping(tmp_path, MINIMAL.replace('{ type = "tool" }', "{ is_tool = true }"))
    record = {"trace": [{"is_tool": 1, "tool": "a"}, {"is_tool": True, "tool": "b"}]}
    assert [c.name for c in map_record(record, mapping, where="r:1").tool_calls] == ["b"]


def test_a_kind_without_match_takes_every_step_left(tmp_path: Path) -> None:
    mapping = _mapping(tmp_path, MINIMAL + '[steps.llm_call]\nmodel = "model"\n')
    record = {"trace": [{"type": "tool", "tool": "t"}, {"type": "think", "model": "m"}]}
    trajectory = map_record(record, mapping, where="r:1")
    assert [type(s) for s in trajectory.steps] == [ToolCall, LlmCall]
    assert trajectory.llm_calls[0].model == "m"


def test_hostile_text_is_kept_verbatim_as_data(tmp_path: Path) -> None:
    hostile = "<script>alert(1)</script>\x1b[2J"
    record = {"turn": {"id": hostile}, "answer": hostile, "trace": []}
    trajectory = map_record(record, _mapping(tmp_path, MINIMAL), where="r:1")
    assert (trajectory.id, trajectory.final_answer) == (hostile, hostile)


def test_a_json_array_of_records_names_each_records_line(tmp_path: Path) -> None:
    records = tmp_path / "turns.json"
    records.write_text(json.dumps(_sample_records(), indent=2))
    first, second = load_mapped(records, "uderia_turn")
    assert first.source is not None
    assert second.source is not None
    assert first.source.line is not None
    assert second.source.line is not None
    lines = records.read_text().splitlines()
    assert lines[first.source.line - 1].strip() == "{"
    assert '"turn_id": "turn-0008"' in lines[second.source.line]


def test_a_single_pretty_printed_object_is_one_record(tmp_path: Path) -> None:
    records = tmp_path / "turn.json"
    records.write_text("\n" + json.dumps(_sample_records()[1], indent=2))
    [trajectory] = load_mapped(records, "uderia_turn")
    assert trajectory.id == "turn-0008"
    assert trajectory.source is not None
    assert trajectory.source.line == 2


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ("turn", r"t\.jsonl:1: expected a record object, got string"),
        ({"trace": {}}, r"t\.jsonl:1: trace: must be a list, got object"),
        (
            {"trace": [{"type": "tool"}]},
            r"t\.jsonl:1: trace\.0\.tool: a tool call needs a name; the path is absent",
        ),
        (
            {"trace": [{"type": "tool", "tool": 5}]},
            r"t\.jsonl:1: trace\.0\.tool: field 'steps\[0\]\.name': Input should be a valid string",
        ),
        (
            {"turn": {"id": ["x"]}},
            r"t\.jsonl:1: turn\.id: field 'id': Input should be a valid string",
        ),
    ],
)
def test_a_record_that_does_not_map_names_the_path(
    tmp_path: Path, record: Any, message: str
) -> None:
    records = tmp_path / "t.jsonl"
    records.write_text(json.dumps(record) + "\n")
    with pytest.raises(InputError, match=message):
        load_mapped(records, _mapping(tmp_path, MINIMAL))


def test_a_bad_chunk_names_its_path_in_the_record() -> None:
    record = _sample_records()[0]
    record["execution_trace"][0]["documents"][1]["similarity_score"] = "high"
    with pytest.raises(
        InputError,
        match=r"r:3: execution_trace\.0\.documents\.1\.similarity_score: "
        r"field 'steps\[0\]\.chunks\[1\]\.similarity'",
    ):
        map_record(record, load_mapping("uderia_turn"), where="r:3")


def test_a_bad_turn_total_names_its_path() -> None:
    record = _sample_records()[0]
    record["turn_cost"] = -1
    with pytest.raises(InputError, match=r"r:1: turn_cost: field 'steps\[4\]\.cost_usd'"):
        map_record(record, load_mapping("uderia_turn"), where="r:1")


def test_a_broken_jsonl_line_is_named(tmp_path: Path) -> None:
    records = tmp_path / "t.jsonl"
    records.write_text('{"turn": {"id": "a"}}\n{"turn": \n')
    with pytest.raises(InputError, match=r"t\.jsonl:2:\d+: invalid JSON"):
        load_mapped(records, _mapping(tmp_path, MINIMAL))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[trajectory]\nidd = "x"\n', r"m\.toml:2: field 'trajectory\.idd': Extra inputs"),
        (
            '[steps]\npath = "t"\n[steps.tool_call]\nmatch = {}\n',
            r"m\.toml:3: .*'steps\.tool_call\.name'",
        ),
        ('[trajectory]\nid = "a..b"\n', r"m\.toml:2: field 'trajectory\.id': String should match"),
        ('[trajectory]\nid = ""\n', r"m\.toml:2: field 'trajectory\.id'"),
        (
            '[trajectory.status_values]\nok = "fine"\n',
            r"m\.toml:2: field 'trajectory\.status_values\.ok'",
        ),
        ("[trajectory\n", r"m\.toml:1:\d+: invalid TOML"),
    ],
)
def test_a_bad_mapping_names_the_file_line_and_key(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        _mapping(tmp_path, text)


def test_a_missing_mapping_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        load_mapping(tmp_path / "absent.toml")
    assert str(caught.value) == (
        f"{tmp_path / 'absent.toml'}: no such mapping file (nor a shipped mapping: uderia_turn)"
    )


def test_the_shipped_mapping_loads_by_name_and_by_file() -> None:
    by_name = load_mapping("uderia_turn")
    assert by_name.name == "uderia_turn"
    assert by_name.steps is not None
    assert by_name.steps.path == "execution_trace"
