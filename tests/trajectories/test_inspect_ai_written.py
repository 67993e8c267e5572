"""A log inspect_ai writes now, in this test, imports and scores: the format check against
the tool itself rather than against logs it wrote once.

``data/make_inspect_logs.py`` runs its mockllm task (two samples, two epochs, an ``add``
tool, the last answer wrong; no network) in a subprocess, into ``tmp_path``. Without
inspect_ai the test is skipped, saying so; with ``ARBITER_REQUIRE_INSPECT=1`` (CI) a
missing inspect_ai fails it instead.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Result

SCRIPT = Path(__file__).parent / "data" / "make_inspect_logs.py"
INSPECT_MISSING = (
    None
    if importlib.util.find_spec("inspect_ai") is not None
    else "inspect_ai is not installed: pip install -e '.[dev]'"
)
if INSPECT_MISSING is not None and os.environ.get("ARBITER_REQUIRE_INSPECT") == "1":
    raise RuntimeError(f"ARBITER_REQUIRE_INSPECT=1 but {INSPECT_MISSING}")

pytestmark = pytest.mark.skipif(INSPECT_MISSING is not None, reason=str(INSPECT_MISSING))


@pytest.fixture(scope="module")
def written_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``.eval`` log inspect_ai writes for the mockllm task."""
    folder = tmp_path_factory.mktemp("inspect")
    env = {**os.environ, "HOME": str(folder)}  # inspect's own traces stay in the folder
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "eval"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (log,) = (folder / "logs_eval").glob("*.eval")
    return log


def test_a_log_inspect_ai_writes_now_imports_as_a_run(cli: Any, written_log: Path) -> None:
    result: Result = cli("import", "inspect", str(written_log), "--json")
    assert result.code == 0, result.err
    imported = json.loads(result.out)
    assert (imported["n_examples"], imported["k"], imported["warnings"]) == (2, 2, [])
    report = imported["report"]
    assert report["accuracy"]["estimate"] == pytest.approx(3 / 4)
    assert report["pass_hat_k"]["estimate"] == pytest.approx(1 / 2)
    assert [s["name"] for s in report["scorers"]] == ["inspect:includes"]


def test_a_log_inspect_ai_writes_now_scores_as_trajectories(cli: Any, written_log: Path) -> None:
    result: Result = cli("agent", "score", str(written_log), "--json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert (report["n_trajectories"], report["n_tasks"]) == (4, 2)
    assert report["pass_hat_k"]["2"]["estimate"] == pytest.approx(1 / 2)
    assert report["scorers"]["inspect:includes"]["pass"] == 3
