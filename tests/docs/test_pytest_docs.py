"""docs/pytest.md: its pytest and arbiter commands print what it shows, in page order in
one private Arbiter home, and the test file it shows is the repository's."""

from __future__ import annotations

import pytest

from tests.docs.doc_examples import REPO, Block, Example, Outcome, Session, blocks
from tests.docs.page_commands import page_examples, run

PAGE = REPO / "docs" / "pytest.md"
EXAMPLES = page_examples(PAGE)
SHOWN_FILES = [b for b in blocks(PAGE) if b.caption]


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    session = Session(tmp_path_factory.mktemp("home") / ".arbiter")
    return {example.name: run(session, example) for example in EXAMPLES}


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_example_prints_what_the_page_shows(example: Example, outcomes: dict[str, Outcome]) -> None:
    problem = outcomes[example.name].problem(example)
    assert problem is None, problem


def test_the_page_runs_pytest_on_main_and_on_a_regressed_branch() -> None:
    commands = [e.code for e in EXAMPLES if e.kind == "sh"]
    assert sum(c.startswith("pytest") for c in commands) == 1
    assert sum(c.startswith("QUIZ_VERSION=v2 pytest") for c in commands) == 1


@pytest.mark.parametrize("block", SHOWN_FILES, ids=lambda block: str(block.caption))
def test_file_shown_on_the_page_is_the_file(block: Block) -> None:
    assert block.caption is not None
    assert block.text == (REPO / block.caption).read_text(encoding="utf-8")
