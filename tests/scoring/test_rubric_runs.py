"""The ``rubric`` scorer in real runs: usage and cost in the report, the cache, errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from arbiter.config import Settings
from arbiter.contract import Dataset, Example, ModelCalls, RunConfig
from arbiter.harness.runner import run_eval
from arbiter.providers.base import CompletionRequest
from arbiter.scoring.base import ScoringContext
from arbiter.scoring.registry import ScorerRegistry
from tests.scoring.rubric_fakes import (
    CALL_COST,
    JUDGE_MODEL,
    ScriptedJudge,
    judge_context,
    rubric_scorer,
    verdict,
)

QUESTIONS = [
    ("q1", "What is the capital of France?", "Paris", "The capital of France is Paris."),
    ("q2", "Who wrote Hamlet?", "William Shakespeare", "Hamlet was written by Marlowe."),
    ("q3", "What is the boiling point of water at sea level?", "100 degrees Celsius",
     "Water boils at 100 degrees Celsius at sea level."),
    ("q4", "How many legs does a spider have?", "eight", "A spider has six legs."),
    ("q5", "Which planet is closest to the sun?", "Mercury", "mercury"),
    ("q6", "What gas do plants absorb?", "carbon dioxide", "Plants absorb carbon dioxide."),
]  # fmt: skip
"""Free-text questions, their reference answers, and what the system under test says."""

DATASET = Dataset(
    name="capitals-and-facts",
    examples=[
        Example(id=qid, input={"question": question}, expected=reference)
        for qid, question, reference, _ in QUESTIONS
    ],
)
ANSWERS = {question: answer for _, question, _, answer in QUESTIONS}


async def assistant(input: dict[str, Any]) -> str:
    """A system under test that is right on four questions, wrong in plausible ways on two."""
    return ANSWERS[input["question"]]


def quoting_judge(request: CompletionRequest) -> dict[str, Any]:
    """Passes every output, quoting its first word (always found in the output)."""
    output = request.prompt.rsplit("<output>\n", 1)[1]
    return verdict("pass", 0.9, [output.split()[0]])


def test_a_free_text_run_scores_with_casefold_f1_tokens_and_the_mock_rubric() -> None:
    registry = ScorerRegistry.default(plugins=False)
    context = ScoringContext(use_cache=False)
    scorers = registry.build_all(
        [
            registry.spec_of("casefold"),
            registry.spec_of("f1_tokens:threshold=0.5"),
            registry.spec_of("rubric:rubric=The answer is factually right."),
        ],
        context=context,
    )
    report = run_eval(assistant, DATASET, scorers=scorers)
    rubric = report.sections["rubric"]
    # The mock judge passes an output that contains its reference: q1, q3, q5 (case
    # folded) and q6; q2 and q4 are wrong.
    assert (rubric.passed, rubric.failed, rubric.abstained, rubric.errored) == (4, 2, 0, 0)
    assert report.sections["casefold"].passed == 1  # only "mercury" is the bare reference
    assert set(report.sections) == {"casefold", "f1_tokens", "rubric"}
    assert rubric.model == ModelCalls(
        calls=6, latency_ms=rubric.model.latency_ms if rubric.model else 0.0, cost_usd=0.0
    )


def test_a_run_sums_tokens_latency_and_cost_per_scorer_and_overall(tmp_path: Path) -> None:
    judge = ScriptedJudge(quoting_judge)
    context = judge_context(judge, tmp_path)
    first = rubric_scorer(context)
    second = rubric_scorer(context, rubric="The answer is one sentence.").with_alias("brevity")
    report = run_eval(assistant, DATASET, scorers=[first, second], concurrency=3)
    for name in ("rubric", "brevity"):
        calls = report.sections[name].model
        assert calls is not None
        assert (calls.calls, calls.cached, calls.input_tokens, calls.output_tokens) == (
            6,
            0,
            600,
            120,
        )
        assert calls.cost_usd == pytest.approx(6 * CALL_COST)
        assert calls.latency_ms > 0
    assert report.model is not None
    assert (report.model.calls, report.model.input_tokens, report.model.output_tokens) == (
        12,
        1200,
        240,
    )
    assert report.model.cost_usd == pytest.approx(12 * CALL_COST)
    sections = [s.model for s in report.sections.values() if s.model is not None]
    assert report.model.latency_ms == pytest.approx(sum(m.latency_ms for m in sections))
    assert len(judge.requests) == 12


def test_a_billed_model_missing_from_the_price_table_leaves_the_cost_unknown(
    tmp_path: Path,
) -> None:
    judge = ScriptedJudge(quoting_judge)
    context = judge_context(judge, tmp_path, prices={"some-other-model": (1.0, 1.0)})
    report = run_eval(assistant, DATASET, scorers=[rubric_scorer(context)])
    assert report.model is not None
    assert report.model.input_tokens == 600
    assert report.model.cost_usd is None


def test_a_price_table_file_prices_the_calls(tmp_path: Path) -> None:
    table = tmp_path / "prices.toml"
    table.write_text(f'"{JUDGE_MODEL}" = {{ input = 1.0, output = 2.0 }}\n', encoding="utf-8")
    judge = ScriptedJudge(quoting_judge)
    context = judge_context(judge, tmp_path, prices={})
    context.settings = Settings(_env_file=None, home=tmp_path, prices=table)  # type: ignore[call-arg]
    report = run_eval(assistant, DATASET, scorers=[rubric_scorer(context)])
    assert report.model is not None
    assert report.model.cost_usd == pytest.approx(6 * CALL_COST)


def test_a_second_run_is_answered_from_the_cache_at_no_cost(tmp_path: Path) -> None:
    judge = ScriptedJudge(quoting_judge)
    reports = []
    for _ in range(2):
        context = judge_context(judge, tmp_path, use_cache=True)
        reports.append(run_eval(assistant, DATASET, scorers=[rubric_scorer(context)]))
    cold, warm = (r.model for r in reports)
    assert cold is not None
    assert warm is not None
    assert (cold.calls, cold.cached, cold.input_tokens) == (6, 0, 600)
    assert (warm.calls, warm.cached, warm.input_tokens, warm.output_tokens) == (6, 6, 0, 0)
    assert warm.cost_usd == 0.0
    assert len(judge.requests) == 6
    assert [s.passed for s in reports[0].sections.values()] == [
        s.passed for s in reports[1].sections.values()
    ]
    assert (tmp_path / "home" / "cache" / "models.sqlite3").is_file()


def test_the_cache_lives_where_arbiter_cache_dir_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARBITER_CACHE_DIR", str(tmp_path / "elsewhere"))
    judge = ScriptedJudge(quoting_judge)
    context = judge_context(judge, tmp_path, use_cache=True)
    context.settings = Settings(_env_file=None, home=tmp_path / "home")  # type: ignore[call-arg]
    run_eval(assistant, DATASET, scorers=[rubric_scorer(context)])
    assert (tmp_path / "elsewhere" / "models.sqlite3").is_file()
    assert not (tmp_path / "home" / "cache").exists()


@pytest.mark.parametrize(
    ("k", "cache", "reached"),
    [(1, None, 6), (3, None, 18), (3, True, 6), (1, False, 6)],
    ids=["k1-default", "k3-samples-fresh", "k3-cache-asked-for", "no-cache"],
)
def test_repetitions_meant_to_sample_ask_the_model_again(
    tmp_path: Path, k: int, cache: bool | None, reached: int
) -> None:
    judge = ScriptedJudge(quoting_judge)
    config = RunConfig(k=k, cache=cache)
    context = judge_context(judge, tmp_path, use_cache=config.uses_cache)
    report = run_eval(assistant, DATASET, k=k, cache=cache, scorers=[rubric_scorer(context)])
    assert len(judge.requests) == reached
    assert report.model is not None
    assert report.model.calls == 6 * k
    assert report.model.cached == 6 * k - reached


def test_a_failing_provider_gives_errored_scores_and_the_run_completes(tmp_path: Path) -> None:
    judge = ScriptedJudge(quoting_judge)
    judge.fail = True
    report = run_eval(assistant, DATASET, scorers=[rubric_scorer(judge_context(judge, tmp_path))])
    section = report.sections["rubric"]
    assert report.status == "completed"
    assert (section.passed, section.failed, section.errored) == (0, 0, 6)
    assert report.pass_hat_k.n == 0  # no repetition is known to pass or fail
    assert report.undecided == 6


def test_a_run_closes_the_providers_its_scorers_opened(tmp_path: Path) -> None:
    judge = ScriptedJudge(quoting_judge)
    context = judge_context(judge, tmp_path)
    run_eval(assistant, DATASET, scorers=[rubric_scorer(context), rubric_scorer(context)
                                          .with_alias("again")])  # fmt: skip
    assert judge.closed >= 1
    assert len(judge.requests) == 12  # one provider, shared by both scorers
