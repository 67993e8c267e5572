"""Only the judging layer calls a model: no ``.complete(`` outside judging and providers.

The import-linter contract forbids the layers above the judging layer to import the
providers' call surface; this test reads every module's syntax tree for the call
itself, so a provider reached another way (duck typing, a registry's build) is caught
too, and proves the contract bites on a planted import.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.test_architecture import _copy, _lint

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "arbiter"
ALLOWED = ("judging", "providers")
"""The packages that may call ``Provider.complete``."""


def _complete_calls(source: str) -> list[int]:
    """Lines of ``<anything>.complete(...)`` calls in a module's source."""
    tree = ast.parse(source)
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "complete"
    ]


def _provider_package_imports(source: str) -> list[int]:
    """Lines of ``from arbiter.providers import ...`` (the package re-exports the protocol)."""
    tree = ast.parse(source)
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "arbiter.providers"
    ]


def _outside_judging() -> list[Path]:
    return sorted(
        path for path in PACKAGE.rglob("*.py") if path.relative_to(PACKAGE).parts[0] not in ALLOWED
    )


def test_no_module_outside_judging_and_providers_calls_complete() -> None:
    found = {
        str(path.relative_to(PACKAGE)): lines
        for path in _outside_judging()
        if (lines := _complete_calls(path.read_text(encoding="utf-8")))
    }
    assert found == {}


def test_no_module_outside_judging_and_providers_imports_the_providers_package() -> None:
    found = {
        str(path.relative_to(PACKAGE)): lines
        for path in _outside_judging()
        if (lines := _provider_package_imports(path.read_text(encoding="utf-8")))
    }
    assert found == {}


def test_the_call_finder_finds_a_call() -> None:
    source = "async def f(p, r):\n    x = 1\n    return await p.complete(r)\n"
    assert _complete_calls(source) == [3]
    assert _complete_calls("def f(p):\n    return p.completed\n") == []


@pytest.mark.parametrize(
    ("module", "planted"),
    [
        ("scoring/rubric.py", "from arbiter.providers.base import CompletionRequest"),
        ("jury/critics.py", "from arbiter.providers.cache import CachedProvider"),
        ("online/llm_judge.py", "from arbiter.providers import mock"),
        ("service/jury.py", "import arbiter.providers.openai"),
    ],
)
def test_a_planted_import_of_the_call_surface_breaks_the_judging_contract(
    tmp_path: Path, module: str, planted: str
) -> None:
    folder = _copy(tmp_path)
    target = folder / "src" / "arbiter" / module
    target.write_text(f"{target.read_text(encoding='utf-8')}\n{planted}  # planted\n")
    result = _lint(folder)
    assert result.returncode == 1, result.stdout
    assert "Only the judging layer reaches Provider.complete" in result.stdout
    assert "BROKEN" in result.stdout
