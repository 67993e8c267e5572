"""``arbiter online score`` end to end in-process, and the sink and store under it."""

from __future__ import annotations

import asyncio
import json
import math
import os
from collections.abc import Iterator, Mapping
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from arbiter.contract import (
    HeuristicFinding,
    HeuristicResult,
    JudgeOutcome,
    LayerResult,
    OnlineResult,
)
from arbiter.online.sink import BatchSummary, JsonlSink, LatencySketch
from arbiter.online.stream import score_stream
from arbiter.store import Store
from arbiter.store.online_repository import (
    count_online_results,
    load_online_results,
    save_online_results,
)

DATA = files("arbiter.online").joinpath("data")
SAMPLE = Path(str(DATA.joinpath("sample_traffic.jsonl")))
SAMPLE_CONFIG = Path(str(DATA.joinpath("sample_config.json")))


def _score_json(cli: Any, path: Path, *extra: str) -> dict[str, Any]:
    result = cli(
        "online", "score", str(path), "--config", str(SAMPLE_CONFIG), "-q", "--json", *extra
    )
    assert result.code == 0, result.err
    summary: dict[str, Any] = json.loads(result.out)
    return summary


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def _store(tmp_path: Path) -> Store:
    return Store(f"sqlite:///{tmp_path / 'store.db'}")


# ----------------------------------------------------------------- the bundled sample


