"""docs/trajectory-scorers.md: a true section per trajectory scorer; the examples run.

Each scorer's section states its metadata in a ``| field | value |`` table; these tests
read it back and compare it with the factory (moment, dimension, applies to, gating),
with ``defaults.toml`` (the threshold's default cut points) and with the scorer's code
(the threshold key and the assertion keys it names), so the page cannot drift from the
scorers. When the examples' output changes on purpose:
``python -m tests.docs.refresh_pages docs/trajectory-scorers.md``.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import re
import tomllib
from pathlib import Path

import pytest

from arbiter.cli.scorers import describe_scorer
from arbiter.scoring.base import ScorerFactory
from arbiter.service.scoring import scorer_registry
from arbiter.trajectories.scorers import TRAJECTORY_SCORERS
from tests.docs.doc_examples import REPO, Block, Example, Outcome, Session, blocks, examples

PAGE = REPO / "docs" / "trajectory-scorers.md"
DEFAULTS = REPO / "src" / "arbiter" / "trajectories" / "data" / "defaults.toml"
EXAMPLES = examples(PAGE)
NAMES = sorted(TRAJECTORY_SCORERS)
CHAPTERS = {
    "Plan": "plan",
    "Retrieve": "retrieve",
    "Act": "act",
    "Compose": "compose",
    "Deliver": "deliver",
    "The run": "run",
}
FLOW_CHAPTER = "Flows"
FIELDS = ("moment", "dimension", "applies to", "gating", "assertions", "threshold", "abstains")
ARGUMENT_HEADER = "| argument | type | default | meaning |"
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def _factory(name: str) -> ScorerFactory:
    return scorer_registry(plugins=False).factory_of(name)


def _defaults() -> dict[str, dict[str, float]]:
    table = tomllib.loads(DEFAULTS.read_text(encoding="utf-8"))["thresholds"]
    return {key: {k: float(v) for k, v in entry.items()} for key, entry in table.items()}


def _text() -> str:
    return PAGE.read_text(encoding="utf-8")


def _section(name: str) -> str:
    """The text of a scorer's ``###`` section, up to the next heading."""
    after = _text().split(f"\n### `{name}`\n", 1)[1]
    return re.split(r"\n#{2,3} ", after, maxsplit=1)[0]


def _chapter_of(name: str) -> str:
    """The ``##`` heading a scorer's section sits under."""
    before = _text().split(f"\n### `{name}`\n", 1)[0]
    chapters: list[str] = re.findall(r"^## (.+)$", before, flags=re.M)
    return chapters[-1].strip()


def _fields(name: str) -> dict[str, str]:
    """The section's ``| field | value |`` table, field to its text."""
    section = _section(name)
    assert "| field | value |" in section, f"{name}: no field table"
    table = section.split("| field | value |\n|---|---|\n", 1)[1].split("\n\n", 1)[0]
    rows = {}
    for line in table.splitlines():
        field, value = (cell.strip() for cell in line.strip().strip("|").split(" | ", 1))
        rows[field] = value
    return rows


def _ticked(text: str) -> list[str]:
    return re.findall(r"`([^`]+)`", text)


def _scorers_source() -> str:
    """The code of the trajectory scorers' package (a key may live in a shared module)."""
    folder = Path(inspect.getfile(importlib.import_module("arbiter.trajectories.scorers"))).parent
    return "".join(path.read_text(encoding="utf-8") for path in sorted(folder.glob("*.py")))


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    """Every example of the page, run once in page order; by ``Example.name``."""
    session = Session(tmp_path_factory.mktemp("home") / ".arbiter")
    return {example.name: session.run(example) for example in EXAMPLES}


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_example_prints_what_the_page_shows(example: Example, outcomes: dict[str, Outcome]) -> None:
    problem = outcomes[example.name].problem(example)
    assert problem is None, problem


def test_page_scores_with_agent_score() -> None:
    assert any(e.kind == "sh" and e.code.startswith("arbiter agent score") for e in EXAMPLES)


@pytest.mark.parametrize(
    "block", [b for b in blocks(PAGE) if b.caption], ids=lambda block: str(block.caption)
)
def test_file_shown_on_the_page_is_the_file(block: Block) -> None:
    assert block.caption is not None
    assert block.text == (REPO / block.caption).read_text(encoding="utf-8")


def test_the_page_has_a_section_for_each_trajectory_scorer_and_no_other() -> None:
    sections = re.findall(r"^### `([^`]+)`$", _text(), flags=re.M)
    assert sorted(sections) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_section_states_every_field(name: str) -> None:
    assert tuple(_fields(name)) == FIELDS


@pytest.mark.parametrize("name", NAMES)
def test_section_sits_under_the_chapter_of_its_moment(name: str) -> None:
    factory = _factory(name)
    chapter = _chapter_of(name)
    if factory.applies_to == {"flow"}:
        assert chapter == FLOW_CHAPTER
    else:
        assert CHAPTERS.get(chapter) == factory.moment


@pytest.mark.parametrize("name", NAMES)
def test_section_metadata_is_the_factorys(name: str) -> None:
    factory = _factory(name)
    fields = _fields(name)
    assert fields["moment"] == f"`{factory.moment}`"
    assert fields["dimension"] == f"`{factory.dimension}`"
    assert fields["gating"] == ("yes" if factory.gating else "no")
    applies_to = fields["applies to"]
    if applies_to == "every class but `flow`":
        assert factory.applies_to == frozenset()
    else:
        assert frozenset(_ticked(applies_to)) == factory.applies_to


