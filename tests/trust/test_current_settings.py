"""The breaker's settings on the ingest path are built once per environment, not per
request: the same object while nothing they are read from changed, new ones when a
variable or the ``.env`` file did."""

from __future__ import annotations

from pathlib import Path

import pytest

from arbiter.service.trust import current_settings


def test_settings_follow_the_variables_and_the_env_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ARBITER_TRUST_WEBHOOK_RETRIES", raising=False)
    first = current_settings()
    assert current_settings() is first  # nothing changed: not built again
    monkeypatch.setenv("ARBITER_TRUST_WEBHOOK_RETRIES", "5")
    assert current_settings().trust_webhook_retries == 5
    monkeypatch.delenv("ARBITER_TRUST_WEBHOOK_RETRIES")
    (tmp_path / ".env").write_text("ARBITER_TRUST_WEBHOOK_RETRIES=7\n", "utf-8")
    assert current_settings().trust_webhook_retries == 7
    (tmp_path / ".env").write_text("ARBITER_TRUST_WEBHOOK_RETRIES=10\n", "utf-8")
    assert current_settings().trust_webhook_retries == 10
    (tmp_path / ".env").unlink()
    assert current_settings().trust_webhook_retries == first.trust_webhook_retries
