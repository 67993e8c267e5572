"""docs/systems.md, "A kind of your own: a plugin": its examples run with its plugin installed.

The plugin is a distribution whose entry points are the page's own ``pyproject.toml``
snippet, over the module the page shows, so the snippet, the module and the commands
are tested together (see ``doc_examples``).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from tests.docs.doc_examples import REPO, Block, Example, Outcome, Session, blocks, examples
from tests.helpers.plugins import install_distribution

PAGE = REPO / "docs" / "systems.md"
CHAPTER = "A kind of your own: a plugin"
GROUP = "arbiter.systems"
MODULES = REPO / "docs" / "examples" / "systems"

EXAMPLES = [e for e in examples(PAGE) if e.chapter == CHAPTER]
SHOWN_FILES = [b for b in blocks(PAGE) if b.chapter == CHAPTER and b.caption]


def _page_entry_points() -> dict[str, str]:
    """The ``[project.entry-points."arbiter.systems"]`` table of the chapter's snippet."""
    for block in blocks(PAGE):
        if block.chapter == CHAPTER and block.language == "toml" and GROUP in block.text:
            table = tomllib.loads(block.text)["project"]["entry-points"][GROUP]
            return {str(name): str(target) for name, target in table.items()}
    raise AssertionError("the chapter shows no entry-point table for arbiter.systems")


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    """Every example of the chapter, run once in page order; by ``Example.name``."""
    plugin = tmp_path_factory.mktemp("plugin")
    install_distribution(plugin, "arbiter-doc-systems", _page_entry_points(), group=GROUP)
    session = Session(tmp_path_factory.mktemp("home") / ".arbiter", [MODULES, plugin])
    return {example.name: session.run(example) for example in EXAMPLES}


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_example_prints_what_the_page_shows(example: Example, outcomes: dict[str, Outcome]) -> None:
    problem = outcomes[example.name].problem(example)
    assert problem is None, problem


def test_the_chapter_runs_commands_and_shows_its_module() -> None:
    assert len(EXAMPLES) >= 2
    assert [Path(str(b.caption)).name for b in SHOWN_FILES] == ["threshold_kind.py"]


@pytest.mark.parametrize("block", SHOWN_FILES, ids=lambda block: str(block.caption))
def test_file_shown_in_the_chapter_is_the_file(block: Block) -> None:
    assert block.caption is not None
    assert block.text == (REPO / block.caption).read_text(encoding="utf-8")
