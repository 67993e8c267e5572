"""The trust loop's settings: one Settings object, every variable documented, and the
judge settings that fall back (with a log line) instead of failing or switching judging."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from arbiter.config import Settings

ROOT = Path(__file__).resolve().parents[2]


def test_every_trust_setting_is_documented_in_the_env_example() -> None:
    documented = (ROOT / ".env.example").read_text(encoding="utf-8")
    names = [name for name in Settings.model_fields if name.startswith("trust_")]
    assert len(names) >= 10
    missing = [n for n in names if f"ARBITER_{n.upper()}=" not in documented]
    assert missing == []


def test_trust_settings_are_read_from_their_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARBITER_TRUST_WEBHOOK_URLS", " https://a.example/h , ,https://b.example/h")
    monkeypatch.setenv("ARBITER_TRUST_REVIEW_TTL_DAYS", "7")
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert settings.trust_webhooks() == ["https://a.example/h", "https://b.example/h"]
    assert settings.trust_review_ttl_days == 7


@pytest.mark.parametrize(
    ("given", "rate"), [("0.25", 0.25), ("1.5", 1.0), ("-3", 0.0), ("abc", 0.0), ("nan", 0.0)]
)
def test_the_sample_rate_is_clamped_and_a_malformed_one_falls_back(
    given: str, rate: float, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("ARBITER_TRUST_JUDGE_SAMPLE_RATE", given)
    with caplog.at_level(logging.WARNING, logger="arbiter.config"):
        assert Settings(_env_file=None).trust_judge_sample_rate == rate  # type: ignore[call-arg]
    malformed = given in ("abc", "nan")
    assert ("is not a number" in caplog.text) is malformed


@pytest.mark.parametrize(("given", "judges"), [("on", "on"), (" ON ", "on"), ("yes", "off")])
def test_a_judges_switch_that_is_neither_on_nor_off_stays_off(
    given: str, judges: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("ARBITER_TRUST_JUDGES", given)
    with caplog.at_level(logging.WARNING, logger="arbiter.config"):
        assert Settings(_env_file=None).trust_judges == judges  # type: ignore[call-arg]
    assert ("is not on or off" in caplog.text) is (given == "yes")
