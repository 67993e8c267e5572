"""The layers of docs/architecture.md hold: the import-linter contract, and no import cycle.

The contract itself is run by ``make lint`` and ``.ci/run``; here it is proved to bite:
a copy of the package with one upward import planted in it must fail the check.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _copy(tmp_path: Path) -> Path:
    """The package and its contract in a scratch folder, never the real tree."""
    shutil.copytree(
        ROOT / "src" / "arbiter",
        tmp_path / "src" / "arbiter",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def _lint(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(folder / "pyproject.toml"), "--no-cache"],
        cwd=folder,
        env={"PYTHONPATH": str(folder / "src"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _copy(tmp_path_factory.mktemp("layers"))


def test_the_contract_holds_on_the_package_as_it_is(copy: Path) -> None:
    result = _lint(copy)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "planted", "broken"),
    [
        # The bottom layer reaching up into an engine.
        ("contract/common.py", "from arbiter.harness import runner", "arbiter.harness"),
        # An edge importing an engine (the mock provider once imported the detectors).
        ("providers/mock.py", "from arbiter.jury import detectors", "arbiter.jury"),
        # The store learning a shape from an engine instead of the contract.
        ("store/models.py", "from arbiter.online import pipeline", "arbiter.online"),
        # One engine importing another.
        ("harness/gate.py", "from arbiter.online import sink", "arbiter.online"),
    ],
)
def test_a_planted_upward_import_breaks_the_contract(
    tmp_path: Path, module: str, planted: str, broken: str
) -> None:
    folder = _copy(tmp_path)
    target = folder / "src" / "arbiter" / module
    target.write_text(f"{target.read_text(encoding='utf-8')}\n{planted}  # planted\n")
    result = _lint(folder)
    assert result.returncode == 1, result.stdout
    assert "BROKEN" in result.stdout
    assert broken in result.stdout


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append(
                        (child, iter(sorted(graph.find_modules_directly_imported_by(child))))
                    )
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_module_imports_itself_through_others() -> None:
    # Every import counts: at module level, inside functions, under TYPE_CHECKING.
    graph = grimp.build_graph("arbiter", include_external_packages=False)
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = grimp.ImportGraph()
    for name in ("p", "p.a", "p.b", "p.c"):
        graph.add_module(name)
    graph.add_import(importer="p.a", imported="p.b")
    graph.add_import(importer="p.b", imported="p.a")
    graph.add_import(importer="p.c", imported="p.a")
    assert _cycles(graph) == [["p.a", "p.b"]]
