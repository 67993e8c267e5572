"""docs/safety.md: every example runs and prints what the page shows, and each safety
scorer has a true section.

The page's examples run in order in one private Arbiter home (see ``doc_examples``).
Each scorer's section carries an argument table read back against the factory, so the
page cannot drift from the code. When the output changes on purpose:
``python -m tests.docs.refresh_pages docs/safety.md``.
"""

from __future__ import annotations

import json

import pytest

from arbiter.cli.scorers import describe_scorer
from arbiter.safety import SAFETY_SCORERS
from arbiter.service.scoring import scorer_registry
from tests.docs.doc_examples import REPO, Example, Outcome, Session, examples

PAGE = REPO / "docs" / "safety.md"
EXAMPLES = examples(PAGE)
ARGUMENT_HEADER = "| argument | type | default | meaning |"


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    """Every example of the page, run once in page order; by ``Example.name``."""
    session = Session(tmp_path_factory.mktemp("home") / ".arbiter")
    return {example.name: session.run(example) for example in EXAMPLES}


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_example_prints_what_the_page_shows(example: Example, outcomes: dict[str, Outcome]) -> None:
    problem = outcomes[example.name].problem(example)
    assert problem is None, problem


@pytest.mark.parametrize(
    "command",
    [
        "redteam selftest",
        "redteam selftest --heldout",
        "redteam selftest --corpus",
        "redteam run --agent python:arbiter.demo.support_agent:answer",
        "redteam run --agent precomputed:",
        "run",
        "agent score",
    ],
)
def test_page_runs_each_command(command: str) -> None:
    assert any(e.kind == "sh" and e.code.startswith(f"arbiter {command}") for e in EXAMPLES)


def _section(name: str) -> str:
    text = PAGE.read_text(encoding="utf-8")
    return text.split(f"\n### `{name}`\n", 1)[1].split("\n### ", 1)[0]


def _argument_rows(name: str) -> list[list[str]]:
    section = _section(name)
    if ARGUMENT_HEADER not in section:
        return []
    table = section.split(ARGUMENT_HEADER + "\n", 1)[1].split("\n\n", 1)[0]
    rows = []
    for line in table.splitlines()[1:]:  # the first is |---|
        cells = [c.strip().replace("\\|", "|") for c in line.strip("|").split(" | ")]
        rows.append([cell.strip("`") for cell in cells[:3]])
    return rows


@pytest.mark.parametrize("name", sorted(SAFETY_SCORERS))
def test_every_safety_scorer_has_a_section_with_its_arguments(name: str) -> None:
    factory = scorer_registry(plugins=False).factory_of(name)
    described = describe_scorer(factory)
    expected = [
        [a["name"], a["type"], "required" if a["required"] else json.dumps(a["default"])]
        for a in described["arguments"]
    ]
    assert _argument_rows(name) == expected
    gating = "yes" if factory.gating else "no"
    assert f"| gating | {gating} |" in _section(name)
