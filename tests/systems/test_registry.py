"""System kinds come from one registry: built-ins, kinds added in code, and plugins."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from arbiter.contract import Prediction
from arbiter.errors import InputError
from arbiter.service.runs import system_description
from arbiter.systems.factory import build_system
from arbiter.systems.registry import SystemKind, SystemOptions, SystemRegistry
from tests.helpers.plugins import install_distribution

PLUGIN_MODULE = "system_registry_test_plugin"  # written into tmp_path; no other test uses it

PLUGIN_SOURCE = textwrap.dedent(
    """
    from arbiter.systems.registry import SystemKind

    class Shouting:
        async def __call__(self, input):
            return {"label": str(input["text"]).upper()}

    KIND = SystemKind(
        name="inner_name",
        summary="shouts the input's text",
        describe=lambda options: {"kind": "shout"},
        build=lambda description, headers: Shouting(),
    )
    HTTP = SystemKind(
        name="http",
        summary="would replace the built-in http",
        describe=lambda options: {"kind": "http"},
        build=lambda description, headers: Shouting(),
    )
    NOT_A_KIND = 42

    def make_kind():
        return KIND
    """
)


class Constant:
    def __init__(self, label: str) -> None:
        self.label = label

    async def __call__(self, input: dict[str, Any]) -> Prediction:
        return Prediction(label=self.label)


def _constant_kind() -> SystemKind:
    def describe(options: SystemOptions) -> dict[str, Any]:
        return {"kind": "constant", "target": options.target, "timeout": options.timeout}

    def build(description: Mapping[str, Any], headers: Mapping[str, str]) -> Constant:
        return Constant(str(description["target"]))

    return SystemKind(
        name="constant",
        summary="answers every input with --target",
        target="the label to answer",
        describe=describe,
        build=build,
    )


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "site"
    root.mkdir()
    (root / f"{PLUGIN_MODULE}.py").write_text(PLUGIN_SOURCE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(root))
    yield root
    sys.modules.pop(PLUGIN_MODULE, None)


def test_the_default_registry_holds_the_four_built_in_kinds() -> None:
    registry = SystemRegistry.default(plugins=False)
    assert registry.names() == ("http", "mcp", "precomputed", "python")
    assert [registry.kind(name).name for name in registry.names()] == list(registry.names())
    assert registry.reading("output_field") == ["precomputed"]


async def test_a_kind_added_in_code_is_described_built_and_called() -> None:
    registry = SystemRegistry.default(plugins=False)
    registry.register_kind(_constant_kind())
    description = system_description("constant", "yes", timeout=3.0, systems=registry)
    assert description == {"kind": "constant", "target": "yes", "timeout": 3.0}
    system = build_system(description, registry=registry)
    assert (await system({"q": 1})).label == "yes"
    with pytest.raises(InputError, match="--target is required for --system constant"):
        system_description("constant", None, systems=registry)


@pytest.mark.parametrize(
    ("kind", "target", "options", "message"),
    [
        ("http", None, {}, "--target is required for --system http: give the service URL"),
        ("python", None, {}, "give 'package.module:function'"),
        ("mcp", "http://h/mcp", {}, "--tool is required for --system mcp"),
        ("precomputed", "x", {}, "--system precomputed calls nothing: drop --target"),
        ("ftp", "x", {}, "unknown system kind 'ftp'; known: 'http', 'mcp', 'precomputed'"),
    ],
)
def test_each_kind_refuses_the_options_it_cannot_use(
    kind: str, target: str | None, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(InputError, match=message):
        system_description(kind, target, systems=SystemRegistry.default(plugins=False), **options)


def test_a_stored_description_of_an_unknown_kind_is_refused() -> None:
    with pytest.raises(InputError, match="unknown system kind 'threshold'"):
        build_system({"kind": "threshold"}, registry=SystemRegistry.default(plugins=False))


async def test_a_plugin_kind_is_named_by_its_entry_point(site: Path) -> None:
    install_distribution(
        site,
        "shouting-systems",
        group="arbiter.systems",
        entry_points={"shout": f"{PLUGIN_MODULE}:KIND"},
    )
    registry = SystemRegistry.default()
    assert "shout" in registry.names()
    assert "inner_name" not in registry.names()
    assert registry.kind("shout").name == "shout"
    system = build_system({"kind": "shout"}, registry=registry)
    assert (await system({"text": "hi"})) == {"label": "HI"}


def test_a_plugin_may_publish_a_factory_of_its_kind(site: Path) -> None:
    install_distribution(
        site,
        "made-systems",
        group="arbiter.systems",
        entry_points={"made": f"{PLUGIN_MODULE}:make_kind"},
    )
    assert SystemRegistry.default().kind("made").summary == "shouts the input's text"


def test_a_plugin_never_replaces_a_built_in_kind(site: Path) -> None:
    install_distribution(
        site,
        "shadow-systems",
        group="arbiter.systems",
        entry_points={"http": f"{PLUGIN_MODULE}:HTTP"},
    )
    kind = SystemRegistry.default().kind("http")
    assert kind.summary == "a JSON-over-HTTP endpoint"


@pytest.mark.parametrize(
    ("target", "message"),
    [
        (f"{PLUGIN_MODULE}:NOT_A_KIND", "is not a SystemKind"),
        ("no_such_module_anywhere:KIND", "cannot be loaded: ModuleNotFoundError"),
    ],
)
def test_a_broken_plugin_kind_is_an_input_error(site: Path, target: str, message: str) -> None:
    install_distribution(
        site, "broken-systems", group="arbiter.systems", entry_points={"broken": target}
    )
    registry = SystemRegistry.default()
    assert "broken" in registry.names()  # listed without importing it
    with pytest.raises(InputError, match=message):
        registry.kind("broken")


def test_an_unknown_system_on_the_command_line_is_a_usage_error(cli: Any, tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text('{"id": "a", "input": {}, "expected_label": "x"}\n', encoding="utf-8")
    result = cli("run", "--dataset", str(data), "--system", "ftp", "--target", "x")
    # Refused as any bad option value is (the same exit code as --k 0), before any call.
    assert result.code == cli("run", "--dataset", str(data), "--k", "0").code != 0
    assert "not a system kind; known: http, mcp, precomputed, python" in result.err
    assert not (tmp_path / "store.db").exists()


def test_an_unknown_kind_in_an_eval_file_names_its_line(cli: Any, tmp_path: Path) -> None:
    (tmp_path / "d.jsonl").write_text('{"id": "a", "input": {}, "expected_label": "x"}\n')
    path = tmp_path / "eval.toml"
    path.write_text('[dataset]\npath = "d.jsonl"\n\n[system]\nkind = "ftp"\ntarget = "x"\n')
    result = cli("run", str(path))
    assert result.code == 3
    assert f"{path}:5: system.kind: unknown system kind 'ftp'; known: 'http'" in result.err
