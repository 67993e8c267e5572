"""Eval files: one TOML file holds a run; every error names file:line and the key."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from arbiter.datasets.tomlio import read_toml_file
from arbiter.errors import InputError
from arbiter.service.eval_file import EvalPlan, load_eval_file
from arbiter.service.scoring import scorer_registry

GOOD = """\
name = "nightly"
tags = {team = "search", env = "ci"}

[dataset]
path = "data.jsonl"
limit = 5

[system]
kind = "python"
target = "tests.helpers.systems:echo_label"

[run]
k = 2
seed = 7
label_map = "binary"

[[scorers]]
name = "label"

[[scorers]]
name = "label"
as = "label_strict"
args = {label_map = {}}
gate = false

[gate]
min_accuracy = 0.9
cohorts = {wire = 0.8}
"""


def _write(folder: Path, text: str, name: str = "eval.toml") -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def _load(path: Path, **kwargs: Any) -> EvalPlan:
    return load_eval_file(
        path,
        registry=scorer_registry(plugins=False),
        timeout=30.0,
        concurrency=16,
        retries=2,
        **kwargs,
    )


def test_a_whole_run_resolves_from_one_file(tmp_path: Path) -> None:
    path = _write(tmp_path, GOOD)
    plan = _load(path)
    assert plan.dataset_path == tmp_path / "data.jsonl"
    assert plan.system == {"kind": "python", "target": "tests.helpers.systems:echo_label"}
    config = plan.config
    assert (config.k, config.seed, config.limit, config.concurrency) == (2, 7, 5, 16)
    assert config.eval_file_hash == hashlib.sha256(path.read_bytes()).hexdigest()
    assert config.label_map == {"low": "low", "*": "high"}
    first, second = plan.scorers
    assert first.args["label_map"] == {"low": "low", "*": "high"}
    assert (second.label, second.gating, second.args["label_map"]) == ("label_strict", False, {})
    assert plan.floors is not None
    assert plan.floors.min_accuracy == 0.9
    assert plan.floors.cohorts == {"wire": 0.8}
    assert (plan.name, plan.tags) == ("nightly", {"team": "search", "env": "ci"})


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        (
            GOOD.replace("limit = 5", "limit = 0"),
            [":6:", "dataset.limit", "greater than or equal to 1"],
        ),
        (GOOD.replace('kind = "python"', 'kind = "ftp"'), [":9:", "system.kind"]),
        (GOOD.replace("seed = 7", "sead = 7"), [":14:", "run.sead", "Extra inputs"]),
        (
            GOOD.replace("args = {label_map = {}}", "args = {label_map = 3}"),
            [":23:", "scorers[1]", "label_map"],
        ),
        (
            GOOD.replace('name = "label"\nas', 'name = "nope"\nas'),
            [":21:", "scorers[1]", "unknown scorer 'nope'"],
        ),
        (GOOD.replace("min_accuracy = 0.9", "min_accuracy = 1.5"), [":27:", "gate.min_accuracy"]),
        (GOOD.replace("[run]", "[run\n"), [":12:", "invalid TOML"]),
        (GOOD.replace("seed = 7", "seed = inf"), [":14:", "not a finite number"]),
        (GOOD.replace('as = "label_strict"\n', ""), [":20:", "second scorer named 'label'"]),
        (
            GOOD.replace("gate = false", "gate = false").replace(
                'name = "label"\n\n', 'name = "label"\ngate = false\n\n'
            ),
            ["no scorer gates"],
        ),
    ],
    ids=[
        "limit",
        "kind",
        "unknown-key",
        "scorer-arg",
        "unknown-scorer",
        "floor",
        "syntax",
        "inf",
        "duplicate",
        "no-gating",
    ],
)
def test_every_error_names_the_line_and_key(
    tmp_path: Path, text: str, fragments: list[str]
) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(InputError) as caught:
        _load(path)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(str(path))
    for fragment in fragments:
        assert fragment in message, message


def test_header_values_come_from_the_environment_never_the_file(tmp_path: Path) -> None:
    text = GOOD.replace(
        'kind = "python"\ntarget = "tests.helpers.systems:echo_label"',
        'kind = "http"\ntarget = "http://127.0.0.1:9/score"\n'
        'headers = {Authorization = "env:TOKEN"}',
    )
    path = _write(tmp_path, text)
    plan = _load(path, environ={"TOKEN": "Bearer s3cret"})
    assert plan.headers == {"Authorization": "Bearer s3cret"}
    assert "s3cret" not in repr(plan.system)
    with pytest.raises(InputError, match=r":11: system.headers.Authorization: TOKEN is not set"):
        _load(path, environ={})
    literal = _write(tmp_path, text.replace('"env:TOKEN"', '"Bearer s3cret"'), "literal.toml")
    with pytest.raises(InputError, match="secrets never go in the file"):
        _load(literal, environ={})


def test_a_python_file_target_is_relative_to_the_eval_file(tmp_path: Path) -> None:
    text = GOOD.replace(
        'target = "tests.helpers.systems:echo_label"', 'target = "app/qa.py:answer"'
    )
    plan = _load(_write(tmp_path, text))
    assert plan.system["target"] == f"{tmp_path / 'app' / 'qa.py'}:answer"


def test_the_line_index_covers_tables_array_entries_and_inline_keys(tmp_path: Path) -> None:
    document = read_toml_file(_write(tmp_path, GOOD))
    assert document.line_of(("dataset",)) == 4
    assert document.line_of(("dataset", "path")) == 5
    assert document.line_of(("scorers", 0)) == 17
    assert document.line_of(("scorers", 1, "name")) == 21
    assert document.line_of(("scorers", 1, "args", "label_map")) == 23
    assert document.line_of(("gate", "cohorts", "wire")) == 28
    assert document.line_of(("scorers", 1, "args", "nothing", "deeper")) == 23
    assert document.line_of(("absent",)) is None


def test_continuation_lines_of_multi_line_values_are_not_read_as_keys(tmp_path: Path) -> None:
    text = 'a = """\nb = 1\n"""\nlist = [\n  "c = 2",\n]\n[t]\nd = 3\n'
    document = read_toml_file(_write(tmp_path, text))
    assert document.data == {"a": "b = 1\n", "list": ["c = 2"], "t": {"d": 3}}
    assert ("b",) not in document.lines
    assert document.line_of(("t", "d")) == 8


def test_a_scorer_without_gate_keeps_its_own_default_and_gate_true_promotes_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "data.jsonl").write_text(
        '{"id": "a", "input": {"question": "q"}, "expected_label": "low"}\n', encoding="utf-8"
    )
    text = GOOD.replace(
        '[[scorers]]\nname = "label"\nas = "label_strict"',
        '[[scorers]]\nname = "content_safety"\nargs = {judges = ["mock"]}\n\n'
        '[[scorers]]\nname = "content_safety"\nas = "safety_gating"\n'
        'args = {judges = ["mock"]}\ngate = true\n\n'
        '[[scorers]]\nname = "label"\nas = "label_strict"',
    )
    plan = _load(_write(tmp_path, text))
    gating = {spec.label: spec.gating for spec in plan.scorers}
    assert gating["label"] is True  # a deterministic scorer gates by default
    assert gating["content_safety"] is False  # a judge does not, until promoted
    assert gating["safety_gating"] is True
    assert gating["label_strict"] is False
