"""ATIF trajectories import as trajectories: steps, tool calls, sub-agents, kept extras."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from arbiter.config import Settings
from arbiter.contract import Handoff, LlmCall, ToolCall
from arbiter.errors import InputError
from arbiter.server.app import create_app
from arbiter.store import Store
from arbiter.store.trajectory_repository import list_trajectories
from arbiter.trajectories.atif import KNOWN_VERSIONS, load_atif, parse_atif
from arbiter.trajectories.loader import detect_format, load_runs
from tests.conftest import Result

DATA = Path(__file__).parent / "data"
MULTIAGENT = DATA / "atif_v1_7_multiagent.json"
SINGLE = DATA / "atif_v1_4_single.json"


def _document(path: Path = MULTIAGENT) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def _parse(document: Any) -> tuple[Any, list[str]]:
    [(trajectory, warnings)] = parse_atif(json.dumps(document), source="run.json")
    return trajectory, warnings


def test_multiagent_file_reads_steps_calls_results_and_the_answer() -> None:
    [(trajectory, warnings)] = load_atif(MULTIAGENT)
    assert warnings == []
    assert (trajectory.id, trajectory.conversation_id) == ("traj-root", "sess-7f3a")
    assert (trajectory.agent.name, trajectory.agent.version) == ("terminus-2", "2.0.0")
    assert [s.kind for s in trajectory.steps] == [
        "llm_call", "tool_call", "tool_call",
        "llm_call", "tool_call", "handoff",
        "llm_call", "tool_call",
        "llm_call",
    ]  # fmt: skip
    first = trajectory.steps[0]
    assert isinstance(first, LlmCall)
    assert [m.role for m in first.input_messages] == ["system", "user"]
    assert (first.model, first.input_tokens, first.output_tokens) == ("claude-sonnet-4-5", 820, 64)
    assert first.cost_usd == pytest.approx(0.0031)
    wc = trajectory.steps[2]
    assert isinstance(wc, ToolCall)
    assert (wc.name, wc.call_id) == ("bash", "call_2")
    assert wc.arguments == {"keystrokes": "wc -l /app/data.csv\n"}
    assert wc.result == "101 /app/data.csv"
    assert wc.error is None
    assert trajectory.final_answer == "The file has 100 data lines; I wrote 100 to /app/answer.txt."
    assert trajectory.status == "completed"
    assert trajectory.source is not None
    assert trajectory.source.format == "atif"


def test_a_referenced_subagent_becomes_a_handoff_with_its_own_run() -> None:
    [(trajectory, _)] = load_atif(MULTIAGENT)
    handoff = trajectory.steps[5]
    assert isinstance(handoff, Handoff)
    assert handoff.id == "traj-child"
    child = handoff.trajectory
    assert child.agent.name == "terminus-2-helper"
    assert [s.kind for s in child.steps] == ["llm_call", "tool_call", "llm_call"]
    assert child.final_answer == "One header line."
    helper_call = child.steps[1]
    assert isinstance(helper_call, ToolCall)
    assert helper_call.result == "id,value"


def test_what_the_trajectory_has_no_field_for_is_kept_in_metadata() -> None:
    [(trajectory, _)] = load_atif(MULTIAGENT)
    kept = trajectory.metadata["atif"]
    assert isinstance(kept, dict)
    assert kept["schema_version"] == "ATIF-v1.7"
    assert kept["final_metrics"] == _document()["final_metrics"]
    assert kept["extra"] == {"task_name": "count-csv-lines"}
    assert kept["agent"]["tool_definitions"][0]["function"]["name"] == "bash"  # type: ignore[index,call-overload]
    step_three = kept["steps"][0]  # type: ignore[index]
    assert step_three["step_id"] == 3  # type: ignore[index,call-overload]
    assert step_three["reasoning_content"].startswith("The file may have a header")  # type: ignore[index,call-overload,union-attr]
    assert step_three["metrics"] == {"cached_tokens": 512, "extra": {"reasoning_tokens": 18}}  # type: ignore[index,call-overload]
    assert step_three["result_extras"] == [{"source_call_id": "call_2", "extra": {"exit_code": 0}}]  # type: ignore[index,call-overload]


def test_a_failed_tool_result_and_an_unknown_field_of_an_older_version() -> None:
    [(trajectory, warnings)] = load_atif(SINGLE)
    call = trajectory.steps[1]
    assert isinstance(call, ToolCall)
    assert call.error is not None
    assert "unavailable" in call.error
    assert len(warnings) == 1
    assert "'confidence'" in warnings[0]
    kept = trajectory.metadata["atif"]
    assert kept["steps"][1] == {"step_id": 3, "confidence": 0.4}  # type: ignore[index,call-overload]


@pytest.mark.parametrize("version", KNOWN_VERSIONS)
def test_every_published_version_reads(version: str) -> None:
    document = _document(SINGLE)
    document["schema_version"] = version
    trajectory, _ = _parse(document)
    assert trajectory.metadata["atif"]["schema_version"] == version


def test_a_later_minor_version_reads_with_a_warning() -> None:
    document = _document(SINGLE)
    document["schema_version"] = "ATIF-v1.9"
    _, warnings = _parse(document)
    assert any("newer than ATIF-v1.8" in w for w in warnings)


def test_file_of_one_trajectory_a_line_names_each_line() -> None:
    one = json.dumps(_document(SINGLE))
    broken = _document(SINGLE)
    broken["steps"][1]["tool_calls"][0]["function_name"] = 7
    text = f"{one}\n\n{json.dumps(broken)}\n"
    where = r"^runs\.jsonl:3: steps\[1\]\.tool_calls\[0\]\.function_name:"
    with pytest.raises(InputError, match=where):
        parse_atif(text, source="runs.jsonl")
    read = parse_atif(f"{one}\n{one}\n", source="runs.jsonl")
    assert [t.source.line for t, _ in read if t.source] == [1, 2]


def test_repairs_are_counted_as_warnings() -> None:
    document = _document()
    steps = document["steps"]
    steps[3]["step_id"] = 9  # out of sequence
    steps[4]["tool_calls"][0]["tool_call_id"] = "call_1"  # an id used again
    steps[4]["observation"]["results"][0]["source_call_id"] = "call_1"
    steps[5]["observation"] = {"results": [{"source_call_id": "nobody", "content": "stray"}]}
    steps[2]["observation"]["results"][0]["subagent_trajectory_ref"] = [
        {"session_id": "elsewhere", "trajectory_path": "../../etc/passwd"}
    ]
    trajectory, warnings = _parse(document)
    assert len(warnings) == 4
    assert any("steps[3].step_id" in w for w in warnings)
    assert any("'call_1' is used again" in w for w in warnings)
    assert any("'nobody' answers no call" in w for w in warnings)
    assert any("does not hold" in w for w in warnings)
    reused = trajectory.steps[7]
    assert isinstance(reused, ToolCall)
    assert reused.call_id == "call_1"
    assert reused.result == ""
    refs = [s.get("subagent_refs") for s in trajectory.metadata["atif"]["steps"]]
    assert [{"session_id": "elsewhere", "trajectory_path": "../../etc/passwd"}] in refs


def test_an_embedded_subagent_no_step_names_is_appended_with_a_warning() -> None:
    document = _document()
    del document["steps"][3]["observation"]["results"][0]["subagent_trajectory_ref"]
    trajectory, warnings = _parse(document)
    assert isinstance(trajectory.steps[-1], Handoff)
    assert any("referenced by no step" in w for w in warnings)


def _set(document: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(document)
    target = changed
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return changed


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("steps",), {"a": 1}, r"run\.json: steps: must be a list, got object"),
        (("schema_version",), "2.0", r"schema_version: '2\.0' is no ATIF version"),
        (("schema_version",), 17, r"schema_version: must be a string"),
        (("agent",), "terminus", r"agent: must be an object"),
        (("steps", 2), "hello", r"steps\[2\]: a step must be an object, got string"),
        (("steps", 2, "source"), None, r"steps\[2\]\.source: must be 'system', 'user' or 'agent'"),
        (("steps", 2, "step_id"), "3", r"steps\[2\]\.step_id: must be a whole number"),
        (("steps", 2, "tool_calls", 0, "function_name"), 12, r"tool_calls\[0\]\.function_name"),
        (("steps", 2, "tool_calls"), "bash", r"steps\[2\]\.tool_calls: must be a list"),
        (("steps", 2, "metrics", "prompt_tokens"), 10**30, r"metrics\.prompt_tokens: must be a"),
        (("steps", 2, "metrics", "prompt_tokens"), -1, r"metrics\.prompt_tokens"),
        (("steps", 2, "metrics", "cost_usd"), 1e300, r"metrics\.cost_usd: must be a number"),
        (("steps", 2, "message"), "x" * 1_000_001, r"steps\[2\]\.message: is 1000001 characters"),
        (("steps", 2, "observation", "results"), "ok", r"observation\.results: must be a list"),
        (("subagent_trajectories", 0, "steps", 1, "metrics", "completion_tokens"), True,
         r"subagent_trajectories\[0\]\.steps\[1\]\.metrics\.completion_tokens"),
    ],
)  # fmt: skip
def test_malformed_input_is_refused_naming_the_field(
    path: tuple[Any, ...], value: Any, message: str
) -> None:
    with pytest.raises(InputError, match=message) as refused:
        _parse(_set(_document(), path, value))
    assert "\n" not in str(refused.value)
    assert len(str(refused.value)) < 300


def test_mixed_zoned_and_zoneless_times_are_refused() -> None:
    document = _set(_document(SINGLE), ("steps", 1, "timestamp"), "2025-10-11T10:30:02")
    with pytest.raises(InputError, match=r"steps\[1\]\.timestamp: has no time zone"):
        _parse(document)


def test_format_is_told_from_the_version_and_runs_load() -> None:
    assert detect_format(MULTIAGENT) == "atif"
    [run] = load_runs([MULTIAGENT])
    assert (run.case_id, run.repetition, run.source_format) == ("traj-root", 0, "atif")


# ------------------------------------------------------------------------------- CLI


def test_agent_score_round_trip_on_atif(cli: Any) -> None:
    result: Result = cli("agent", "score", str(MULTIAGENT), "--format", "atif", "--json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert (report["n_trajectories"], report["n_tasks"]) == (1, 1)
    [run] = report["runs"]
    assert run["case_id"] == "traj-root"
    assert report["scorers"]["completed"]["pass"] == 1
    assert report["scorers"]["tool_calls"]["pass"] == 1


def test_agent_score_refuses_bad_atif_with_one_line_and_exit_3(cli: Any, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    record = _set(_document(), ("steps", 2, "metrics", "cost_usd"), "cheap")
    bad.write_text(json.dumps(record), encoding="utf-8")
    result: Result = cli("agent", "score", str(bad), "--format", "atif", "--json")
    assert result.code == 3
    assert result.err.count("\n") == 1
    assert "bad.json: steps[2].metrics.cost_usd: must be a number" in result.err
    assert "Traceback" not in result.err


# ---------------------------------------------------------------------------- server


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[TestClient, Store]]:
    store = Store(f"sqlite:///{tmp_path / 'server.db'}")
    app = create_app(Settings(db_url=store.url, home=tmp_path / "home"), store=store)
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client, store
    store.close()


def test_an_atif_record_posted_is_stored_with_its_handoff(served: tuple[TestClient, Store]) -> None:
    client, store = served
    answer = client.post("/v1/trajectories", json={"record": _document(), "format": "atif"})
    assert answer.status_code == 201, answer.text
    assert list_trajectories(store)[1] == 1


def test_a_hostile_atif_record_posted_is_refused_naming_the_field(
    served: tuple[TestClient, Store],
) -> None:
    client, store = served
    record = _set(_document(), ("steps", 2, "metrics", "prompt_tokens"), 10**30)
    answer = client.post("/v1/trajectories", json={"record": record, "format": "atif"})
    assert answer.status_code in (400, 422), answer.text
    assert "steps[2].metrics.prompt_tokens" in answer.json()["error"]["message"]
    assert list_trajectories(store)[1] == 0
