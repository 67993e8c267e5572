"""The free-text QA demo end to end through the CLI: run, failures, gate, diff, eval file.

The 200 bundled questions (``src/arbiter/demo/data/qa.jsonl``) go through both versions
of the simulated QA app (``arbiter.demo.qa:answer`` and ``:answer_v2``), each scored by
``casefold``, ``f1_tokens`` and ``rubric`` on the mock provider (offline: its judge
passes an answer that contains the reference). The figures the commands print are
checked against what the stored per-example results say, recomputed here, not against
numbers copied from an earlier run.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from arbiter.cli.main import main
from arbiter.contract import Example, PairResult, Report, RunInfo
from arbiter.datasets import load_dataset
from arbiter.harness.failures import Failures
from arbiter.scoring.quotes import normalize
from arbiter.store import Store

ROOT = Path(__file__).resolve().parents[2]
DATASET = ROOT / "src" / "arbiter" / "demo" / "data" / "qa.jsonl"
EVAL_FILE = ROOT / "docs" / "examples" / "qa.eval.toml"
RUBRIC = "The answer states the reference answer's fact correctly."
"""The rubric of every run here; the eval file's too, so their scorers are the same."""
SCORERS = ("casefold", "f1_tokens", "rubric")


@dataclass(frozen=True)
class Invocation:
    """Exit code and output of one CLI command."""

    code: int
    out: str
    err: str


@dataclass(frozen=True)
class QaRun:
    """One stored run of the demo: its report and its per-example results by id."""

    id: str
    report: Report
    results: dict[str, PairResult]


@dataclass(frozen=True)
class Workspace:
    """A private store and home, and how to call the CLI on them."""

    root: Path
    url: str

    def invoke(self, *args: str) -> Invocation:
        out, err = io.StringIO(), io.StringIO()
        code = 0
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(list(args))
            except SystemExit as exc:
                code = int(exc.code or 0)
        return Invocation(code, out.getvalue(), err.getvalue())

    def run(self, *args: str) -> QaRun:
        done = self.invoke("run", *args, "--json", "--quiet")
        assert done.code == 0, done.err
        report = Report.model_validate_json(done.out)
        assert report.run_id is not None
        return QaRun(report.run_id, report, self.results(report.run_id))

    def results(self, run_id: str) -> dict[str, PairResult]:
        store = Store(self.url)
        try:
            results = store.results(run_id)
        finally:
            store.close()
        by_id = {r.example_id: r for r in results}
        assert len(by_id) == len(results), "k = 1: one result per example"
        return by_id

    def run_info(self, run_id: str) -> RunInfo:
        store = Store(self.url)
        try:
            return store.get_run(run_id)
        finally:
            store.close()


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    root = tmp_path_factory.mktemp("qa")
    url = f"sqlite:///{root / 'store.db'}"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("ARBITER_DB_URL", url)
        env.setenv("ARBITER_HOME", str(root / "home"))
        env.setenv("COLUMNS", "200")
        env.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
        yield Workspace(root, url)


def _qa_run(workspace: Workspace, target: str) -> QaRun:
    return workspace.run(
        "--dataset",
        str(DATASET),
        "--target",
        target,
        "--scorer",
        "casefold",
        "--scorer",
        "f1_tokens:threshold=0.5",
        "--scorer",
        f"rubric:rubric={RUBRIC},provider=mock",
    )


@pytest.fixture(scope="module")
def v1(workspace: Workspace) -> QaRun:
    return _qa_run(workspace, "arbiter.demo.qa:answer")


@pytest.fixture(scope="module")
def v2(workspace: Workspace) -> QaRun:
    return _qa_run(workspace, "arbiter.demo.qa:answer_v2")


@pytest.fixture(scope="module")
def examples() -> dict[str, Example]:
    return {e.id: e for e in load_dataset(DATASET).examples}


def _passed_by(run: QaRun, scorer: str) -> set[str]:
    """Examples the scorer passed, from the stored scores."""
    passed = set()
    for example_id, result in run.results.items():
        score = result.score(scorer)
        assert score is not None, f"{example_id}: no {scorer} score"
        if score.passed is True:
            passed.add(example_id)
    return passed


