"""docs/judges.md: every example runs and prints what the page shows.

The page's examples run in order in one private Arbiter home (see ``doc_examples``), so
``arbiter calibrate --store`` reads the annotations the examples before it stored. When
the output changes on purpose: ``python -m tests.docs.refresh_pages docs/judges.md``.
"""

from __future__ import annotations

import pytest

from tests.docs.doc_examples import REPO, Example, Outcome, Session, examples

PAGE = REPO / "docs" / "judges.md"
EXAMPLES = examples(PAGE)
COMMANDS = (
    "calibrate docs/",
    "calibrate --store",
    "annotate --file",
    "annotate turn",
    "gate-check",
    "gate-review",
    "gate-bench",
)


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    """Every example of the page, run once in page order; by ``Example.name``."""
    session = Session(tmp_path_factory.mktemp("home") / ".arbiter")
    return {example.name: session.run(example) for example in EXAMPLES}


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_example_prints_what_the_page_shows(example: Example, outcomes: dict[str, Outcome]) -> None:
    problem = outcomes[example.name].problem(example)
    assert problem is None, problem


@pytest.mark.parametrize("command", COMMANDS)
def test_page_runs_each_command(command: str) -> None:
    assert any(e.kind == "sh" and e.code.startswith(f"arbiter {command}") for e in EXAMPLES)


@pytest.mark.parametrize(
    "chapter", ["Judge panels", "Calibration", "Refinement pairs", "The grounding gate"]
)
def test_every_chapter_shows_a_python_example(chapter: str) -> None:
    assert any(e.kind == "python" and e.chapter == chapter for e in EXAMPLES)
