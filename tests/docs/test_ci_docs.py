"""docs/ci.md: its commands print what it shows, its files are the repository's, and its
table of the action's inputs is action.yml's."""

from __future__ import annotations

import re

import pytest
import yaml

from tests.docs.doc_examples import REPO, Block, Example, Outcome, Session, blocks, examples

PAGE = REPO / "docs" / "ci.md"
EXAMPLES = examples(PAGE)
SHOWN_FILES = [b for b in blocks(PAGE) if b.caption]


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    session = Session(tmp_path_factory.mktemp("home") / ".arbiter")
    return {example.name: session.run(example) for example in EXAMPLES}


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_example_prints_what_the_page_shows(example: Example, outcomes: dict[str, Outcome]) -> None:
    problem = outcomes[example.name].problem(example)
    assert problem is None, problem


def test_the_page_runs_the_github_and_gitlab_reports() -> None:
    formats = {m[1] for e in EXAMPLES for m in [re.search(r"--format (\w+)", e.code)] if m}
    assert formats == {"github", "gitlab"}


@pytest.mark.parametrize("block", SHOWN_FILES, ids=lambda block: str(block.caption))
def test_file_shown_on_the_page_is_the_file(block: Block) -> None:
    assert block.caption is not None
    assert block.text == (REPO / block.caption).read_text(encoding="utf-8")


def test_the_inputs_table_is_the_action_s() -> None:
    action = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
    text = PAGE.read_text(encoding="utf-8")
    listed = re.findall(r"^\| `([a-z-]+)` \|", text, flags=re.M)
    assert listed == list(action["inputs"])


def test_the_gitlab_job_reads_a_run_and_writes_the_report_gitlab_reads() -> None:
    job = yaml.safe_load((REPO / "docs/examples/gitlab-ci.yml").read_text(encoding="utf-8"))
    report = job["arbiter"]["artifacts"]["reports"]["codequality"]
    assert any(f"--format gitlab -o {report}" in line for line in job["arbiter"]["script"])