def _passed(run: QaRun) -> set[str]:
    """Examples whose repetition passed (every gating scorer passed), from the store."""
    return {i for i, result in run.results.items() if result.passed is True}


# --- The run ------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_both_versions_score_every_answer_with_the_three_scorers(
    version: str, request: pytest.FixtureRequest
) -> None:
    run: QaRun = request.getfixturevalue(version)
    report = run.report
    assert report.status == "completed"
    assert len(run.results) == 200
    assert list(report.sections) == list(SCORERS)
    for name in SCORERS:
        section = report.sections[name]
        assert (section.n, section.abstained, section.errored) == (200, 0, 0)
        assert section.passed == len(_passed_by(run, name))
        assert section.failed == 200 - section.passed
    assert report.accuracy.n == 200
    assert report.accuracy.estimate == pytest.approx(len(_passed(run)) / 200)
    rubric = report.sections["rubric"].model
    assert rubric is not None
    assert (rubric.calls, rubric.cached, rubric.cost_usd) == (200, 0, 0.0)


def test_the_mock_judge_passes_exactly_the_answers_that_contain_the_reference(
    v1: QaRun, examples: dict[str, Example]
) -> None:
    containing = set()
    for example_id, result in v1.results.items():
        assert result.output is not None
        answer, reference = result.output.answer_text, examples[example_id].expected
        assert isinstance(answer, str)
        assert isinstance(reference, str)
        if normalize(reference).casefold() in normalize(answer).casefold():
            containing.add(example_id)
    assert _passed_by(v1, "rubric") == containing
    for example_id in containing:
        score = v1.results[example_id].score("rubric")
        assert score is not None
        (quote,) = score.evidence
        assert quote.verified is True


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_an_answer_casefold_passes_passes_every_scorer(
    version: str, request: pytest.FixtureRequest
) -> None:
    run: QaRun = request.getfixturevalue(version)
    exact = _passed_by(run, "casefold")
    assert exact <= _passed_by(run, "f1_tokens")
    assert exact <= _passed_by(run, "rubric")
    assert _passed(run) == exact  # so the run's pass rate is casefold's
    # ...and each looser scorer forgives answers casefold fails: restyled, verbose ones.
    assert len(_passed_by(run, "f1_tokens")) > len(exact)
    assert len(_passed_by(run, "rubric")) > len(exact)


# --- Failures -----------------------------------------------------------------------


def test_report_failures_lists_every_answer_a_scorer_did_not_pass_with_its_reasons(
    workspace: Workspace, v1: QaRun
) -> None:
    done = workspace.invoke("report", v1.id, "--failures", "--limit", "0", "--json")
    assert done.code == 0, done.err
    failures = Failures.model_validate_json(done.out)
    not_clean = {
        i for i, result in v1.results.items() if any(s.passed is not True for s in result.scores)
    }
    assert failures.listed_total == len(not_clean) == 200 - len(_passed(v1))
    assert {e.example_id for e in failures.examples} == not_clean
    for listed in failures.examples:
        stored = v1.results[listed.example_id]
        (repetition,) = listed.repetitions
        assert stored.output is not None
        assert repetition.output == stored.output.answer_text
        shown = {s.name: s for s in repetition.scores}
        assert list(shown) == list(SCORERS)
        for score in stored.scores:
            verdict = shown[score.name]
            assert verdict.verdict == ("pass" if score.passed else "fail")
            assert verdict.explanation == score.explanation
            assert verdict.evidence == score.evidence


def test_report_failures_as_text_names_the_failing_examples_and_no_passing_one(
    workspace: Workspace, v1: QaRun
) -> None:
    done = workspace.invoke("report", v1.id, "--failures", "--limit", "0")
    assert done.code == 0, done.err
    named = set(re.findall(r"\bqa-\d{3}\b", done.out))
    assert named == set(v1.results) - _passed(v1)


