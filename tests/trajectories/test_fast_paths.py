"""The fast paths of the agent path refuse and read exactly what the checked ones do.

The OTLP file reader parses each line with the fast JSON reader, which keeps every check
of the exact one: a key given twice in a trace export is refused (it was read with the
last value kept, unlike every other JSON input), with its line and column.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arbiter.errors import InputError
from arbiter.trajectories.otlp import iter_otlp
from tests.helpers import otlp_json as otlp


def _line(number: int) -> str:
    trace = f"{number + 1:032x}"
    return json.dumps(otlp.traces(*otlp.agent_spans(trace, agent="support")))


def test_a_repeated_key_in_a_trace_file_line_is_refused_with_its_place(tmp_path: Path) -> None:
    line = _line(1).replace('"name": ', '"name": "shadow", "name": ', 1)
    file = tmp_path / "t.jsonl"
    file.write_text(_line(0) + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"t\.jsonl:2:\d+: duplicate key 'name'"):
        list(iter_otlp(file))


def test_a_trace_file_without_repeats_reads_as_before(tmp_path: Path) -> None:
    file = tmp_path / "t.jsonl"
    file.write_text(_line(0) + "\n" + _line(1) + "\n", encoding="utf-8")
    runs = list(iter_otlp(file))
    assert [run.agent.name for run in runs] == ["support", "support"]


def test_a_trace_the_scan_could_not_see_continuing_is_refused(tmp_path: Path) -> None:
    # Trace 0's second part writes its traceId key escaped: the byte scan for each
    # trace's last line does not see it there, so trace 0 was handed out after line 1.
    first = _line(0)
    hidden = first.replace('"traceId"', '"trace\\u0049d"')
    file = tmp_path / "t.jsonl"
    file.write_text(first + "\n" + _line(1) + "\n" + hidden + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"t\.jsonl:3: trace 0+1 continues after the line"):
        list(iter_otlp(file))


def test_a_trace_over_several_lines_is_handed_out_once_whole(tmp_path: Path) -> None:
    first, second = _line(0), _line(1)
    file = tmp_path / "t.jsonl"
    # trace 0's spans again on line 3 (an exporter's retry): one run, read once
    file.write_text(first + "\n" + second + "\n" + first + "\n", encoding="utf-8")
    runs = list(iter_otlp(file))
    assert len(runs) == 2
