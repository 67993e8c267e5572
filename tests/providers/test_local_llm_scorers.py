"""The QA demo's scorers on a real local model: ``rubric`` through the ``llama_cpp`` provider.

The first ten questions of the bundled QA dataset go through ``arbiter run`` with
``casefold``, ``f1_tokens`` and ``rubric`` judged by SmolLM2-135M, served by
``../shared/tools/local-llm start`` (OpenAI-compatible, http://127.0.0.1:8089/v1); skipped,
with the reason shown, when no server answers. The model is far too small to judge: no
verdict of it is asserted, only the plumbing around it. Every rubric score is a pass, a
fail or an abstention; every quote was checked against the answer (a verdict resting
only on quotes not in it is demoted); the tokens and time of each call are stored and
summed in the report; and a second run is answered from the model-call cache.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from arbiter.cli.main import main
from arbiter.contract import ModelCalls, PairResult, Report, Score
from arbiter.scoring.quotes import locate
from arbiter.store import Store
from tests.providers.test_local_llm import URL, server_up

DATASET = Path(__file__).resolve().parents[2] / "src" / "arbiter" / "demo" / "data" / "qa.jsonl"
QUESTIONS = 10
RUBRIC = (
    "PASS if the OUTPUT gives the same answer as the REFERENCE (other wording is fine); "
    "FAIL if it gives another answer or none."
)
JUDGE = f"rubric:rubric={RUBRIC},provider=llama_cpp,model=smollm2,max_output_tokens=256,timeout=180"
"""The judge: short answers (the tiny model may ramble), time for a queue on 2 cores."""


@dataclass(frozen=True)
class LocalRun:
    """One run of the slice: its report and its stored results."""

    report: Report
    results: list[PairResult]

    def rubric_scores(self) -> list[tuple[PairResult, Score]]:
        pairs = []
        for result in self.results:
            score = result.score("rubric")
            assert score is not None, f"{result.example_id}: no rubric score"
            pairs.append((result, score))
        return pairs


@dataclass(frozen=True)
class Workspace:
    """A private store and cache; runs the slice through the CLI."""

    url: str

    def run(self) -> LocalRun:
        out, err = io.StringIO(), io.StringIO()
        code = 0
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(
                    [
                        "run",
                        "--dataset",
                        str(DATASET),
                        "--limit",
                        str(QUESTIONS),
                        "--target",
                        "arbiter.demo.qa:answer",
                        "--concurrency",
                        "1",  # one llama.cpp slot: a queue would eat the judge's timeout
                        "--scorer",
                        "casefold",
                        "--scorer",
                        "f1_tokens",
                        "--scorer",
                        JUDGE,
                        "--json",
                        "--quiet",
                    ]
                )
            except SystemExit as exc:
                code = int(exc.code or 0)
        assert code == 0, err.getvalue()
        report = Report.model_validate_json(out.getvalue())
        assert report.run_id is not None
        store = Store(self.url)
        try:
            return LocalRun(report, store.results(report.run_id))
        finally:
            store.close()


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    if not asyncio.run(server_up(URL)):
        pytest.skip(f"no local model server at {URL}: run ../shared/tools/local-llm start")
    root = tmp_path_factory.mktemp("local-llm")
    url = f"sqlite:///{root / 'store.db'}"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("ARBITER_DB_URL", url)
        env.setenv("ARBITER_HOME", str(root / "home"))  # the model-call cache lives here
        env.setenv("ARBITER_LLAMA_CPP_URL", URL)
        env.delenv("ARBITER_CACHE_DIR", raising=False)
        env.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
        yield Workspace(url)


@pytest.fixture(scope="module")
def cold(workspace: Workspace) -> LocalRun:
    return workspace.run()


@pytest.fixture(scope="module")
def warm(workspace: Workspace, cold: LocalRun) -> LocalRun:
    return workspace.run()


def _summed(scores: list[Score]) -> ModelCalls:
    return sum((s.model for s in scores if s.model is not None), ModelCalls())


def test_the_slice_runs_to_completion_with_every_scorer(cold: LocalRun) -> None:
    assert cold.report.status == "completed"
    assert len(cold.results) == QUESTIONS
    assert all(r.output is not None for r in cold.results)  # the system never failed
    for name in ("casefold", "f1_tokens", "rubric"):
        section = cold.report.sections[name]
        assert section.n == QUESTIONS
        assert section.passed + section.failed + section.abstained + section.errored == QUESTIONS
    assert cold.report.sections["casefold"].errored == 0


def test_every_rubric_score_is_a_verdict_or_an_abstention_on_checked_quotes(
    cold: LocalRun,
) -> None:
    parsed = 0
    for result, score in cold.rubric_scores():
        assert score.passed in (True, False, None)
        if score.error is not None:  # the call failed or its answer was not the JSON asked
            assert score.passed is None
            continue
        parsed += 1
        assert result.output is not None
        text = result.output.answer_text
        assert text is not None
        assert score.answer == {True: "pass", False: "fail", None: "unknown"}[score.passed]
        assert score.metadata["verdict"] in ("pass", "fail", "unknown")
        verified = 0
        for evidence in score.evidence:
            assert evidence.verified in (True, False)
            if not evidence.quote.endswith(" [...]"):  # a clipped quote is not re-checked
                assert evidence.verified is (locate(evidence.quote, text) is not None)
            verified += evidence.verified is True
        assert score.metadata["verified_quotes"] == verified
        demoted = score.metadata["verdict"] != "unknown" and bool(score.evidence) and not verified
        assert score.metadata["demoted"] is demoted
        if demoted or score.metadata["verdict"] == "unknown":
            assert score.passed is None
    assert parsed > 0, "no rubric answer of the local model could be read"


def test_the_calls_are_recorded_per_score_and_summed_in_the_report(cold: LocalRun) -> None:
    scores = [score for _, score in cold.rubric_scores()]
    answered = [s for s in scores if s.model is not None]
    assert answered, "no call reached the model"
    for score in answered:
        assert score.model is not None
        assert (score.model.calls, score.model.cached) == (1, 0)
        assert score.model.input_tokens > 0
        assert score.model.output_tokens > 0
        assert score.model.latency_ms > 0
    section = cold.report.sections["rubric"].model
    assert section is not None
    summed = _summed(scores)
    assert (section.calls, section.cached, section.input_tokens, section.output_tokens) == (
        summed.calls,
        0,
        summed.input_tokens,
        summed.output_tokens,
    )
    assert section.latency_ms == pytest.approx(summed.latency_ms)
    assert cold.report.model is not None
    assert cold.report.model.input_tokens == section.input_tokens  # the only model scorer


def test_a_second_run_is_answered_from_the_cache(cold: LocalRun, warm: LocalRun) -> None:
    before = {r.example_id: s for r, s in cold.rubric_scores()}
    replayed = 0
    for result, score in warm.rubric_scores():
        first = before[result.example_id]
        if score.model is None or not score.model.cached:
            continue
        replayed += 1
        assert (score.model.input_tokens, score.model.output_tokens) == (0, 0)
        # A replayed answer judges the same way as the first time.
        assert (score.passed, score.answer, score.evidence) == (
            first.passed,
            first.answer,
            first.evidence,
        )
    read = sum(s.error is None for s in before.values())
    assert replayed >= read > 0, "every answer that was read is stored and replayed"
    section = warm.report.sections["rubric"].model
    assert section is not None
    assert section.cached == replayed
    if section.cached == section.calls:
        assert section.cost_usd == 0.0  # nothing was billed