def _threshold(name: str) -> tuple[str | None, str]:
    """The section's threshold key (None for none) and the text after it."""
    text = _fields(name)["threshold"]
    if text == "none":
        return None, ""
    found = re.match(r"^`([a-z0-9_]+)` \((lower|higher) is better\): (.+)$", text)
    assert found, f"{name}: threshold row {text!r}"
    return found[1], f"{found[2]}: {found[3]}"


@pytest.mark.parametrize("name", NAMES)
def test_threshold_key_and_direction_are_the_scorers(name: str) -> None:
    key, _ = _threshold(name)
    docstring = inspect.getdoc(_factory(name)) or ""
    if key is None:
        assert "banded" not in docstring
        return
    assert f"``{key}``" in docstring  # the factory names the key it bands by
    assert key.startswith("max_") or key.startswith("min_")
    direction = "lower" if key.startswith("max_") else "higher"
    assert _fields(name)["threshold"].startswith(f"`{key}` ({direction} is better)")


@pytest.mark.parametrize("name", NAMES)
def test_threshold_defaults_are_those_of_the_defaults_file(name: str) -> None:
    key, rest = _threshold(name)
    if key is None:
        return
    defaults = _defaults()
    if key not in defaults:
        assert "no default" in rest, f"{key} has no default in defaults.toml"
        return
    higher = key.startswith("min_")
    healthy = re.search(r"healthy (?:up to|from) ([0-9.]+)", rest)
    danger = re.search(r"danger (?:above|below) ([0-9.]+)", rest)
    assert healthy, f"{name}: {rest!r}"
    assert danger, f"{name}: {rest!r}"
    assert ("from" in healthy[0]) is higher  # from 0.8: higher is better
    assert ("below" in danger[0]) is higher
    assert {"healthy": float(healthy[1]), "danger": float(danger[1])} == defaults[key]


def _example_scores() -> list[tuple[str, object]]:
    """(scorer, the threshold key its score was banded by) over the page's example runs."""
    from arbiter.service.agents import score_runs, trajectory_scorers
    from arbiter.trajectories import load_cases, load_runs

    folder = REPO / "docs" / "examples" / "agents"
    runs = load_runs([folder / "orders-turns.jsonl"], mapping="uderia_turn")
    cases = {case.id: case for case in load_cases(folder / "orders-cases.jsonl")}
    scorers = trajectory_scorers(NAMES, runs=runs, cases=cases)
    scored = asyncio.run(score_runs(runs, scorers, cases=cases))
    return [
        (score.name, score.metadata.get("threshold_key"))
        for run in scored
        for score in run.scores
        if score.value is not None
    ]


def test_threshold_keys_are_those_the_scores_are_banded_by() -> None:
    banded = {name: key for name, key in _example_scores() if key is not None}
    assert len(banded) >= 15  # the example exercises most banded scorers
    for name, key in banded.items():
        assert _threshold(name)[0] == key, name


def test_defaults_table_is_the_defaults_file() -> None:
    intro = _text().split("| key | healthy | danger |\n|---|---|---|\n", 1)[1].split("\n\n")[0]
    shown = {}
    for line in intro.splitlines():
        key, healthy, danger = (cell.strip() for cell in line.strip().strip("|").split("|"))
        shown[key.strip("`")] = {"healthy": float(healthy), "danger": float(danger)}
    assert shown == _defaults()


def test_internal_tools_are_shipped_empty_as_the_page_says() -> None:
    assert "`internal_tools` list of `defaults.toml` (empty as shipped)" in _text()
    assert tomllib.loads(DEFAULTS.read_text(encoding="utf-8"))["internal_tools"] == []


@pytest.mark.parametrize("name", NAMES)
def test_assertion_keys_named_are_read_by_the_scorer(name: str) -> None:
    keys = [k for k in _ticked(_fields(name)["assertions"]) if _NAME.match(k)]
    source = _scorers_source()
    for key in keys:
        assert f'"{key}"' in source, f"no trajectory scorer reads {key!r}"


def _argument_table(name: str) -> list[list[str]]:
    """The rows (argument, type, default) of a section's argument table."""
    section = _section(name)
    if ARGUMENT_HEADER not in section:
        return []
    table = section.split(ARGUMENT_HEADER + "\n", 1)[1].split("\n\n", 1)[0]
    rows = []
    for line in table.splitlines()[1:]:  # the first is |---|
        cells = [c.strip().replace("\\|", "|") for c in line.strip("|").split(" | ")]
        rows.append([cell.strip("`") for cell in cells[:3]])
    return rows


@pytest.mark.parametrize("name", NAMES)
def test_argument_table_matches_the_factory(name: str) -> None:
    described = describe_scorer(_factory(name))
    expected = [
        [
            argument["name"],
            argument["type"],
            "required" if argument["required"] else json.dumps(argument["default"]),
        ]
        for argument in described["arguments"]
    ]
    assert _argument_table(name) == expected


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lowercased, punctuation dropped, - for spaces."""
    lines = page.read_text(encoding="utf-8").splitlines()
    headings = [line.lstrip("#").strip() for line in lines if line.startswith("#")]
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


def test_links_of_the_page_lead_to_files_and_headings() -> None:
    text = re.sub(r"```.*?```", "", _text(), flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if target.startswith("http"):
            continue
        path, _, anchor = target.partition("#")
        linked = (PAGE.parent / path).resolve() if path else PAGE
        assert linked.exists(), target
        if anchor:
            assert anchor in _anchors(linked), target
