"""Files in the shapes the real tools write import: ids used again, fields left out or added.

The two fixtures reproduce what the benchmarks publish (written for these tests, not
copied): ``tau_bench_published_shape.json`` the records of τ-bench's
``historical_trajectories`` (a tool call id used again for a later call, ``Error: ...``
results, ``info.source`` / ``user_cost`` / ``reward_info``, the task's ``user_id`` and
``outputs``), ``tau2_bench_published_shape.json`` a τ²-bench results file as its runner
writes it (empty call ids, ``requestor``, ``turn_idx``, ``raw_data``, ``agent_usage``,
``mode``, ``simulation_index``). Each repair is a warning; only what is malformed is refused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from arbiter.trajectories.loader import detect_format, load_runs
from arbiter.trajectories.openai_messages import conversation_to_trajectory
from arbiter.trajectories.tool_errors import tool_error

DATA = Path(__file__).parent / "data"
TAU = DATA / "tau_bench_published_shape.json"
TAU2 = DATA / "tau2_bench_published_shape.json"


def test_a_published_tau_bench_file_imports_with_each_id_reuse_a_warning() -> None:
    assert detect_format(TAU) == "tau_bench"
    first, second = load_runs([TAU])
    assert first.trajectory is not None
    calls = first.trajectory.tool_calls
    assert [(c.call_id, c.name) for c in calls] == [
        ("call_A1", "get_user_details"),
        ("call_B2", "search_direct_flight"),
        ("call_B2", "search_onestop_flight"),
        ("call_A1", "book_reservation"),
        ("call_C3", "book_reservation"),
    ]
    # Each result answers the latest call of its id: the one-stop search its own.
    assert isinstance(calls[2].result, str)
    assert "HAT136" in calls[2].result
    assert isinstance(calls[1].result, str)
    assert "HAT069" in calls[1].result
    assert first.warnings == [
        f"{TAU}: record [0]: traj[10].tool_calls[0].id: tool call id 'call_B2' is used "
        "again; a result of that id answers the latest call not answered yet",
        f"{TAU}: record [0]: traj[12].tool_calls[0].id: tool call id 'call_A1' is used "
        "again; a result of that id answers the latest call not answered yet",
    ]
    assert second.warnings == []


def test_a_tau_bench_error_result_fails_its_call() -> None:
    first, _ = load_runs([TAU])
    assert first.trajectory is not None
    failed = [c for c in first.trajectory.tool_calls if not c.succeeded]
    assert [c.name for c in failed] == ["book_reservation"]
    assert failed[0].error is not None
    assert failed[0].error.startswith("Error: payment amount does not add up")


def test_what_a_tau_bench_record_carries_is_kept_in_metadata() -> None:
    first, _ = load_runs([TAU])
    assert first.trajectory is not None
    metadata = first.trajectory.metadata
    assert metadata["source"] == "user"
    assert metadata["user_cost"] == pytest.approx(0.0035475)
    assert metadata["user_id"] == "ada_park_1234"
    assert metadata["outputs"] == []
    reward_info = metadata["reward_info"]
    assert isinstance(reward_info, dict)
    assert reward_info["reward"] == 1.0
    assert first.scores[0].metadata == {"r_actions": 1.0}


def test_a_published_tau2_bench_file_imports_empty_and_repeated_ids() -> None:
    assert detect_format(TAU2) == "tau2_bench"
    [run] = load_runs([TAU2])
    assert run.trajectory is not None
    calls = run.trajectory.tool_calls
    assert [c.name for c in calls] == [
        "get_user_details",
        "get_reservation_details",
        "cancel_reservation",
        "transfer_to_human_agents",
    ]
    # Results of calls without an id answer them in order.
    assert isinstance(calls[0].result, str)
    assert "mia_li_3668" in calls[0].result
    assert isinstance(calls[1].result, str)
    assert "confirmed" in calls[1].result
    assert calls[2].error is not None
    assert calls[2].error.startswith("Error: reservation")
    assert calls[3].result == "Transfer successful"
    assert calls[3].succeeded
    assert run.warnings == [
        f"{TAU2}: simulations[0]: messages[6].tool_calls[0].id: tool call id 'call_0' is "
        "used again; a result of that id answers the latest call not answered yet"
    ]
    metadata = run.trajectory.metadata
    assert metadata["mode"] == "half_duplex"
    assert metadata["agent_usage"] == {"prompt_tokens": 4500, "completion_tokens": 125}
    assert metadata["hallucination_retries_used"] == 0
    assert run.assertions["expected_tool_calls"] == [
        {"name": "get_reservation_details", "arguments": {"reservation_id": "EHGLP3"}},
        {"name": "transfer_to_human_agents", "arguments": {"summary": "cancellation refused"}},
    ]


def test_one_simulation_file_of_the_runner_reads_alone(tmp_path: Path) -> None:
    simulation = json.loads(TAU2.read_text(encoding="utf-8"))["simulations"][0]
    file = tmp_path / f"{simulation['id']}.json"
    file.write_text(json.dumps(simulation), encoding="utf-8")
    assert detect_format(file) == "tau2_bench"
    [run] = load_runs([file])
    assert run.case_id == "5"
    assert run.trajectory is not None
    assert len(run.trajectory.tool_calls) == 4
    assert run.scores[0].passed is True


def test_server_notes_carry_the_repairs() -> None:
    import asyncio

    from arbiter.service.trajectories import agent_run_scoring, score_run

    [run] = load_runs([TAU2])
    stored = asyncio.run(score_run(run, scoring=agent_run_scoring(), run_id="tr-test"))
    assert stored.notes[: len(run.warnings)] == run.warnings


WAITING_CALL = {
    "role": "assistant",
    "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "fetch", "arguments": "{}"}}
    ],
}


@pytest.mark.parametrize(
    ("message", "error"),
    [
        ({"content": '{"error": "timeout"}'}, "timeout"),
        (
            {"content": '{"error": {"code": 504, "message": "upstream timed out"}}'},
            "upstream timed out",
        ),
        ({"content": '{"is_error": true, "content": "no such file"}'}, "no such file"),
        ({"content": '{"isError": true, "content": [{"type": "text", "text": "denied"}]}'}, None),
        ({"content": '{"success": false, "message": "quota exceeded"}'}, "quota exceeded"),
        ({"content": '{"ok": false, "error": "channel_not_found"}'}, "channel_not_found"),
        ({"content": '{"status": "error", "message": "bad key"}'}, "bad key"),
        ({"content": "Error: ValueError('no row 7')\n Please fix your mistakes."}, "Error: Value"),
        ({"content": "boom", "status": "error"}, "boom"),  # LangChain's ToolMessage
        ({"content": "denied", "is_error": True}, "denied"),
    ],
)
def test_a_tool_result_in_an_error_shape_fails_the_call(
    message: dict[str, Any], error: str | None
) -> None:
    result = {"role": "tool", "tool_call_id": "c1", **message}
    trajectory = conversation_to_trajectory([WAITING_CALL, result], source="c.jsonl", line=1)
    [call] = trajectory.tool_calls
    assert not call.succeeded
    assert call.error is not None
    if error is not None:
        assert call.error.startswith(error)


@pytest.mark.parametrize(
    "content",
    [
        '{"error": null, "rows": []}',
        '{"order": 7, "status": "failed"}',  # the order's status, not the tool's
        '{"success": true}',
        "no error here",
        "",
        None,
    ],
)
def test_a_result_that_reports_no_failure_is_a_success(content: str | None) -> None:
    result = {"role": "tool", "tool_call_id": "c1", "content": content}
    trajectory = conversation_to_trajectory([WAITING_CALL, result], source="c.jsonl", line=1)
    assert trajectory.tool_calls[0].succeeded


def test_error_recognition_is_linear_in_the_result_size() -> None:
    # A deep or huge JSON text is parsed once (never recursed into by hand).
    assert tool_error("[" * 100_000) is None
    assert tool_error('{"error": "' + "x" * 2_000_000 + '"}', message=None) is not None
