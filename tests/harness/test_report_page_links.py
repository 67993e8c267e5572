"""The markdown report links to the run's page when a server URL is configured."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from arbiter.config import Settings
from tests.helpers.cli import run_json


def _dataset(tmp_path: Path) -> Path:
    rows = [
        '{"id": "a", "input": {"answer": "spam"}, "expected_label": "spam"}',
        '{"id": "b", "input": {"answer": "spam"}, "expected_label": "ham"}',
    ]
    path = tmp_path / "data.jsonl"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_with_a_server_url_the_markdown_report_links_the_run_and_its_failures(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = run_json(cli, _dataset(tmp_path), "echo_label")
    monkeypatch.setenv("ARBITER_SERVER_URL", "https://arbiter.example.com/")
    result = cli("report", run_id, "--format", "markdown")
    assert result.code == 0, result.err
    page = f"https://arbiter.example.com/runs/{run_id}"
    assert f"[Open the run in Arbiter]({page}) · [its failures]({page}?show=failing)" in (
        result.out
    )


def test_without_a_server_url_the_report_has_no_link(cli: Any, tmp_path: Path) -> None:
    run_id = run_json(cli, _dataset(tmp_path), "echo_label")
    result = cli("report", run_id, "--format", "markdown")
    assert result.code == 0, result.err
    assert "](http" not in result.out


@pytest.mark.parametrize(
    "url", ["javascript:alert(1)", "https://x.example/a)[evil](https://y", "ftp://x", "http://a b"]
)
def test_a_server_url_that_is_not_a_plain_http_url_is_refused(url: str) -> None:
    with pytest.raises(ValidationError, match="server_url"):
        Settings(_env_file=None, server_url=url)  # type: ignore[call-arg]
