"""The line that says a stored run is not complete names the command that resumes it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from arbiter.contract import Report, RunConfig, RunInfo
from arbiter.service.runs import StoredRun, incomplete_note


def _stored(system: dict[str, Any], *, done: int) -> StoredRun:
    info = RunInfo(
        id="r1",
        dataset_hash="h",
        dataset_name="cases",
        system=system,
        config={},
        status="interrupted",
        n_pairs=4,
        n_done=done,
        created_at=datetime(2026, 12, 1, tzinfo=UTC),
    )
    report = Report.model_construct()
    return StoredRun(info=info, config=RunConfig(), examples=[], results=[], report=report)


@pytest.mark.parametrize(
    ("kind", "command"),
    [
        ("python", "arbiter run"),
        ("agent-http", "arbiter agent run"),
        ("agent-python", "arbiter agent run"),
    ],
)
def test_an_unfinished_run_names_the_command_that_resumes_it(kind: str, command: str) -> None:
    note = incomplete_note(_stored({"kind": kind}, done=1))
    assert note is not None
    assert note.endswith(f"finish it with: {command} --resume r1")
