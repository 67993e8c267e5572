"""``arbiter diff`` over real runs: the outcome and each scorer compared, flips both ways
with the answers of each side, abstentions apart, McNemar's p, warnings on scorers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from scipy.stats import binomtest

from arbiter.contract import PairResult, Report
from arbiter.demo.qa import answer, answer_v2
from arbiter.harness.diff import FLIP_TEXT_CHARS
from arbiter.store import Store
from tests.helpers.text_systems import QUIZ, write_quiz

QA_DATASET = Path(__file__).parents[2] / "src" / "arbiter" / "demo" / "data" / "qa.jsonl"

HOSTILE = "rome\x1b[2J [red]not markup[/red]"
LONG = "Paris, " + "which is lovely in spring, " * 40

_ANSWERS_V2 = {
    "Capital of France?": LONG,  # was right: now rambles (broken by casefold and f1)
    "Capital of Italy?": HOSTILE,  # was right but for case: now carries escapes
    "Capital of Spain?": "Madrid",  # was a sentence: fixed for casefold
    "Capital of Japan?": "Tokyo",  # was wrong: fixed for every scorer
    "Tallest mountain?": "Everest",  # unchanged
    "Say something.": "Hello.",  # no reference: casefold abstains in both runs
}


def quiz_v2(input: dict[str, Any]) -> str:
    """The next version of ``tests.helpers.text_systems:quiz``: fixes two, breaks two."""
    return _ANSWERS_V2[input["question"]]


def _run(cli: Any, dataset: Path, target: str, *scorers: str) -> str:
    options = [arg for name in scorers for arg in ("--scorer", name)]
    result = cli(
        "run", "--dataset", str(dataset), "--target", target, *options, "--quiet", "--json"
    )
    assert result.code == 0, result.err
    run_id = Report.model_validate_json(result.out).run_id
    assert run_id
    return run_id


def _diff(cli: Any, a: str, b: str) -> dict[str, Any]:
    result = cli("diff", a, b, "--json")
    assert result.code == 0, result.err
    found: dict[str, Any] = json.loads(result.out)
    return found


def _passed(results: list[PairResult], name: str) -> set[str]:
    """Examples the scorer passed (k = 1), read straight from the stored results."""
    return {r.example_id for r in results if (score := r.score(name)) and score.passed}


def _scorer(diff: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(s for s in diff["scorers"] if s["name"] == name)
    return found


@pytest.fixture
def qa_runs(cli: Any) -> tuple[str, str]:
    """The QA demo's two versions, scored by casefold and f1_tokens."""
    scorers = ("casefold", "f1_tokens")
    return (
        _run(cli, QA_DATASET, "arbiter.demo.qa:answer", *scorers),
        _run(cli, QA_DATASET, "arbiter.demo.qa:answer_v2", *scorers),
    )


@pytest.fixture
def quiz_runs(cli: Any, tmp_path: Path) -> tuple[str, str]:
    """The quiz answered by its two versions, scored by casefold and f1_tokens."""
    dataset = write_quiz(tmp_path / "quiz.jsonl")
    scorers = ("casefold", "f1_tokens")
    return (
        _run(cli, dataset, "tests.helpers.text_systems:quiz", *scorers),
        _run(cli, dataset, "tests.cli.test_diff_cli:quiz_v2", *scorers),
    )


def test_qa_demo_flips_both_ways_for_every_scorer(
    cli: Any, tmp_path: Path, qa_runs: tuple[str, str]
) -> None:
    diff = _diff(cli, *qa_runs)
    assert [s["name"] for s in diff["scorers"]] == ["casefold", "f1_tokens"]
    assert diff["warnings"] == []
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        results = [store.results(run_id) for run_id in qa_runs]
    finally:
        store.close()
    for name in ("casefold", "f1_tokens"):
        passed_a, passed_b = (_passed(run, name) for run in results)
        section = _scorer(diff, name)
        assert {f["example_id"] for f in section["broken"]} == passed_a - passed_b
        assert {f["example_id"] for f in section["fixed"]} == passed_b - passed_a
        assert section["broken"]
        assert section["fixed"]
        assert section["abstained"] == []
        assert section["n_paired"] == 200