# --- Gate ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "margin", "code"),
    [
        ("--min-accuracy", -0.05, 0),
        ("--min-accuracy", +0.05, 1),
        ("--min-pass-k", -0.05, 0),
        ("--min-pass-k", +0.05, 1),
    ],
    ids=["accuracy-below", "accuracy-above", "pass-k-below", "pass-k-above"],
)
def test_the_gate_passes_a_floor_under_the_pass_rate_and_fails_one_over_it(
    workspace: Workspace, v1: QaRun, option: str, margin: float, code: int
) -> None:
    measured = len(_passed(v1)) / 200  # k = 1: accuracy and pass^1 are the same share
    floor = measured + margin
    done = workspace.invoke("gate", v1.id, option, f"{floor:.3f}")
    assert done.code == code, done.out + done.err
    if code:
        assert f"is below the floor {floor:.3f}" in done.out
        assert f"{measured:.3f}" in done.out
    else:
        assert "gate passed" in done.out


def test_the_gate_passes_the_second_version_against_the_first_as_baseline(
    workspace: Workspace, v1: QaRun, v2: QaRun
) -> None:
    assert len(_passed(v2)) > len(_passed(v1))  # the premise: version 2 is better
    done = workspace.invoke("gate", v2.id, "--baseline", v1.id)
    assert done.code == 0, done.out + done.err
    assert "gate passed" in done.out


# --- Diff ---------------------------------------------------------------------------


def _flips(a: set[str], b: set[str], ids: set[str]) -> tuple[set[str], set[str]]:
    """Fixed (not passed in A, passed in B) and broken (the reverse) examples."""
    return (ids - a) & b, a - b


def test_diff_shows_the_examples_the_second_version_fixed_and_broke(
    workspace: Workspace, v1: QaRun, v2: QaRun
) -> None:
    ids = set(v1.results)
    fixed, broken = _flips(_passed(v1), _passed(v2), ids)
    assert fixed
    assert broken
    # The change of the pass rate is the net of the flips, example by example.
    change = v2.report.accuracy.estimate - v1.report.accuracy.estimate
    assert change == pytest.approx((len(fixed) - len(broken)) / len(ids))
    for name in SCORERS:
        scorer_fixed, scorer_broken = _flips(_passed_by(v1, name), _passed_by(v2, name), ids)
        net = v2.report.sections[name].passed - v1.report.sections[name].passed
        assert net == len(scorer_fixed) - len(scorer_broken), name

    text = workspace.invoke("diff", v1.id, v2.id)
    assert text.code == 0, text.err
    as_json = workspace.invoke("diff", v1.id, v2.id, "--json")
    assert as_json.code == 0, as_json.err
    json.loads(as_json.out)
    listed = set(re.findall(r'"(qa-\d{3})"', as_json.out))
    assert fixed | broken <= listed


# --- The eval file ------------------------------------------------------------------


def _stored_scores(run: QaRun) -> dict[str, list[tuple[str, bool | None, str]]]:
    return {
        i: [(s.name, s.passed, s.explanation) for s in result.scores]
        for i, result in run.results.items()
    }


def test_the_eval_file_is_the_same_run_and_passes_its_gate(workspace: Workspace, v1: QaRun) -> None:
    checked = workspace.invoke("run", "--dry-run", str(EVAL_FILE))
    assert checked.code == 0, checked.err
    assert "Nothing was called" in checked.out
    run = workspace.run(str(EVAL_FILE))
    assert [spec.model_dump() for spec in run.report.scorers] == [
        spec.model_dump() for spec in v1.report.scorers
    ]
    assert _stored_scores(run) == _stored_scores(v1)
    assert run.report.accuracy == v1.report.accuracy
    info = workspace.run_info(run.id)
    assert (info.name, info.tags) == ("qa-demo", {"demo": "qa", "version": "1"})
    assert info.run_config.eval_file_hash is not None


def test_the_eval_file_exits_1_when_its_floor_is_over_the_pass_rate(
    workspace: Workspace, v1: QaRun
) -> None:
    text = EVAL_FILE.read_text(encoding="utf-8")
    measured = len(_passed(v1)) / 200
    assert "min_accuracy = 0.55" in text
    assert measured >= 0.55
    raised = text.replace("min_accuracy = 0.55", f"min_accuracy = {measured + 0.05:.3f}")
    raised = raised.replace('"../../src/arbiter/demo/data/qa.jsonl"', json.dumps(str(DATASET)))
    path = workspace.root / "raised.eval.toml"
    path.write_text(raised, encoding="utf-8")
    done = workspace.invoke("run", str(path), "--quiet")
    assert done.code == 1, done.out + done.err
    assert f"below the floor {measured + 0.05:.3f}" in done.out
