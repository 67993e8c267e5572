"""The ``cli`` fixture: run ``arbiter`` in-process in a scratch folder, capture everything."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from arbiter.cli.main import main


class Result:
    """Exit code and captured output of one command."""

    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err


@pytest.fixture
def cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[..., Result]:
    """Invoke the CLI with a private store and home under ``tmp_path``."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ARBITER_DB_URL", f"sqlite:///{tmp_path / 'store.db'}")
    monkeypatch.setenv("ARBITER_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.setenv("COLUMNS", "200")

    def invoke(*args: str) -> Result:
        capsys.readouterr()
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return invoke