def test_qa_demo_flips_show_each_version_answer(cli: Any, qa_runs: tuple[str, str]) -> None:
    questions = {row["id"]: row for row in map(json.loads, QA_DATASET.read_text().splitlines())}
    section = _scorer(_diff(cli, *qa_runs), "f1_tokens")
    for flip in section["broken"] + section["fixed"]:
        row = questions[flip["example_id"]]
        assert flip["answer_a"] == answer(row["input"])
        assert flip["answer_b"] == answer_v2(row["input"])
        assert flip["expected"] == row["expected"]
        assert flip["reason"].startswith("token F1 ")


def test_mcnemar_p_matches_scipy_binomial_test_on_the_discordant_counts(
    cli: Any, qa_runs: tuple[str, str]
) -> None:
    diff = _diff(cli, *qa_runs)
    for view in (diff, *diff["scorers"]):
        broken, fixed = len(view["broken"]), len(view["fixed"])
        expected = binomtest(broken, broken + fixed, 0.5, alternative="two-sided").pvalue
        assert view["mcnemar_p"] == pytest.approx(expected, rel=1e-12)


def test_qa_demo_pass_rates_match_each_run_report(cli: Any, qa_runs: tuple[str, str]) -> None:
    diff = _diff(cli, *qa_runs)
    reports = [
        Report.model_validate_json(cli("report", run_id, "--format", "json").out)
        for run_id in qa_runs
    ]
    for name in ("casefold", "f1_tokens"):
        rate = next(d for d in _scorer(diff, name)["deltas"] if d["name"] == "pass rate")
        shown = [report.sections[name].pass_rate for report in reports]
        assert shown[0] is not None
        assert shown[1] is not None
        assert (rate["a"], rate["b"]) == (shown[0].estimate, shown[1].estimate)
        assert rate["low"] <= rate["delta"] <= rate["high"]
    accuracy = next(d for d in diff["deltas"] if d["name"] == "accuracy")
    assert (accuracy["a"], accuracy["b"]) == tuple(r.accuracy.estimate for r in reports)
    f1_mean = next(d for d in _scorer(diff, "f1_tokens")["deltas"] if d["name"] == "mean value")
    f1_value = reports[0].sections["f1_tokens"].value
    assert f1_value is not None
    assert f1_mean["a"] == pytest.approx(f1_value.estimate)


def test_text_diff_has_a_row_and_flip_tables_per_scorer(cli: Any, qa_runs: tuple[str, str]) -> None:
    result = cli("diff", *qa_runs)
    assert result.code == 0, result.err
    for title in (
        "broken (right in A, wrong in B)",
        "casefold: broken (right in A, wrong in B)",
        "casefold: fixed (wrong in A, right in B)",
        "f1_tokens: broken (right in A, wrong in B)",
        "f1_tokens: fixed (wrong in A, right in B)",
    ):
        assert title in result.out
    assert "flips per view (p: exact McNemar test of broken against fixed)" in result.out
    assert "│ f1_tokens │     13 │    22 │         132 │          33 │         0 │  0.18 │" in (
        result.out
    )
    assert "│ f1_tokens │ pass rate  │ 200 │ 72.5% │ 77.0% │ +4.5 pts │" in result.out
    assert "The answer is Jane Austen." in result.out  # a free-text answer, not a label


