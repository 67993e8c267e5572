"""The waterfall's layout: steps at their times, parallel steps in lanes, honest when untimed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from arbiter.contract import FlowRun, Trajectory
from arbiter.server.waterfall import MAX_ROWS, nice_ticks, waterfall

T0 = datetime(2026, 1, 1, 12, tzinfo=UTC)


def _at(ms: float, *, zoned: bool = True) -> str:
    moment = T0 + timedelta(milliseconds=ms)
    return (moment if zoned else moment.replace(tzinfo=None)).isoformat()


def _tool(name: str, start: float | None = None, end: float | None = None, **more: Any) -> dict:
    step: dict[str, Any] = {"kind": "tool_call", "name": name, **more}
    if start is not None:
        step["started_at"] = _at(start)
    if end is not None:
        step["ended_at"] = _at(end)
    return step


def _run(*steps: dict[str, Any], **fields: Any) -> Trajectory:
    return Trajectory.model_validate({"steps": list(steps), **fields})


def test_steps_sit_at_their_times_from_the_first_start() -> None:
    fall = waterfall(_run(_tool("a", 100, 300), _tool("b", 400, 1000)))
    assert fall.timed
    assert [(r.start, r.end) for r in fall.rows] == [(0.0, 200.0), (300.0, 900.0)]
    assert fall.total == 900.0
    assert fall.groups == 0
    assert all(r.group is None for r in fall.rows)


def test_the_runs_own_start_is_the_origin_when_earlier() -> None:
    fall = waterfall(_run(_tool("a", 100, 300), started_at=_at(0), ended_at=_at(500)))
    assert (fall.rows[0].start, fall.rows[0].end) == (100.0, 300.0)
    assert fall.total == 500.0


def test_overlapping_steps_are_one_parallel_group_with_a_lane_each() -> None:
    fall = waterfall(
        _run(
            _tool("plan", 0, 100),
            _tool("x", 120, 900),
            _tool("y", 130, 500),
            _tool("z", 600, 950),  # overlaps x, so it joins the group
            _tool("after", 1000, 1100),
        )
    )
    lanes = [(r.label, r.group, r.lane, r.group_size) for r in fall.rows]
    assert lanes == [
        ("plan", None, 0, 1),
        ("x", 0, 0, 3),
        ("y", 0, 1, 3),
        ("z", 0, 2, 3),
        ("after", None, 0, 1),
    ]
    assert fall.groups == 1


def test_steps_that_only_touch_are_sequential() -> None:
    fall = waterfall(_run(_tool("a", 0, 100), _tool("b", 100, 200)))
    assert fall.groups == 0


def test_a_trace_without_times_is_laid_out_in_order_and_says_so() -> None:
    fall = waterfall(_run(_tool("a"), _tool("b"), _tool("c")))
    assert not fall.timed
    assert [(r.start, r.end) for r in fall.rows] == [(0, 1), (1, 2), (2, 3)]
    assert fall.groups == 0
    assert [t.label for t in fall.ticks] == ["0", "1", "2", "3"]


def test_a_step_with_only_a_duration_follows_the_one_before() -> None:
    fall = waterfall(_run(_tool("a", duration_ms=250), _tool("b", duration_ms=100)))
    assert fall.timed
    assert [(r.start, r.end) for r in fall.rows] == [(0, 250), (250, 350)]


def test_a_sub_agents_steps_follow_its_hand_off_one_level_deeper() -> None:
    sub = {"agent": {"name": "expert"}, "steps": [_tool("search", 20, 80)], "final_answer": "ok"}
    handoff = {"kind": "handoff", "trajectory": sub, "started_at": _at(10), "ended_at": _at(90)}
    fall = waterfall(_run(handoff, _tool("reply", 100, 120)))
    assert [(r.kind, r.label, r.depth) for r in fall.rows] == [
        ("handoff", "→ expert", 0),
        ("tool_call", "search", 1),
        ("tool_call", "reply", 0),
    ]
    assert fall.groups == 0  # a sub-agent's steps run inside its hand-off, not beside it


def test_zoneless_times_are_read_as_utc() -> None:
    # A run's times are all zoned or all zoneless (a mix is refused when it is read); a
    # zoneless run lays out exactly as the same run written in UTC.
    def naive(name: str, start: int, end: int) -> dict[str, object]:
        step = {"kind": "tool_call", "name": name, "started_at": _at(start, zoned=False)}
        step["ended_at"] = _at(end, zoned=False)
        return step

    zoneless = waterfall(_run(naive("a", 0, 100), naive("b", 50, 150)))
    zoned = waterfall(_run(_tool("a", 0, 100), _tool("b", 50, 150)))
    assert [(r.start, r.end) for r in zoneless.rows] == [(0, 100), (50, 150)]
    assert [(r.start, r.end) for r in zoneless.rows] == [(r.start, r.end) for r in zoned.rows]
    assert zoneless.groups == zoned.groups == 1


def test_a_failed_steps_error_and_arguments_are_kept_for_its_details() -> None:
    fall = waterfall(_run(_tool("pay", 0, 5, arguments={"amount": 3}, error="Declined")))
    row = fall.rows[0]
    assert row.error == "Declined"
    assert ("arguments", '{\n "amount": 3\n}') in row.details


def test_rows_past_the_cap_are_counted_not_drawn() -> None:
    fall = waterfall(_run(*[_tool(f"t{i}") for i in range(MAX_ROWS + 7)]))
    assert len(fall.rows) == MAX_ROWS
    assert fall.hidden == 7


def test_a_flow_runs_nodes_are_its_rows() -> None:
    nodes = [
        {"id": "n1", "name": "intake", "started_at": _at(0), "ended_at": _at(100)},
        {"id": "n2", "started_at": _at(50), "ended_at": _at(120), "error": "boom"},
    ]
    fall = waterfall(FlowRun.model_validate({"nodes": nodes}))
    assert [(r.kind, r.label, r.error) for r in fall.rows] == [
        ("node", "intake", None),
        ("node", "n2", "boom"),
    ]
    assert fall.groups == 1


@pytest.mark.parametrize(
    ("total", "timed", "labels"),
    [
        (1000, True, ["0", "200 ms", "400 ms", "600 ms", "800 ms", "1.0 s"]),
        (90_000, True, ["0", "30 s", "60 s", "90 s"]),
        (8_000, True, ["0", "2.0 s", "4.0 s", "6.0 s", "8.0 s"]),
        (3_600_000, True, ["0", "15 min", "30 min", "45 min", "60 min"]),
        (150_000, True, ["0", "30 s", "60 s", "90 s", "2 min", "2.5 min"]),
        (3, False, ["0", "1", "2", "3"]),
        (0, True, ["0"]),
    ],
)
def test_ticks_are_round_and_in_natural_units(total: float, timed: bool, labels: list[str]) -> None:
    assert [t.label for t in nice_ticks(total, timed=timed)] == labels
