"""Paths in a scorer's arguments are relative to the eval file, as ``dataset.path`` is.

Which arguments are paths is read from the factory's types (a ``FileArgument``), so the
built-ins' ``rubric_file``, ``json_schema_file`` and jury ``roster`` and a plugin's own
file argument are resolved by one rule.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from arbiter.contract import Score
from arbiter.errors import InputError
from arbiter.jury.scorer import Roster
from arbiter.scoring.base import ScoreFunction, scorer
from arbiter.scoring.files import TextFile, file_arguments, names_a_file
from arbiter.scoring.registry import ScorerRegistry
from arbiter.scoring.rubric import RubricFile
from arbiter.scoring.structured import JsonSchemaFile
from arbiter.service.eval_file import EvalPlan, load_eval_file
from arbiter.service.scoring import scorer_registry

SCHEMA = {"type": "object", "required": ["city"]}
ROSTER = [{"name": "only", "lens": "factual"}]

EVAL = """\
[dataset]
path = "data.jsonl"

[system]
kind = "precomputed"

[[scorers]]
name = "rubric"
args = {rubric_file = "rubric.md"}

[[scorers]]
name = "json"
args = {json_schema_file = "schemas/city.schema.json"}

[[scorers]]
name = "jury"
args = {roster = "roster.json"}
"""


@scorer(name="glossary")
def glossary(*, terms: TextFile, note: str = "terms.txt") -> ScoreFunction:
    """A plugin-style scorer with a file argument of its own (and a text that is no path)."""
    words = set(terms["text"].split())
    return lambda example, output: Score(passed=(output.answer_text or "") in words)


@pytest.fixture
def evals(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder holding an eval file and its files; the test runs from another folder."""
    folder = tmp_path / "evals"
    (folder / "schemas").mkdir(parents=True)
    (folder / "data.jsonl").write_text('{"id": "a", "input": {}, "output": "Paris"}\n')
    (folder / "rubric.md").write_text("Names the capital.", encoding="utf-8")
    (folder / "schemas" / "city.schema.json").write_text(json.dumps(SCHEMA), encoding="utf-8")
    (folder / "roster.json").write_text(json.dumps(ROSTER), encoding="utf-8")
    (folder / "terms.txt").write_text("Paris Lyon", encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    return folder


def _load(path: Path, registry: ScorerRegistry | None = None) -> EvalPlan:
    return load_eval_file(
        path,
        registry=registry or scorer_registry(plugins=False),
        timeout=30.0,
        concurrency=16,
        retries=2,
    )


def test_file_arguments_of_scorers_are_read_relative_to_the_eval_file(evals: Path) -> None:
    path = evals / "eval.toml"
    path.write_text(EVAL, encoding="utf-8")
    rubric, schema, jury = (spec.args for spec in _load(path).scorers)
    assert rubric["rubric_file"]["path"] == str(evals / "rubric.md")
    assert rubric["rubric_file"]["text"] == "Names the capital."
    assert schema["json_schema_file"]["path"] == str(evals / "schemas" / "city.schema.json")
    assert schema["json_schema_file"]["schema"] == SCHEMA
    assert [critic["name"] for critic in jury["roster"]] == ["only"]


def test_an_absolute_path_and_an_inline_roster_are_taken_as_given(evals: Path) -> None:
    rubric = evals / "rubric.md"
    path = evals / "eval.toml"
    path.write_text(
        EVAL.replace('"rubric.md"', json.dumps(str(rubric))).replace(
            'roster = "roster.json"', 'roster = [{name = "inline", lens = "factual"}]'
        ),
        encoding="utf-8",
    )
    rubric_args, _, jury = (spec.args for spec in _load(path).scorers)
    assert rubric_args["rubric_file"]["path"] == str(rubric)
    assert [critic["name"] for critic in jury["roster"]] == ["inline"]


def test_a_plugins_own_file_argument_is_resolved_by_its_type_not_its_name(evals: Path) -> None:
    registry = scorer_registry(plugins=False)
    registry.register_scorer(glossary)
    path = evals / "eval.toml"
    path.write_text(
        '[dataset]\npath = "data.jsonl"\n[system]\nkind = "precomputed"\n'
        '[[scorers]]\nname = "glossary"\nargs = {terms = "terms.txt", note = "terms.txt"}\n',
        encoding="utf-8",
    )
    (spec,) = _load(path, registry).scorers
    assert spec.args["terms"]["path"] == str(evals / "terms.txt")
    assert spec.args["terms"]["text"] == "Paris Lyon"
    assert spec.args["note"] == "terms.txt"  # a plain text that happens to look like a path


def test_a_missing_file_names_the_entry_and_the_path_it_was_looked_for_at(evals: Path) -> None:
    path = evals / "eval.toml"
    path.write_text(EVAL.replace("rubric.md", "missing.md"), encoding="utf-8")
    with pytest.raises(InputError) as raised:
        _load(path)
    assert str(raised.value) == (
        f"{path}:9: scorers[0]: scorer 'rubric': argument 'rubric_file': "
        f"{evals / 'missing.md'}: no such file"
    )


@pytest.mark.parametrize(
    ("hint", "names"),
    [
        (RubricFile, True),
        (RubricFile | None, True),
        (Roster | None, True),
        (JsonSchemaFile | None, True),
        (TextFile, True),
        (str, False),
        (str | None, False),
        (list[str] | None, False),
        (dict[str, Any], False),
        (Path, False),  # a Path would be stored as a name only: it is no file argument
    ],
)
def test_a_file_argument_is_known_by_its_type(hint: object, names: bool) -> None:
    assert names_a_file(hint) is names


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("rubric", {"rubric_file"}),
        ("json", {"json_schema_file"}),
        ("jury", {"roster"}),
        ("casefold", set()),
        ("regex", set()),
    ],
)
def test_the_file_arguments_of_the_builtin_scorers(name: str, arguments: set[str]) -> None:
    assert file_arguments(scorer_registry(plugins=False).factory_of(name)) == arguments


def test_a_text_file_argument_is_stored_as_its_text_and_refused_when_tampered(
    tmp_path: Path,
) -> None:
    path = tmp_path / "terms.txt"
    path.write_text("Paris", encoding="utf-8")
    built = glossary(terms=str(path))
    stored = built.spec.args["terms"]
    assert (stored["path"], stored["text"]) == (str(path), "Paris")
    path.unlink()
    assert glossary(**built.spec.args).spec == built.spec  # rebuilt without the file
    with pytest.raises(InputError, match="the stored text does not match its sha256"):
        glossary(terms={**stored, "text": "Rome"})
