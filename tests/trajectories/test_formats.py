"""Trajectory formats are one registry: the loader, detection, records and span ingest read it.

A format registered on a registry object (no edit of Arbiter) is read by ``--format``,
told from a file's first record, accepted as a submitted record, and, as a span format,
chosen by the OTLP receiver; a file that only partly resembles a format is reported with
that format's own error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from arbiter.contract import Trajectory
from arbiter.errors import InputError
from arbiter.trajectories.formats import (
    BUILTIN_FORMATS,
    MATCH,
    ImportedRun,
    ImportOptions,
    SpanReading,
    TrajectoryFormat,
    TrajectoryFormatRegistry,
    numbered_runs,
    record_runs,
)
from arbiter.trajectories.loader import detect_format, load_runs

from .test_tau2_bench import _results as tau2_results
from .test_tau_bench import _record as tau_record


def _log_trajectory(record: dict[str, Any], line: int, file: str) -> Trajectory:
    steps = [
        {"kind": "tool_call", "name": action["tool"], "arguments": action.get("args", {})}
        for action in record["agent_log"]["actions"]
    ]
    return Trajectory.model_validate(
        {
            "id": record["agent_log"]["id"],
            "steps": steps,
            "final_answer": record["agent_log"].get("answer"),
            "status": "completed",
            "source": {"format": "agent_log", "file": file, "line": line},
        }
    )


def _read_log(file: Path, options: ImportOptions) -> Any:
    lines = file.read_text(encoding="utf-8").splitlines()
    records = [(n, json.loads(text)) for n, text in enumerate(lines, 1) if text.strip()]
    return numbered_runs((_log_trajectory(r, n, str(file)) for n, r in records), file, "agent_log")


def _read_log_record(record: Any, options: ImportOptions) -> list[ImportedRun]:
    return record_runs([_log_trajectory(record, 1, options.source)], "agent_log", options.source)


AGENT_LOG = TrajectoryFormat(
    name="agent_log",
    summary="a test's own agent log",
    read_file=_read_log,
    read_record=_read_log_record,
    resemblance=lambda record: MATCH if isinstance(record, dict) and "agent_log" in record else 0,
)

LOG_RECORD = {
    "agent_log": {
        "id": "run-1",
        "actions": [{"tool": "get_order", "args": {"id": 7}}],
        "answer": "Order 7 shipped.",
    }
}


@pytest.fixture
def registry() -> TrajectoryFormatRegistry:
    registry = TrajectoryFormatRegistry.default(plugins=False)
    registry.register_format(AGENT_LOG)
    return registry


def _write(tmp_path: Path, name: str, text: str) -> Path:
    file = tmp_path / name
    file.write_text(text, encoding="utf-8")
    return file


def test_the_default_registry_holds_the_built_in_formats_and_loads_each() -> None:
    registry = TrajectoryFormatRegistry.default(plugins=False)
    assert registry.names() == tuple(sorted(BUILTIN_FORMATS))
    assert [f.name for f in registry.formats()] == list(registry.names())
    assert registry.format("otlp").spans is not None
    assert registry.format("mapping").resemblance is None  # never guessed


def test_an_unknown_format_lists_the_registered_ones(registry: TrajectoryFormatRegistry) -> None:
    with pytest.raises(InputError, match=r"unknown trajectory format 'csv'; known: .*'agent_log'"):
        registry.format("csv")


def test_a_registered_format_is_told_from_a_file_and_read(
    tmp_path: Path, registry: TrajectoryFormatRegistry
) -> None:
    file = _write(tmp_path, "runs.jsonl", json.dumps(LOG_RECORD) + "\n")
    assert detect_format(file, registry=registry) == "agent_log"
    runs = load_runs([file], registry=registry)
    assert [(r.case_id, r.source_format) for r in runs] == [("run-1", "agent_log")]
    assert runs[0].trajectory is not None
    assert [c.name for c in runs[0].trajectory.tool_calls] == ["get_order"]
    named = load_runs([file], format="agent_log", registry=registry)
    assert [r.case_id for r in named] == ["run-1"]


def test_without_its_registration_the_format_is_unknown(tmp_path: Path) -> None:
    file = _write(tmp_path, "runs.jsonl", json.dumps(LOG_RECORD) + "\n")
    with pytest.raises(InputError, match="unknown format; expected one of atif, inspect, mapping"):
        load_runs([file], format="agent_log")
    with pytest.raises(InputError, match="cannot tell the format"):
        detect_format(file)


def test_a_submitted_record_of_a_registered_format_is_imported(
    registry: TrajectoryFormatRegistry,
) -> None:
    from arbiter.service.trajectories import import_record, submit_formats

    assert "agent_log" in submit_formats(registry)
    runs = import_record(LOG_RECORD, registry=registry)
    assert [(r.case_id, r.source_format) for r in runs] == [("run-1", "agent_log")]
    named = import_record(LOG_RECORD, format="agent_log", registry=registry)
    assert named[0].trajectory == runs[0].trajectory


def test_the_span_format_claiming_a_trace_most_reads_it() -> None:
    from arbiter.trajectories.spans import decode_otlp_json

    from .test_loader import GENAI, OPENINFERENCE

    registry = TrajectoryFormatRegistry.default(plugins=False)
    genai, _ = decode_otlp_json(GENAI, where="test")
    phoenix, _ = decode_otlp_json(OPENINFERENCE, where="test")
    assert registry.span_format(genai) is registry.format("otlp")
    assert registry.span_format(phoenix) is registry.format("openinference")
    claimed: list[int] = []
    mine = TrajectoryFormat(
        name="mine",
        summary="spans of my framework",
        read_file=lambda file, options: [],
        spans=SpanReading(
            claims=lambda spans: MATCH * 3,
            read=lambda spans, logs, source: claimed.append(len(spans)) or [],
        ),
    )
    registry.register_format(mine)
    assert registry.span_format(genai) is mine


@pytest.mark.parametrize(
    ("record", "needle"),
    [
        # τ-bench without its reward: the τ-bench importer says what is wrong.
        ({"task_id": 1, "trial": 0, "traj": []}, "'reward' must be a number"),
        # A conversation whose messages are no list.
        ({"messages": {"role": "user"}}, "'messages' must be a list of messages"),
        # τ²-bench whose simulations are no list.
        ({"info": {}, "simulations": {}}, "'simulations' must be a list"),
    ],
)
def test_a_file_that_partly_resembles_a_format_gets_that_format_s_error(
    tmp_path: Path, record: dict[str, Any], needle: str
) -> None:
    file = _write(tmp_path, "partly.json", json.dumps(record) + "\n")
    with pytest.raises(InputError) as raised:
        load_runs([file])
    message = str(raised.value)
    assert needle in message
    assert "the format the file most resembles" in message
    assert "cannot tell the format" not in message


def test_a_first_line_that_is_no_json_is_reported_with_its_json_error(tmp_path: Path) -> None:
    file = _write(tmp_path, "runs.jsonl", '{"messages": [}\n{"messages": []}\n')
    with pytest.raises(InputError, match=r"runs\.jsonl:1:15: invalid JSON"):
        detect_format(file)


def test_a_broken_pretty_printed_document_is_reported_where_it_breaks(tmp_path: Path) -> None:
    document = json.dumps(tau2_results(), indent=2).splitlines()
    document[30] = document[30] + " }"  # a stray brace deep inside
    file = _write(tmp_path, "results.json", "\n".join(document))
    with pytest.raises(InputError, match=r"results\.json:31:\d+: invalid JSON"):
        detect_format(file)


def test_the_runner_s_directory_results_file_is_told_as_tau2_bench(tmp_path: Path) -> None:
    results = tau2_results()
    simulations = results.pop("simulations")
    (tmp_path / "simulations").mkdir()
    for simulation in simulations:
        (tmp_path / "simulations" / f"{simulation['id']}.json").write_text(json.dumps(simulation))
    file = _write(tmp_path, "results.json", json.dumps(results))
    assert detect_format(file) == "tau2_bench"
    assert len(load_runs([file])) == len(simulations)


def test_tau_bench_records_still_win_over_a_list_of_messages(tmp_path: Path) -> None:
    file = _write(tmp_path, "tau.json", json.dumps([tau_record(0, 0, 1.0)]))
    assert detect_format(file) == "tau_bench"
