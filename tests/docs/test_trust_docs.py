"""docs/trust.md: every example runs and prints what the page shows.

The page's examples run in order in one private Arbiter home (see ``doc_examples``): the
walk-through stores the runs the terminal examples after it read. When the output
changes on purpose: ``python -m tests.docs.refresh_pages docs/trust.md``.
"""

from __future__ import annotations

import pytest

from tests.docs.doc_examples import REPO, Example, Outcome, Session, examples

PAGE = REPO / "docs" / "trust.md"
EXAMPLES = examples(PAGE)


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    """Every example of the page, run once in page order; by ``Example.name``."""
    session = Session(tmp_path_factory.mktemp("home") / ".arbiter")
    return {example.name: session.run(example) for example in EXAMPLES}


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_example_prints_what_the_page_shows(example: Example, outcomes: dict[str, Outcome]) -> None:
    problem = outcomes[example.name].problem(example)
    assert problem is None, problem