def test_bundled_sample_scores_with_every_summary_figure(cli: Any, tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    summary = _score_json(cli, SAMPLE, "--out", str(out))
    n_lines = len(_lines(SAMPLE))
    assert n_lines >= 300
    assert summary["items"] == n_lines
    # The sample's mix: contradictions, low confidence, missing fields, ungrounded claims.
    assert {"silent_contradiction", "low_confidence", "grounding"} <= set(summary["flags_by_rule"])
    assert any(rule.startswith("required_field:") for rule in summary["flags_by_rule"])
    assert 0.1 < summary["flagged"]["rate"] < 0.5
    assert summary["flagged"]["n"] == n_lines
    assert summary["flagged"]["low"] < summary["flagged"]["rate"] < summary["flagged"]["high"]
    assert summary["escalated"]["count"] >= summary["flagged"]["count"]
    assert summary["judge_reached"] == 0  # the sample config runs offline: no judge
    assert summary["scored_by_judge"]["rate"] is None
    assert set(summary["latency"]) == {"heuristics", "grounding", "total"}
    for layer in summary["latency"].values():
        assert layer["n"] > 0
        assert 0 <= layer["p50_ms"] <= layer["p95_ms"]
    # NaN confidences and missing labels fail validation: recorded, never fatal.
    assert summary["errors"].get("invalid_prediction", 0) > 0

    results = [OnlineResult.model_validate_json(line) for line in _lines(out)]
    assert len(results) == n_lines
    assert sorted(r.metadata["line"] for r in results) == list(range(1, n_lines + 1))
    assert count_online_results(_store(tmp_path), summary["batch_id"]) == n_lines


def test_human_summary_names_every_figure(cli: Any) -> None:
    result = cli("online", "score", str(SAMPLE), "--config", str(SAMPLE_CONFIG), "-q")
    assert result.code == 0, result.err
    for figure in ("flagged", "escalated", "scored by judge", "latency p50 / p95", "errors"):
        assert figure in result.out
    assert "results appended to" in result.err
    assert "stored as batch" in result.err


def test_second_run_appends_to_the_sink_and_stores_a_second_batch(cli: Any, tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    first = _score_json(cli, SAMPLE, "--out", str(out))
    after_first = _lines(out)
    second = _score_json(cli, SAMPLE, "--out", str(out))
    after_second = _lines(out)
    assert len(after_second) == 2 * len(after_first)
    assert after_second[: len(after_first)] == after_first  # appended, not truncated
    assert first["batch_id"] != second["batch_id"]
    store = _store(tmp_path)
    assert count_online_results(store, first["batch_id"]) == first["items"]
    assert count_online_results(store, second["batch_id"]) == second["items"]


def test_default_sink_lives_under_arbiter_home(cli: Any, tmp_path: Path) -> None:
    summary = _score_json(cli, SAMPLE)
    sink = tmp_path / "home" / "online" / f"{summary['batch_id']}.jsonl"
    assert len(_lines(sink)) == summary["items"]


def test_without_a_config_the_built_in_pipeline_runs(cli: Any, tmp_path: Path) -> None:
    result = cli("online", "score", str(SAMPLE), "-q", "--json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["items"] == len(_lines(SAMPLE))


# ----------------------------------------------------------------- bad input


def test_bad_lines_become_error_results_and_the_run_goes_on(cli: Any, tmp_path: Path) -> None:
    good = [
        json.dumps(
            {
                "id": f"ok-{i}",
                "label": "nominal",
                "confidence": 0.9,
                "raw_output": {"status": "nominal", "anomaly_score": 0.1, "narrative": "Fine."},
            }
        )
        for i in range(3)
    ]
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(
        "\n".join([good[0], "this is not json", good[1], "", "[1, 2]", good[2]]).encode()
        + b"\n\xff\xfe{}\n"
    )
    out = tmp_path / "mixed-results.jsonl"
    summary = _score_json(cli, path, "--out", str(out))
    assert summary["items"] == 6  # the blank line is skipped, every other line has a result
    assert summary["errors"] == {"invalid_json": 1, "not_an_object": 1, "bad_encoding": 1}
    by_line = {r.metadata["line"]: r for r in map(OnlineResult.model_validate_json, _lines(out))}
    assert sorted(by_line) == [1, 2, 3, 5, 6, 7]
    assert by_line[2].prediction_id == "line-2"
    assert by_line[2].errors[0].startswith("line 2: invalid JSON")
    assert by_line[5].metadata["error_kind"] == "not_an_object"
    assert by_line[3].errors == []
    assert by_line[3].heuristics is not None
    stored = load_online_results(_store(tmp_path), summary["batch_id"])
    assert len(stored) == 6


def test_missing_file_exits_3_with_one_line(cli: Any, tmp_path: Path) -> None:
    result = cli("online", "score", str(tmp_path / "absent.jsonl"))
    assert result.code == 3
    assert result.err.strip().count("\n") == 0
    assert "absent.jsonl: no such file" in result.err
    assert not (tmp_path / "store.db").exists()  # nothing opened, nothing written


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{not json", "invalid JSON"),
        ('{"judges": 3}', "judges"),
        ('{"no_such_option": 1}', "no_such_option"),
    ],
)
def test_unreadable_config_exits_3_with_one_line(
    cli: Any, tmp_path: Path, text: str, expected: str
) -> None:
    config = tmp_path / "config.json"
    config.write_text(text, encoding="utf-8")
    result = cli("online", "score", str(SAMPLE), "--config", str(config))
    assert result.code == 3
    assert result.err.strip().count("\n") == 0
    assert "config.json" in result.err
    assert expected in result.err


def test_missing_config_exits_3(cli: Any, tmp_path: Path) -> None:
    result = cli("online", "score", str(SAMPLE), "--config", str(tmp_path / "nope.json"))
    assert result.code == 3
    assert "nope.json" in result.err


# ----------------------------------------------------------------- constant memory


class _CountingPipeline:
    """Answers after a short sleep and records how many evaluations overlap."""

    def __init__(self) -> None:
        self.running = 0
        self.peak = 0

    async def evaluate(self, prediction: Mapping[str, Any], **_: Any) -> OnlineResult:
        self.running += 1
        self.peak = max(self.peak, self.running)
        await asyncio.sleep(0.001)
        self.running -= 1
        return OnlineResult(prediction_id=str(prediction["id"]), label=None)


async def test_stream_reads_lazily_and_bounds_evaluations_in_flight() -> None:
    pipeline = _CountingPipeline()
    read = 0
    finished = 0
    worst_backlog = 0

    def lines() -> Iterator[tuple[int, bytes, int]]:
        nonlocal read
        for number in range(1, 2001):
            read += 1
            yield number, json.dumps({"id": number}).encode(), number

    async def on_result(result: OnlineResult) -> None:
        nonlocal finished, worst_backlog
        finished += 1
        worst_backlog = max(worst_backlog, read - finished)

    await score_stream(pipeline, lines(), on_result, max_in_flight=16)  # type: ignore[arg-type]
    assert finished == 2000
    assert pipeline.peak == 16
    # Lines are read only as evaluations finish: never more than the bound ahead.
    assert worst_backlog <= 16


# ----------------------------------------------------------------- sink, store, summary


def _result(i: int, **fields: Any) -> OnlineResult:
    return OnlineResult(prediction_id=f"p{i}", label="nominal", total_ms=1.0 + i, **fields)


def _ran(payload: Any) -> LayerResult:
    return LayerResult(status="ran", latency_ms=1.0, payload=payload)


def test_jsonl_sink_appends_and_never_truncates(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "sink.jsonl"
    with JsonlSink(path) as sink:
        sink.write(_result(1))
        # Flushed per write: a reader sees the line before the sink is closed.
        assert len(_lines(path)) == 1
    with JsonlSink(path) as sink:
        sink.write(_result(2, metadata={"confidence": math.nan}))
    first, second = _lines(path)
    assert OnlineResult.model_validate_json(first).prediction_id == "p1"
    assert json.loads(second)["metadata"] == {"confidence": None}  # NaN never reaches the file


def test_store_bulk_inserts_and_reads_back_a_batch(tmp_path: Path) -> None:
    store = _store(tmp_path)
    flagged = _result(
        1,
        escalated=True,
        layers={
            "heuristics": _ran(
                HeuristicResult(
                    flagged=True, findings=[HeuristicFinding(rule="low_confidence", message="0.2")]
                )
            )
        },
    )
    save_online_results(store, "batch-a", [flagged, _result(2)])
    save_online_results(store, "batch-b", [_result(3)])
    save_online_results(store, "batch-b", [])
    assert count_online_results(store, "batch-a") == 2
    assert [r.prediction_id for r in load_online_results(store, "batch-a")] == ["p1", "p2"]
    assert load_online_results(store, "batch-a")[0] == flagged
    with store.engine.connect() as connection:
        rows = connection.exec_driver_sql(
            "SELECT prediction_id, flagged, escalated FROM online_results WHERE batch_id='batch-a'"
        ).all()
    assert [tuple(row) for row in rows] == [("p1", 1, 1), ("p2", 0, 0)]


VERSION_1 = {
    "schema_version": 1,
    "prediction_id": "old-1",
    "label": "nominal",
    "heuristics": {"flagged": True, "findings": [{"rule": "low_confidence", "message": "0.2"}]},
    "grounding": None,
    "disagreement": None,
    "consistency": None,
    "judge": {"label": "critical", "source": "ollama", "agrees": False, "attempts": []},
    "escalated": True,
    "escalation_reasons": ["heuristics: low_confidence"],
    "layers": {
        "heuristics": {"status": "ran", "reason": None, "latency_ms": 0.05, "cut_off": False},
        "grounding": {"status": "not_configured", "reason": "not configured"},
        "judge": {"status": "ran", "reason": None, "latency_ms": 210.0, "cut_off": False},
    },
    "errors": [],
    "total_ms": 211.0,
    "metadata": {"line": 1},
}


def test_a_version_1_record_in_the_store_reads_back_in_the_new_shape(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from sqlalchemy import insert

    from arbiter.store.online_models import OnlineResultRow

    store = _store(tmp_path)
    row = {
        "batch_id": "old",
        "prediction_id": "old-1",
        "label": "nominal",
        "escalated": True,
        "flagged": True,
        "judge_source": "ollama",
        "total_ms": 211.0,
        "result": VERSION_1,
        "created_at": datetime.now(UTC),
    }
    with store.session() as session, session.begin():
        session.execute(insert(OnlineResultRow), [row])
    [result] = load_online_results(store, "old")
    assert result.schema_version == 2
    assert list(result.layers) == ["heuristics", "grounding", "judge"]
    assert result.layers["heuristics"].latency_ms == 0.05
    assert result.heuristics is not None
    assert [f.rule for f in result.heuristics.findings] == ["low_confidence"]
    assert result.layers["grounding"].payload is None
    assert result.judge == JudgeOutcome(label="critical", source="ollama", agrees=False)
    assert result.flagged
    stored = json.loads(result.model_dump_json())
    assert "judge" not in stored
    assert stored["layers"]["judge"]["payload"]["source"] == "ollama"


def test_the_store_keeps_the_judge_source_and_flag_columns(tmp_path: Path) -> None:
    store = _store(tmp_path)
    judged = _result(
        1,
        escalated=True,
        layers={
            "heuristics": _ran(HeuristicResult(flagged=True)),
            "judge": _ran(JudgeOutcome(label=None, source="heuristics_fallback")),
        },
    )
    save_online_results(store, "batch", [judged, _result(2)])
    with store.engine.connect() as connection:
        rows = connection.exec_driver_sql(
            "SELECT prediction_id, flagged, judge_source FROM online_results ORDER BY id"
        ).all()
    assert [tuple(row) for row in rows] == [("p1", 1, "heuristics_fallback"), ("p2", 0, None)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_latency_sketch_is_within_one_percent_of_numpy(seed: int) -> None:
    values = np.random.default_rng(seed).lognormal(mean=0.0, sigma=2.0, size=5000)
    sketch = LatencySketch()
    for value in values:
        sketch.add(float(value))
    for q in (0.5, 0.95, 0.99):
        exact = float(np.quantile(values, q, method="inverted_cdf"))
        assert sketch.quantile(q) == pytest.approx(exact, rel=0.01)


def test_summary_counts_errors_by_where_they_happened() -> None:
    summary = BatchSummary()
    summary.add(_result(1, errors=["prediction: confidence: not a number"]))
    summary.add(_result(2, errors=["judge: ollama: TimeoutError", "judge: gemini: 500"]))
    summary.add(_result(3))
    report = summary.report()
    assert report.errors == {"invalid_prediction": 1, "judge": 1}
    assert report.items_with_errors == 2
    assert _result(4, metadata={"error_kind": "invalid_json"}).error_kinds() == ["invalid_json"]


def test_summary_reports_judge_availability_and_budget_cut_offs() -> None:
    summary = BatchSummary()
    for source in ("ollama", "ollama", "gemini_flash", "heuristics_fallback"):
        label = None if source == "heuristics_fallback" else "critical"
        judge = _ran(JudgeOutcome(label=label, source=source))
        summary.add(_result(1, escalated=True, layers={"judge": judge}))
    cut = LayerResult(
        status="abstained", reason="cut off at 25s budget", latency_ms=25_000, cut_off=True
    )
    summary.add(_result(2, escalated=True, layers={"consistency": cut}))
    no_input = LayerResult(status="abstained", reason="no input to replay")
    summary.add(_result(3, escalated=True, layers={"disagreement": no_input}))
    report = summary.report()
    assert report.judge_reached == 4
    assert (report.scored_by_judge.count, report.scored_by_judge.n) == (3, 4)
    assert report.judge_sources == {"ollama": 2, "gemini_flash": 1, "heuristics_fallback": 1}
    assert report.abstentions == {"consistency": 1}  # only budget cut-offs count here
    assert report.other_abstentions == {"disagreement": 1}
    assert report.escalated.rate == 1.0
    assert "consistency" not in report.latency  # a cut-off layer has no latency of its own


# --- defects of the foundation issue -----------------------------------------------------


def _prediction(i: int) -> str:
    return json.dumps(
        {"id": f"p-{i}", "label": "nominal", "confidence": 0.9, "raw_output": {"status": "ok"}}
    )


@pytest.mark.parametrize("alias", ["same", "relative", "hardlink", "symlink"])
def test_a_sink_that_is_the_input_is_refused_before_anything_is_read(
    cli: Any, tmp_path: Path, alias: str
) -> None:
    # defect 2: `online score F --out F` appended to its own input without end.
    source = tmp_path / "traffic.jsonl"
    source.write_text("".join(_prediction(i) + "\n" for i in range(50)))
    before = source.read_bytes()
    out = {
        "same": source,
        "relative": Path("traffic.jsonl"),  # the cli fixture runs in tmp_path
        "hardlink": tmp_path / "hard.jsonl",
        "symlink": tmp_path / "soft.jsonl",
    }[alias]
    if alias == "hardlink":
        os.link(source, out)
    elif alias == "symlink":
        out.symlink_to(source)
    result = cli("online", "score", str(source), "--out", str(out), "-q")
    assert result.code == 3
    assert "that is the input file" in result.err
    assert source.read_bytes() == before
    assert not (tmp_path / "store.db").exists()


@pytest.mark.parametrize(
    "bad",
    [
        # label and id are copied into the result: there the old code broke the batch.
        '{"id": "x", "label": "\\ud800"}',
        '{"id": "\\ud800", "label": "nominal"}',
        '{"id": "x", "label": "nominal", "raw_output": {"narrative": "\\ud800"}}',
    ],
    ids=["label", "id", "raw_output"],
)
def test_a_lone_surrogate_in_one_line_is_that_line_s_error_only(
    cli: Any, tmp_path: Path, bad: str
) -> None:
    # defect 3: one such line made the whole batch exit 1 with no results.
    path = tmp_path / "traffic.jsonl"
    path.write_text("\n".join([_prediction(1), bad, _prediction(3)]) + "\n")
    out = tmp_path / "results.jsonl"
    summary = _score_json(cli, path, "--out", str(out))
    assert summary["items"] == 3
    assert summary["errors"] == {"surrogate": 1}
    by_line = {r.metadata["line"]: r for r in map(OnlineResult.model_validate_json, _lines(out))}
    assert by_line[2].errors[0].startswith("line 2: the escape \\ud800 is a lone UTF-16")
    assert by_line[1].errors == by_line[3].errors == []


def test_invalid_json_at_the_end_of_a_line_is_reported_at_its_column(
    cli: Any, tmp_path: Path
) -> None:
    # defect 14: the newline was decoded with the line, so the error said column 1.
    path = tmp_path / "traffic.jsonl"
    path.write_bytes(b'{"id": "a", "label": "x",\r\n' + _prediction(2).encode() + b"\n")
    out = tmp_path / "results.jsonl"
    _score_json(cli, path, "--out", str(out))
    first = OnlineResult.model_validate_json(_lines(out)[0])
    assert first.errors == [
        "line 1: invalid JSON: Expecting property name enclosed in double quotes at column 26"
    ]


def test_summary_lists_a_layer_of_ones_own_after_the_built_in_ones() -> None:
    summary = BatchSummary()
    layers = {"wording": _ran({"words": 3}), "heuristics": _ran(HeuristicResult(flagged=False))}
    summary.add(_result(1, layers=layers))
    assert list(summary.report().latency) == ["heuristics", "wording", "total"]
