"""Running ``arbiter run`` from a test through the ``cli`` fixture."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from arbiter.contract import Report


def run_json(cli: Any, data_file: Path, target: str, *extra: str) -> str:
    """Run ``tests.helpers.systems:<target>`` over ``data_file``; the stored run's id."""
    result = cli(
        "run",
        "--dataset",
        str(data_file),
        "--target",
        f"tests.helpers.systems:{target}",
        "--quiet",
        "--json",
        *extra,
    )
    assert result.code == 0, result.err
    run_id = Report.model_validate_json(result.out).run_id
    assert run_id
    return run_id
