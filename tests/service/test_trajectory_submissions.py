"""Submitted records of every importer's format become runs; bad ones are one error line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import JsonValue

from arbiter.errors import InputError
from arbiter.service.trajectories import import_record, store_sample_trajectories
from arbiter.store import Store
from tests.helpers import otlp_json as otlp

EXAMPLES = Path(__file__).parents[2] / "docs" / "examples" / "agents"
TRACE = "0af7651916cd43dd8448eb211c80319c"


def _first_line(name: str) -> JsonValue:
    return json.loads((EXAMPLES / name).read_text().splitlines()[0])  # type: ignore[no-any-return]


def test_a_platform_record_maps_through_a_shipped_mapping() -> None:
    [run] = import_record(_first_line("orders-turns.jsonl"), mapping="uderia_turn")
    assert run.trajectory is not None
    assert run.trajectory.agent.name == "@OPS"
    assert run.source_format == "mapping"


def test_an_otlp_request_with_spans_and_log_records_is_one_record() -> None:
    record = {**otlp.traces(*otlp.agent_spans(TRACE)), **otlp.logs(*otlp.tool_call_logs(TRACE))}
    [run] = import_record(record)
    assert run.trajectory is not None
    assert [c.name for c in run.trajectory.tool_calls] == ["get_order"]


def test_a_flow_run_is_told_by_its_nodes() -> None:
    [run] = import_record({"agent": {"name": "nightly"}, "nodes": [{"id": "extract"}]})
    assert run.flow is not None
    assert run.trajectory is None


@pytest.mark.parametrize(
    ("record", "options", "needle"),
    [
        ({"nodes": "x"}, {}, "request body"),
        ({"x": 1}, {}, "cannot tell the record's format"),
        ({"turn_id": "t"}, {"format": "mapping", "mapping": "mine.toml"}, "shipped mapping"),
        ({}, {"format": "yaml"}, "unknown format"),
        ([{"task_id": 1}], {"format": "tau_bench"}, "request body"),
    ],
)
def test_a_bad_record_is_one_input_error_line(
    record: JsonValue, options: dict[str, str], needle: str
) -> None:
    with pytest.raises(InputError, match=needle) as caught:
        import_record(record, **options)
    assert "\n" not in str(caught.value)


async def test_a_samples_file_with_a_bad_line_names_it(tmp_path: Path) -> None:
    samples = tmp_path / "samples.jsonl"
    samples.write_text(json.dumps({"format": "flow"}) + "\n")
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    try:
        with pytest.raises(InputError, match=r"samples.jsonl:1: expected a submission"):
            await store_sample_trajectories(store, samples)
    finally:
        store.close()
