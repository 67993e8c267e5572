"""docs/agents.md: every command runs and prints what the page shows; shown files are real.

The page's examples run in order in one private Arbiter home (see ``doc_examples``), so
the resume example continues the run the example before it stored. When the output
changes on purpose: ``python -m tests.docs.refresh_pages docs/agents.md``.
"""

from __future__ import annotations

import pytest

from tests.docs.doc_examples import REPO, Block, Example, Outcome, Session, blocks, examples

PAGE = REPO / "docs" / "agents.md"
EXAMPLES = examples(PAGE)
SHOWN_FILES = [block for block in blocks(PAGE) if block.caption]
COMMANDS = ("agent score", "agent run", "agent mine", "agent diff")


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
def test_page_runs_each_agent_command(command: str) -> None:
    assert any(e.kind == "sh" and e.code.startswith(f"arbiter {command}") for e in EXAMPLES)


@pytest.mark.parametrize("block", SHOWN_FILES, ids=lambda block: str(block.caption))
def test_file_shown_on_the_page_is_the_file(block: Block) -> None:
    assert block.caption is not None
    assert block.text == (REPO / block.caption).read_text(encoding="utf-8")


def _formats_table() -> dict[str, str]:
    """The rows of the page's formats table: ``--format`` value -> what it reads."""
    rows: dict[str, str] = {}
    lines = PAGE.read_text(encoding="utf-8").splitlines()
    start = lines.index("| `--format` | what it reads |")
    for line in lines[start + 2 :]:
        if not line.startswith("| `"):
            break
        name, summary = line[2:-2].split(" | ", 1)
        rows[name.strip("`")] = summary
    return rows


def test_the_formats_table_is_the_registry_of_trajectory_formats() -> None:
    from arbiter.trajectories.formats import TrajectoryFormatRegistry

    registered = TrajectoryFormatRegistry.default(plugins=False).formats()
    assert _formats_table() == {f.name: f.summary for f in registered}
