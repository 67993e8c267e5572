"""The ``jury`` scorer: a case file run through it gives the figures of ``jury eval``."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from arbiter.config import Settings
from arbiter.contract import Case, Example, Output, Report, Score, Verdict
from arbiter.datasets import load_dataset
from arbiter.errors import InputError
from arbiter.harness.runner import run_eval
from arbiter.jury import Jury, bundled_cases_path, evaluate_jury, load_cases
from arbiter.jury.evaluation import DECISIONS, JuryEvaluation
from arbiter.jury.scorer import DETECTION_CATEGORIES, MAX_EVIDENCE, jury
from arbiter.providers.mock import MockProvider
from arbiter.providers.registry import ProviderRegistry
from arbiter.scoring.base import ScoringContext
from arbiter.service.scoring import scorer_registry

TASK = "Summarise the refund policy for a customer."
CONTEXT = "Refunds are accepted within 30 days of delivery. Shipping is free in the US."


def _evaluation(cases: Sequence[Case]) -> tuple[list[Verdict], JuryEvaluation]:
    """What ``arbiter jury eval`` computes: the default jury on every case."""
    verdicts = asyncio.run(Jury().judge_many(cases))
    return verdicts, evaluate_jury(cases, [v.critiques for v in verdicts])


def _run(path: Path, **arguments: Any) -> Report:
    from arbiter.systems.precomputed import PrecomputedSystem

    return run_eval(PrecomputedSystem(), load_dataset(path), scorers=[jury(**arguments)])


def _score(output: str, **arguments: Any) -> Score:
    example = Example(id="c", input={"task": TASK, "context": CONTEXT})
    return asyncio.run(jury(**arguments)(example, Output(text=output)))


@pytest.fixture(scope="module")
def bundled() -> tuple[Report, list[Verdict], JuryEvaluation]:
    report = _run(bundled_cases_path())
    verdicts, evaluation = _evaluation(load_cases(bundled_cases_path()))
    return report, verdicts, evaluation


def test_exact_verdict_accuracy_and_confusion_equal_jury_evals(
    bundled: tuple[Report, list[Verdict], JuryEvaluation],
) -> None:
    report, _, evaluation = bundled
    section = report.sections["jury"]
    assert section.classification is not None
    assert evaluation.verdict_accuracy is not None
    assert section.classification.accuracy == evaluation.verdict_accuracy
    labels = section.classification.labels
    assert set(labels) == set(DECISIONS)
    confusion = {
        expected: {
            decided: section.classification.confusion[i][j] for j, decided in enumerate(labels)
        }
        for i, expected in enumerate(labels)
    }
    assert confusion == evaluation.confusion


def test_detection_precision_and_recall_equal_jury_evals(
    bundled: tuple[Report, list[Verdict], JuryEvaluation],
) -> None:
    report, _, evaluation = bundled
    mapped, detection = report.sections["jury"].mapped, evaluation.detection
    assert mapped is not None
    assert detection is not None
    defective = mapped.per_label["defective"]
    assert defective.precision == detection.precision.estimate
    assert defective.recall == detection.recall.estimate
    assert defective.support == detection.tp + detection.fn
    assert mapped.n == detection.n


def test_the_pass_rate_is_the_share_of_outputs_accepted(
    bundled: tuple[Report, list[Verdict], JuryEvaluation],
) -> None:
    report, verdicts, _ = bundled
    section = report.sections["jury"]
    assert section.passed == sum(v.decision == "ACCEPT" for v in verdicts)
    assert section.failed == len(verdicts) - section.passed
    assert (section.abstained, section.errored) == (0, 0)


def test_each_score_matches_the_verdict_of_its_case(
    bundled: tuple[Report, list[Verdict], JuryEvaluation], tmp_path: Path
) -> None:
    from arbiter.store import Store
    from arbiter.systems.precomputed import PrecomputedSystem

    _, verdicts, evaluation = bundled
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        report = run_eval(
            PrecomputedSystem(),
            load_dataset(bundled_cases_path()),
            scorers=[jury()],
            store=store,
        )
        assert report.run_id is not None
        results = {r.example_id: r.score("jury") for r in store.results(report.run_id)}
    finally:
        store.close()
    for case, verdict in zip(load_cases(bundled_cases_path()), verdicts, strict=True):
        score = results[case.id]
        assert score is not None
        assert (score.answer, score.expected) == (verdict.decision, case.expected)
        assert score.metadata["escalate"] == verdict.escalate
        assert score.metadata["confidence"] == verdict.confidence
        assert score.metadata["flip_margin"] == verdict.flip_margin
    escalated = sum(s.metadata["escalate"] is True for s in results.values() if s is not None)
    assert escalated > 0
    assert escalated / len(results) == pytest.approx(evaluation.escalate_rate)


def test_cases_labelled_only_defective_count_in_the_detection_view_alone(
    tmp_path: Path,
) -> None:
    cases = load_cases(bundled_cases_path())
    # Every third case forgets its verdict and keeps only whether it is defective.
    rows = []
    for i, case in enumerate(cases):
        row = case.model_dump(mode="json", exclude={"schema_version"})
        if i % 3 == 0:
            row["expected"] = None
        rows.append(row)
    path = tmp_path / "half.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    section = _run(path).sections["jury"]
    _, evaluation = _evaluation(load_cases(path))
    assert section.classification is not None
    assert section.mapped is not None
    assert evaluation.verdict_accuracy is not None
    assert evaluation.detection is not None
    assert section.classification.accuracy == evaluation.verdict_accuracy
    assert section.classification.n == len(cases) - len(range(0, len(cases), 3))
    defective = section.mapped.per_label["defective"]
    assert defective.precision == evaluation.detection.precision.estimate
    assert defective.recall == evaluation.detection.recall.estimate
    assert section.mapped.n == len(cases)


def test_an_escalation_is_the_first_evidence_and_in_the_explanation(
    bundled: tuple[Report, list[Verdict], JuryEvaluation],
) -> None:
    _, verdicts, _ = bundled
    cases = load_cases(bundled_cases_path())
    escalated = next(c for c, v in zip(cases, verdicts, strict=True) if v.escalate)
    example = Example(
        id=escalated.id,
        input={"task": escalated.task, "context": escalated.context},
        expected=escalated.expected,
    )
    score = asyncio.run(jury()(example, Output(text=escalated.output)))
    assert score.metadata["escalate"] is True
    first = score.evidence[0]
    assert first.note.startswith("ESCALATE: ")
    assert "escalate:" not in first.note
    assert (first.quote, first.verified) == ("", None)
    assert "ESCALATE" in score.explanation
    findings = score.evidence[1:]
    assert findings
    assert all(e.verified and e.quote in escalated.output for e in findings)


def test_findings_are_evidence_with_verified_quotes_and_fail_the_output() -> None:
    output = "Refunds are accepted within 45 days of delivery. Shipping is free in the US."
    score = _score(output)
    assert (score.answer, score.passed) == ("REJECT", False)
    assert score.evidence
    assert all(e.verified and e.quote in output for e in score.evidence)
    assert any("45" in e.quote and e.note.startswith("contradicted: ") for e in score.evidence)


def test_a_faithful_output_is_accepted_with_no_evidence() -> None:
    score = _score(CONTEXT)
    assert (score.answer, score.passed, score.evidence) == ("ACCEPT", True, [])
    assert score.model is None  # the offline critics ask no model


def test_an_example_without_a_task_is_an_errored_score() -> None:
    example = Example(id="q", input={"question": "?"})
    score = asyncio.run(jury()(example, Output(text="x")))
    assert score.passed is None
    assert score.error is not None
    assert "input['task']" in score.error


def test_an_empty_output_is_rejected_without_asking_a_critic() -> None:
    score = _score("")
    assert (score.answer, score.passed) == ("REJECT", False)


# ------------------------------------------------------------ critics on a provider


def _scripted(answer: dict[str, Any]) -> ScoringContext:
    registry = ProviderRegistry.default(plugins=False)
    registry.register_provider(
        "scripted", lambda settings, http: MockProvider(json.dumps(answer), model="m")
    )
    return ScoringContext(settings=Settings(_env_file=None), providers=registry, use_cache=False)


def test_critics_on_a_provider_come_from_the_scoring_context_and_count_their_calls() -> None:
    critique = {
        "accuracy": 2,
        "consistency": 5,
        "completeness": 5,
        "callouts": [
            {
                "dimension": "accuracy",
                "kind": "contradicted",
                "claim": "The context says 30 days.",
                "quote": "not in the output at all",
                "rival": "30 days",
            }
        ],
    }
    score = _score(
        "Refunds within 30 days.", provider="scripted", model="m", context=_scripted(critique)
    )
    assert score.model is not None
    assert score.model.calls == 3
    opinions = [e for e in score.evidence if e.verified is False]
    assert opinions
    assert opinions[0].note.startswith("opinion: The context says 30 days.")


class _CacheableScript(MockProvider):
    """A scripted provider that, unlike the mock, answers through the model-call cache."""

    cacheable = True


def test_critics_answered_from_the_cache_are_counted_as_cache_hits(tmp_path: Path) -> None:
    critique = {"accuracy": 5, "consistency": 5, "completeness": 5, "callouts": []}

    def context() -> ScoringContext:
        registry = ProviderRegistry.default(plugins=False)
        registry.register_provider(
            "scripted", lambda settings, http: _CacheableScript(json.dumps(critique), model="m")
        )
        settings = Settings(_env_file=None, cache_dir=tmp_path)
        return ScoringContext(settings=settings, providers=registry, use_cache=True)

    async def score_once() -> Score:
        built = context()
        try:
            scorer = jury(provider="scripted", model="m", context=built)
            example = Example(id="c", input={"task": TASK, "context": CONTEXT})
            return await scorer(example, Output(text="Refunds within 30 days."))
        finally:
            await built.aclose()

    cold, warm = asyncio.run(score_once()), asyncio.run(score_once())
    assert cold.model is not None
    assert warm.model is not None
    assert (cold.model.calls, cold.model.cached) == (3, 0)
    assert (warm.model.calls, warm.model.cached) == (3, 3)
    assert warm.answer == cold.answer


def test_too_much_evidence_is_capped_and_counted() -> None:
    claims = [
        {
            "dimension": "accuracy",
            "kind": "contradicted",
            "claim": f"claim {i}",
            "quote": f"missing quote {i}",
            "rival": None,
        }
        for i in range(MAX_EVIDENCE * 2)
    ]
    critique = {"accuracy": 2, "consistency": 5, "completeness": 5, "callouts": claims}
    score = _score("An output.", provider="scripted", model="m", context=_scripted(critique))
    assert len(score.evidence) == MAX_EVIDENCE
    assert "more findings not listed" in score.explanation


# ------------------------------------------------------------------------ arguments


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"provider": "openai"}, "needs a model"),
        ({"provider": "nope", "model": "m"}, "provider 'nope' is not one of"),
        ({"roster": [{"name": "a"}], "provider": "mock"}, "not both"),
        ({"roster": [{"name": "a"}, {"name": "a"}]}, "critic name 'a' appears twice"),
        ({"roster": [{"name": "a", "lens": "psychic"}]}, "argument 'roster': [0]: field 'lens'"),
        ({"roster": []}, "non-empty JSON list"),
        ({"roster": "no/such/roster.json"}, "no/such/roster.json"),
        ({"category_map": {"MAYBE": "x"}}, "'MAYBE' is none"),
    ],
)
def test_bad_arguments_are_one_line_input_errors(arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError) as caught:
        jury(**arguments)
    assert message in str(caught.value)
    assert str(caught.value).startswith("scorer 'jury': ")


def test_a_roster_file_is_recorded_in_the_spec_as_its_critics(tmp_path: Path) -> None:
    path = tmp_path / "roster.json"
    path.write_text(json.dumps([{"name": "solo", "lens": "adversary"}]), encoding="utf-8")
    built = scorer_registry().build(scorer_registry().spec_of(f"jury:roster={path}"))
    (critic,) = built.spec.args["roster"]
    assert (critic["name"], critic["lens"], critic["provider"]) == ("solo", "adversary", "mock")
    path.unlink()  # a resumed run rebuilds the same jury without the file
    assert scorer_registry().build(built.spec).spec == built.spec


def test_the_default_spec_records_the_detection_categories() -> None:
    spec = scorer_registry().spec_of("jury")
    assert spec.args["category_map"] == DETECTION_CATEGORIES
    assert spec.kind == "model"


def test_another_category_map_gives_another_mapped_view() -> None:
    severe = {"ACCEPT": "pass", "REVISE": "pass", "REJECT": "block"}
    mapped = _run(bundled_cases_path(), category_map=severe).sections["jury"].mapped
    assert mapped is not None
    assert mapped.labels == ["block", "pass"]


def test_the_registry_names_the_jury_without_importing_it() -> None:
    code = (
        "import sys\n"
        "from arbiter.service.scoring import scorer_registry\n"
        "registry = scorer_registry()\n"
        "assert 'jury' in registry, registry.names()\n"
        "assert 'arbiter.jury' not in sys.modules, 'the jury was imported'\n"
        "registry.factory_of('jury')\n"
        "assert 'arbiter.jury.scorer' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# --------------------------------------------------------------- arbiter judge agrees


@pytest.mark.parametrize("case_id", ["clean_01", "pct_01", "dur_03"])
def test_arbiter_judge_gives_the_verdict_the_scorer_scores(cli: Any, case_id: str) -> None:
    judged = cli("judge", "--case", case_id, "--json", "--no-audit")
    (judgment,) = json.loads(judged.out)["judgments"]
    verdict = judgment["verdict"]
    case = next(c for c in load_cases(bundled_cases_path()) if c.id == case_id)
    score = asyncio.run(jury()(_example_of(case), Output(text=case.output)))
    assert (score.answer, score.metadata["escalate"], score.metadata["confidence"]) == (
        verdict["decision"],
        verdict["escalate"],
        verdict["confidence"],
    )
    quotes = {f["quote"] for f in verdict["findings"]}
    assert {e.quote for e in score.evidence if e.verified} == quotes


def _example_of(case: Case) -> Example:
    return Example(
        id=case.id,
        input={"task": case.task, "context": case.context},
        output=case.output,
        expected=case.expected,
    )
