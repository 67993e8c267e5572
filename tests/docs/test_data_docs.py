"""docs/datasets.md and docs/systems.md: the chapters on references and recorded outputs run.

Only these chapters are run: the rest of both pages shows commands with ``.venv/bin/``
paths and servers started in a second terminal, which a reader runs by hand. Each
chapter's examples run in order in one private Arbiter home (see ``doc_examples``), and
a file a chapter shows (a ``\\`path\\`:`` caption) is the file in the repository.
"""

from __future__ import annotations

import pytest

from tests.docs.doc_examples import REPO, Block, Example, Outcome, Session, blocks, examples

CHAPTERS = {
    REPO / "docs" / "datasets.md": "References and recorded outputs",
    REPO / "docs" / "systems.md": "`precomputed`: outputs the dataset already holds",
}

EXAMPLES = [e for page, chapter in CHAPTERS.items() for e in examples(page) if e.chapter == chapter]
SHOWN_FILES = [
    b
    for page, chapter in CHAPTERS.items()
    for b in blocks(page)
    if b.chapter == chapter and b.caption
]


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    """Every example of the chapters, run once in page order; by ``Example.name``."""
    results: dict[str, Outcome] = {}
    for page in CHAPTERS:
        session = Session(tmp_path_factory.mktemp("home") / ".arbiter")
        for example in EXAMPLES:
            if example.page == page:
                results[example.name] = session.run(example)
    return results


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_example_prints_what_the_page_shows(example: Example, outcomes: dict[str, Outcome]) -> None:
    problem = outcomes[example.name].problem(example)
    assert problem is None, problem


@pytest.mark.parametrize("page", list(CHAPTERS), ids=lambda page: page.name)
def test_each_chapter_has_a_shell_and_a_python_example(page: object) -> None:
    kinds = {e.kind for e in EXAMPLES if e.page == page}
    assert kinds == {"sh", "python"}


@pytest.mark.parametrize("block", SHOWN_FILES, ids=lambda block: str(block.caption))
def test_file_shown_in_a_chapter_is_the_file(block: Block) -> None:
    assert block.caption is not None
    assert block.text == (REPO / block.caption).read_text(encoding="utf-8")