def test_an_abstention_is_counted_apart_not_as_a_flip(cli: Any, quiz_runs: tuple[str, str]) -> None:
    diff = _diff(cli, *quiz_runs)
    casefold = _scorer(diff, "casefold")
    assert casefold["abstained"] == ["q6"]  # q6 has no reference in either run
    assert casefold["n_paired"] == 5
    assert [f["example_id"] for f in casefold["broken"]] == ["q1", "q2"]
    assert [f["example_id"] for f in casefold["fixed"]] == ["q3", "q4"]
    f1 = _scorer(diff, "f1_tokens")
    assert [f["example_id"] for f in f1["fixed"]] == ["q4"]


def test_flips_of_free_text_are_clipped_in_json(cli: Any, quiz_runs: tuple[str, str]) -> None:
    broken = _scorer(_diff(cli, *quiz_runs), "casefold")["broken"]
    long = next(f for f in broken if f["example_id"] == "q1")
    assert long["answer_a"] == "Paris"
    assert len(long["answer_b"]) == FLIP_TEXT_CHARS
    assert LONG.startswith(long["answer_b"][:-1])
    hostile = next(f for f in broken if f["example_id"] == "q2")
    assert hostile["answer_b"] == HOSTILE  # JSON carries it as it came; it is data


def test_hostile_answers_print_inertly(cli: Any, quiz_runs: tuple[str, str]) -> None:
    result = cli("diff", *quiz_runs, "--limit", "0")
    assert result.code == 0, result.err
    assert "\x1b" not in result.out
    assert "rome\\x1b[2J [red]not markup[/red]" in result.out
    assert LONG[:60] in result.out
    assert LONG not in result.out  # clipped in its cell


def test_limit_caps_the_rows_of_each_flip_table(cli: Any, qa_runs: tuple[str, str]) -> None:
    capped = cli("diff", *qa_runs, "--limit", "2")
    assert capped.code == 0, capped.err
    assert "… and 13 more (--limit 0 or --json for all)" in capped.out  # outcome: 15 broken
    every = cli("diff", *qa_runs, "--limit", "0")
    assert "more (--limit 0" not in every.out


@pytest.mark.parametrize(
    ("scorers_b", "warning"),
    [
        (
            ("casefold", "f1_tokens:threshold=0.9"),
            "warning: scorer 'f1_tokens' differs between the runs (threshold 0.5 vs 0.9): "
            "its figures mean different things",
        ),
        (
            ("casefold", "f1_tokens", "normalized"),
            "warning: scorer 'normalized' is only in run B: not compared",
        ),
        (
            ("casefold",),
            "warning: the runs gate on different scorers (casefold, f1_tokens vs casefold)",
        ),
    ],
)
def test_diff_warns_when_the_scorers_differ(
    cli: Any, tmp_path: Path, scorers_b: tuple[str, ...], warning: str
) -> None:
    dataset = write_quiz(tmp_path / "quiz.jsonl")
    target = "tests.helpers.text_systems:quiz"
    a = _run(cli, dataset, target, "casefold", "f1_tokens")
    b = _run(cli, dataset, target, *scorers_b)
    result = cli("diff", a, b)
    assert result.code == 0, result.err
    assert warning in result.err
    assert json.loads(cli("diff", a, b, "--json").out)["warnings"] == [
        line.removeprefix("warning: ") for line in result.err.splitlines()
    ]


def test_a_run_scored_by_label_alone_shows_its_flips_once(cli: Any, tmp_path: Path) -> None:
    dataset = tmp_path / "quiz-labels.jsonl"
    dataset.write_text(
        "".join(
            json.dumps({"id": row["id"], "input": row["input"], "expected_label": "Paris"}) + "\n"
            for row in QUIZ
        )
    )
    a = _run(cli, dataset, "tests.helpers.text_systems:quiz")
    b = _run(cli, dataset, "tests.cli.test_diff_cli:quiz_v2")
    result = cli("diff", a, b)
    assert result.code == 0, result.err
    assert "broken (right in A, wrong in B)" in result.out
    assert "label: broken" not in result.out  # its view is the outcome's
    assert [s["name"] for s in json.loads(cli("diff", a, b, "--json").out)["scorers"]] == ["label"]
