"""``arbiter run`` end to end against real local services: an HTTP app and an MCP server."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from arbiter.cli.main import main
from arbiter.contract import Dataset, Example, Report
from arbiter.datasets import dump_dataset_jsonl
from arbiter.store import Store
from tests.integration.serving import serve_asgi
from tests.integration.test_http_system import APP as INGEST_APP
from tests.integration.test_mcp_system import assess, build_app


@pytest.fixture
def run_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Any:
    monkeypatch.setenv("ARBITER_DB_URL", f"sqlite:///{tmp_path / 'store.db'}")

    def invoke(*args: str) -> tuple[int, Report | None, str]:
        capsys.readouterr()
        try:
            main([*args, "--quiet", "--json"])
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
        out = capsys.readouterr()
        report = Report.model_validate_json(out.out) if out.out.strip() else None
        return code, report, out.err

    return invoke


def _dataset(tmp_path: Path, examples: list[Example]) -> str:
    path = tmp_path / "data.jsonl"
    dump_dataset_jsonl(Dataset(name="e2e", examples=examples), path)
    return str(path)


def test_http_ingest_service_scored_with_status_and_anomaly_score(
    tmp_path: Path, run_cli: Any
) -> None:
    readings = {"s-1": [0.1, 0.2], "s-2": [0.55], "s-3": [0.93, 0.4], "s-4": [0.3]}
    expected = {"s-1": "nominal", "s-2": "degraded", "s-3": "critical", "s-4": "degraded"}
    examples = [
        Example(id=sid, input={"source_id": sid, "readings": values}, expected_label=expected[sid])
        for sid, values in readings.items()
    ]
    examples.append(  # a contradiction the service itself rejects with 422
        Example(
            id="s-5",
            input={"source_id": "s-5", "readings": [0.9], "claim": "nominal"},
            expected_label="critical",
        )
    )
    template = (
        '{"source_id": "{{input.source_id}}", "readings": "{{input.readings}}", '
        '"status": "{{input.claim}}"}'
    )
    with serve_asgi(INGEST_APP) as base:
        code, report, err = run_cli(
            "run",
            "--dataset",
            _dataset(tmp_path, examples[:4]),
            "--system",
            "http",
            "--url",
            f"{base}/ingest",
            "--label-path",
            "status",
            "--confidence-path",
            "anomaly_score",
            "--id-path",
            "source_id",
        )
        assert code == 0, err
        assert report is not None
        assert report.strict.accuracy.estimate == pytest.approx(3 / 4)  # s-4 is really nominal
        code, report, err = run_cli(
            "run",
            "--dataset",
            _dataset(tmp_path, examples[4:]),
            "--system",
            "http",
            "--url",
            f"{base}/ingest",
            "--label-path",
            "status",
            "--body-template",
            template,
        )
    assert code == 1  # every call failed
    assert report is not None
    assert report.errors_by_type == {"SystemHTTPError": 1}
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    (result,) = store.results(report.run_id or "")
    assert result.attempts == 1  # a 422 is not retried
    assert "judge_rejected" in (result.error_message or "")


@pytest.fixture(params=["stateful", "stateless"])
def mcp_url(request: pytest.FixtureRequest) -> Iterator[str]:
    release = threading.Event()
    with serve_asgi(build_app(request.param, release)) as base:
        yield f"{base}/mcp"
    release.set()


def test_mcp_tool_scored_binary_with_a_driver_override(
    tmp_path: Path, run_cli: Any, mcp_url: str
) -> None:
    cases = [(50.0, "DE"), (2_000.0, "FR"), (400.0, "IR"), (20_000.0, "US"), (999.0, "KP")]
    examples = []
    for i, (amount, country) in enumerate(cases):
        level, _ = assess(amount, country)
        truth = "low" if level == "low" else "high"
        if i == 1:
            truth = "low"  # ground truth says the medium one was legitimate: a binary miss
        examples.append(
            Example(id=f"t{i}", input={"amount": amount, "country": country}, expected_label=truth)
        )
    code, report, err = run_cli(
        "run",
        "--dataset",
        _dataset(tmp_path, examples),
        "--system",
        "mcp",
        "--url",
        mcp_url,
        "--tool",
        "analyze-transaction",
        "--driver",
        "ollama",
        "--binary",
    )
    assert code == 0, err
    assert report is not None
    assert report.mapped is not None
    assert report.mapped.accuracy.estimate == pytest.approx(4 / 5)
    assert report.strict.accuracy.estimate < report.mapped.accuracy.estimate
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    drivers = {
        r.output.raw["driver"]
        for r in store.results(report.run_id or "")
        if r.output is not None and isinstance(r.output.raw, dict)
    }
    assert drivers == {"ollama"}
