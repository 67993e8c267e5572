"""docs/scorers.md and docs/eval-files.md: every example runs and prints what the page shows.

Each page's examples run in order in one private Arbiter home (see ``doc_examples``). The
examples of "Writing your own scorer" run with the page's plugin installed: a
distribution whose entry points are the page's own ``pyproject.toml`` snippet, so the
snippet is tested as well as the scorers it names.
"""

from __future__ import annotations

import json
import re
import shutil
import tomllib
from pathlib import Path

import pytest

from arbiter.cli.scorers import describe_scorer
from arbiter.config import read_price_table
from arbiter.safety import SAFETY_SCORERS
from arbiter.scoring.base import ScorerFactory
from arbiter.service.scoring import scorer_registry
from arbiter.trajectories.scorers import TRAJECTORY_SCORERS
from tests.docs.doc_examples import REPO, Block, Example, Outcome, Session, blocks, examples

SCORERS_PAGE = REPO / "docs" / "scorers.md"
EVAL_FILES_PAGE = REPO / "docs" / "eval-files.md"
PAGES = (SCORERS_PAGE, EVAL_FILES_PAGE)
OWN_SCORER_CHAPTER = "Writing your own scorer"
EXAMPLE_MODULES = REPO / "docs" / "examples" / "scorers"
ENTRY_POINT_GROUP = "arbiter.scorers"

EXAMPLES = [example for page in PAGES for example in examples(page)]
REGISTERED = scorer_registry(plugins=False).names()
BUILTINS = [name for name in REGISTERED if name not in {*TRAJECTORY_SCORERS, *SAFETY_SCORERS}]
"""The scorers scorers.md documents; the trajectory scorers have docs/trajectory-scorers.md
(tests/docs/test_trajectory_scorer_docs.py), the safety scorers docs/safety.md
(tests/docs/test_safety_docs.py)."""


def _page_entry_points() -> dict[str, str]:
    """The ``[project.entry-points."arbiter.scorers"]`` table of scorers.md's snippet."""
    for block in blocks(SCORERS_PAGE):
        if block.language == "toml" and ENTRY_POINT_GROUP in block.text:
            table = tomllib.loads(block.text)["project"]["entry-points"][ENTRY_POINT_GROUP]
            return {str(name): str(target) for name, target in table.items()}
    raise AssertionError("scorers.md shows no entry-point table for arbiter.scorers")


def _install_plugin(folder: Path) -> Path:
    """A distribution in ``folder`` publishing the page's entry points; the path to add."""
    info = folder / "arbiter_doc_scorers-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: arbiter-doc-scorers\nVersion: 1.0\n", encoding="utf-8"
    )
    lines = [f"{name} = {target}" for name, target in _page_entry_points().items()]
    (info / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\n" + "\n".join(lines) + "\n", encoding="utf-8"
    )
    return folder


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    """Every example of both pages, run once in page order; by ``Example.name``."""
    plugin = _install_plugin(tmp_path_factory.mktemp("plugin"))
    results: dict[str, Outcome] = {}
    for page in PAGES:
        session = Session(tmp_path_factory.mktemp("home") / ".arbiter", [EXAMPLE_MODULES])
        for example in examples(page):
            own = example.chapter == OWN_SCORER_CHAPTER
            session.python_path = [EXAMPLE_MODULES, plugin] if own else [EXAMPLE_MODULES]
            results[example.name] = session.run(example)
    return results


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_example_prints_what_the_page_shows(example: Example, outcomes: dict[str, Outcome]) -> None:
    if "| jq " in example.code and shutil.which("jq") is None:
        pytest.skip("jq is not installed")
    problem = outcomes[example.name].problem(example, shown_required=False)
    assert problem is None, problem


def test_both_pages_have_examples_with_shown_output() -> None:
    for page in PAGES:
        shown = [e for e in examples(page) if e.shown]
        assert len(shown) >= 5, page.name


@pytest.mark.parametrize("name", BUILTINS)
def test_every_builtin_scorer_has_a_section(name: str) -> None:
    headings = SCORERS_PAGE.read_text(encoding="utf-8").splitlines()
    assert f"### `{name}`" in headings


ARGUMENT_HEADER = "| argument | type | default | meaning |"


def _argument_table(name: str) -> list[list[str]]:
    """The rows (argument, type, default) of a scorer section's argument table."""
    text = SCORERS_PAGE.read_text(encoding="utf-8")
    section = text.split(f"### `{name}`\n", 1)[1].split("\n### ", 1)[0]
    if ARGUMENT_HEADER not in section:
        return []
    table = section.split(ARGUMENT_HEADER + "\n", 1)[1].split("\n\n", 1)[0]
    rows = []
    for line in table.splitlines()[1:]:  # the first is |---|
        cells = [c.strip().replace("\\|", "|") for c in line.strip("|").split(" | ")]
        rows.append([cell.strip("`") for cell in cells[:3]])
    return rows


@pytest.mark.parametrize("name", BUILTINS)
def test_argument_table_matches_the_factory(name: str) -> None:
    described = describe_scorer(scorer_registry(plugins=False).factory_of(name))
    expected = [
        [
            argument["name"],
            argument["type"],
            "required" if argument["required"] else json.dumps(argument["default"]),
        ]
        for argument in described["arguments"]
    ]
    assert _argument_table(name) == expected


@pytest.mark.parametrize(
    "block",
    [b for page in PAGES for b in blocks(page) if b.caption],
    ids=lambda block: str(block.caption),
)
def test_file_shown_on_a_page_is_the_file(block: Block) -> None:
    assert block.caption is not None
    assert block.text == (REPO / block.caption).read_text(encoding="utf-8")


def test_price_table_of_the_page_reads_as_one() -> None:
    prices = read_price_table(EXAMPLE_MODULES / "prices.toml")
    assert prices == {"gpt-4o-mini": (0.15, 0.60), "claude-3-5-haiku-latest": (0.80, 4.00)}


def test_entry_points_of_the_page_name_scorers_by_their_own_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLE_MODULES))
    entry_points = _page_entry_points()
    assert entry_points
    for name, target in entry_points.items():
        module, _, attribute = target.partition(":")
        factory = getattr(__import__(module), attribute)
        assert isinstance(factory, ScorerFactory)
        assert factory.name == name  # the page's advice: one name in Python and in runs
        assert name not in REGISTERED  # a plugin never replaces a built-in


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lowercased, punctuation dropped, - for spaces."""
    lines = page.read_text(encoding="utf-8").splitlines()
    headings = [line.lstrip("#").strip() for line in lines if line.startswith("#")]
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_links_of_the_page_lead_to_files_and_headings(page: Path) -> None:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if target.startswith("http"):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.exists(), target
        if anchor:
            assert anchor in _anchors(linked), target
