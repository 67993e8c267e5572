"""Choosing a panel: one model per family, doubling up only when no family is left."""

from __future__ import annotations

import pytest
from pydantic import SecretStr, ValidationError

from arbiter.config import Settings
from arbiter.judges.panel import PanelModel, build_panel
from arbiter.providers.registry import ProviderRegistry


def names(configs: list[str]) -> list[str]:
    return [m.name for m in build_panel(configs, credentials=lambda c: True).members]


@pytest.mark.parametrize(
    ("provider", "family"),
    [
        ("openai", "openai"),
        ("gemini", "google"),
        ("llama_cpp", "llama_cpp"),
        ("myplugin", "myplugin"),
    ],
)
def test_the_family_is_derived_from_the_provider_unless_given(provider: str, family: str) -> None:
    assert PanelModel(provider=provider, model="m").family == family
    assert PanelModel(provider=provider, model="m", family="acme").family == "acme"


def test_the_panel_takes_one_config_per_family_in_the_order_given() -> None:
    panel = build_panel(
        ["openai:a", "openai:b", "anthropic:c", "gemini:d", "llama_cpp:e"],
        credentials=lambda c: True,
    )
    assert [m.name for m in panel.members] == ["openai:a", "anthropic:c", "gemini:d"]
    assert panel.shared_family is None
    assert ("openai:b", "panel full (3 members)") in panel.excluded


def test_a_second_config_of_a_family_sits_only_when_no_other_family_is_left() -> None:
    panel = build_panel(["openai:a", "openai:b", "anthropic:c"], credentials=lambda c: True)
    assert [m.name for m in panel.members] == ["openai:a", "openai:b", "anthropic:c"]
    assert panel.shared_family == "openai"
    assert "two of family openai: no other family available" in panel.describe()


def test_max_members_bounds_the_panel() -> None:
    panel = build_panel(["openai:a", "anthropic:c"], max_members=1, credentials=lambda c: True)
    assert [m.name for m in panel.members] == ["openai:a"]
    assert panel.shared_family is None


def test_an_opted_out_config_leaves_its_family_to_the_next_config() -> None:
    panel = build_panel(
        [{"provider": "openai", "model": "a", "enabled": False}, "openai:b", "anthropic:c"],
        credentials=lambda c: True,
    )
    assert [m.name for m in panel.members] == ["openai:b", "anthropic:c"]
    assert ("openai:a", "opted out (enabled=false)") in panel.excluded


@pytest.mark.parametrize(
    ("configs", "credentials", "reason"),
    [
        ([], True, "no judge configuration given"),
        (
            [
                {"provider": "openai", "model": "a", "enabled": False},
                {"provider": "mock", "enabled": False},
            ],
            True,
            "every judge configuration opted out: openai:a, mock",
        ),
        (
            ["openai:a", "anthropic:b"],
            False,
            "no judge configuration has credentials: openai:a, anthropic:b",
        ),
        (
            [{"provider": "openai", "model": "a", "enabled": False}, "anthropic:b"],
            False,
            "no usable judge configuration: openai:a opted out (enabled=false); "
            "anthropic:b no credentials for provider 'anthropic'",
        ),
    ],
)
def test_an_empty_panel_says_by_name_why(
    configs: list[str | dict[str, object]], credentials: bool, reason: str
) -> None:
    panel = build_panel(configs, credentials=lambda c: credentials)
    assert panel.empty
    assert panel.reason == reason
    assert panel.describe() == f"empty panel: {reason}"


def test_credentials_are_read_from_the_settings() -> None:
    settings = Settings(anthropic_api_key=SecretStr("k"), gemini_api_key=None, openai_api_key=None)
    panel = build_panel(["openai:a", "anthropic:b", "gemini:c", "llama_cpp:d"], settings=settings)
    assert [m.name for m in panel.members] == ["anthropic:b", "llama_cpp:d"]
    vllm = settings.model_copy(update={"openai_base_url": "http://vllm:8000/v1"})
    assert ProviderRegistry.default(plugins=False).has_credentials("openai", vllm)


@pytest.mark.parametrize(
    "config",
    [
        {"provider": "openai"},
        {"provider": ""},
        {"provider": "mock", "timeout": 0},
        {"provider": "mock", "x": 1},
    ],
)
def test_a_malformed_config_is_refused(config: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        PanelModel.parse(config)


def test_max_members_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="max_members must be at least 1"):
        build_panel(["mock"], max_members=0)


def test_two_equal_configurations_are_two_candidates_for_one_seat() -> None:
    panel = build_panel(["mock", {"provider": "mock"}], max_members=1, credentials=lambda c: True)
    assert len(panel.members) == 1
    assert [reason for _, reason in panel.excluded] == ["panel full (1 members)"]
