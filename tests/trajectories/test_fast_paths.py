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
