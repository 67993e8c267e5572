"""The import-and-score path streams: a run at a time, never the whole file or every run.

Before, ``agent score`` read the file whole (to tell its format and to decode it), built
every trajectory, then scored them all: 10,000 traces took 2.1 GB. Now the loader hands
out each run once its trace is complete, and the scoring keeps counts, not runs.
"""

from __future__ import annotations

import asyncio
import gc
import json
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from arbiter.errors import InputError
from arbiter.service.agent_report import MAX_PASS_HAT_K
from arbiter.service.agents import DefaultScorers, score_agent_runs
from arbiter.trajectories.formats import ImportedRun
from arbiter.trajectories.loader import iter_runs
from arbiter.trajectories.otlp_stream import iter_otlp_json_traces
from arbiter.trajectories.scorers.derived import MEMO_PAIRS
from tests.helpers import otlp_json as otlp


def _trace(number: int) -> dict[str, Any]:
    trace = f"{number + 1:032x}"
    return otlp.traces(*otlp.agent_spans(trace, agent="support"))


def _write(path: Path, lines: list[Any]) -> Path:
    path.write_text(
        "".join(line if isinstance(line, str) else json.dumps(line) + "\n" for line in lines),
        encoding="utf-8",
    )
    return path


def test_runs_come_out_before_the_rest_of_the_file_is_read(tmp_path: Path) -> None:
    file = _write(tmp_path / "t.jsonl", [_trace(0), _trace(1), "{not json\n"])
    runs = iter_runs([file])
    first = next(runs)
    assert first.trajectory is not None
    assert first.trajectory.agent.name == "support"
    assert next(runs).trajectory is not None
    with pytest.raises(InputError, match=r"t\.jsonl:3:2: invalid JSON"):
        next(runs)


def test_a_trace_spread_over_lines_comes_out_whole_and_in_first_seen_order(
    tmp_path: Path,
) -> None:
    a, b = f"{1:032x}", f"{2:032x}"
    spans_a = otlp.agent_spans(a, agent="a")
    lines = [
        otlp.traces(spans_a[1]),  # a's first model call
        otlp.traces(*otlp.agent_spans(b, agent="b")),  # all of b
        otlp.traces(spans_a[0], spans_a[2]),  # the rest of a
    ]
    file = _write(tmp_path / "t.jsonl", lines)
    traces = list(iter_otlp_json_traces(file))
    assert [(spans[0].trace_id, len(spans)) for spans, _ in traces] == [(a, 3), (b, 3)]
    names = [run.trajectory.agent.name for run in iter_runs([file]) if run.trajectory]
    assert names == ["a", "b"]


def test_scoring_holds_no_run_it_is_done_with(tmp_path: Path) -> None:
    file = _write(tmp_path / "t.jsonl", [_trace(i) for i in range(3 * MEMO_PAIRS)])
    alive: list[weakref.ref[Any]] = []
    most_alive = 0

    def watched() -> Iterator[ImportedRun]:
        nonlocal most_alive
        for run in iter_runs([file]):
            gc.collect()
            most_alive = max(most_alive, sum(ref() is not None for ref in alive))
            alive.append(weakref.ref(run.trajectory))
            yield run

    report = asyncio.run(score_agent_runs(watched(), DefaultScorers(), keep_runs=2))
    assert report.n_trajectories == 3 * MEMO_PAIRS
    # The scorers' shared features keep the last few runs: a bound, not the file.
    assert most_alive <= MEMO_PAIRS
    assert len(report.runs) <= 2


def test_many_repetitions_of_one_case_report_pass_hat_k_up_to_its_cap() -> None:
    from arbiter.contract import Score, Trajectory

    runs = (
        ImportedRun(
            Trajectory(id=f"t{i}", status="completed", final_answer="ok"),
            None,
            "the-case",
            i,
            scores=[Score(name="reward", value=1.0, passed=i % 3 != 0)],
        )
        for i in range(400)
    )
    report = asyncio.run(score_agent_runs(runs, [], keep_runs=0))
    assert report.pass_hat_k is not None
    assert list(report.pass_hat_k) == [str(k) for k in range(1, MAX_PASS_HAT_K + 1)]
    assert report.runs == []
