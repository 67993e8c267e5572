"""What a running run keeps of each result for its report: the report computed from the
kept results is the report of the whole ones, and alike scores are kept once."""

from __future__ import annotations

import random

import pytest

from arbiter.contract import Example, ModelCalls, Output, PairResult, Score, ScorerSpec
from arbiter.harness.compact import ReportInputs
from arbiter.harness.report import build_report

SPECS = [
    ScorerSpec(name="label"),
    ScorerSpec(name="f1_tokens"),
    ScorerSpec(name="rubric", kind="model"),
    ScorerSpec(name="step_count", gating=False),
]


def _score(rng: random.Random, spec: ScorerSpec, expected: str) -> Score:
    passed = rng.choice([True, False, None])
    if spec.name == "label":
        answer = rng.choice(["high", "low", "medium"])
        return Score(
            name="label",
            value=float(answer == expected),
            answer=answer,
            expected=expected,
            passed=answer == expected,
            explanation=f"expected {expected!r}, got {answer!r}",
        )
    if spec.name == "f1_tokens":
        return Score(name="f1_tokens", value=rng.random(), passed=passed, explanation="f1 x" * 30)
    if spec.name == "rubric":
        calls = ModelCalls(calls=1, input_tokens=rng.randint(1, 99), output_tokens=7)
        error = "ProviderTimeout: no answer" if rng.random() < 0.1 else None
        return Score(
            name="rubric",
            value=rng.choice([0.0, 0.5, 1.0]),
            passed=passed,
            error=error,
            model=calls,
            explanation="it quotes",
            metadata={"q": "x"},
        )
    return Score(
        name="step_count",
        value=float(rng.randint(1, 4)),
        passed=passed,
        band=rng.choice(["healthy", "review", "danger", None]),
    )


def _run(seed: int) -> tuple[list[Example], list[PairResult]]:
    rng = random.Random(seed)
    examples = [
        Example(
            id=f"e{i}",
            input={"q": i},
            expected=rng.choice(["high", "low"]),
            cohort=rng.choice(["a", "b", None]),
        )
        for i in range(60)
    ]
    results = []
    for example in examples:
        for repetition in range(3):
            expected = str(example.expected)
            if rng.random() < 0.1:
                results.append(
                    PairResult(
                        example_id=example.id,
                        repetition=repetition,
                        passed=False,
                        error_type="SystemTimeout",
                        error_message="no answer within 30s",
                        latency_ms=rng.random() * 100,
                    )
                )
                continue
            scores = [_score(rng, spec, expected) for spec in SPECS]
            gating = [s.passed for s, spec in zip(scores, SPECS, strict=True) if spec.gating]
            passed = False if False in gating else (True if True in gating else None)
            results.append(
                PairResult(
                    example_id=example.id,
                    repetition=repetition,
                    output=Output.coerce({"label": scores[0].answer}),
                    scores=scores,
                    passed=passed,
                    latency_ms=rng.random() * 100,
                )
            )
    rng.shuffle(results)
    return examples, results


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_the_report_of_the_kept_results_is_the_report_of_the_whole_ones(seed: int) -> None:
    examples, results = _run(seed)
    kept = ReportInputs()
    compact = [kept.compact(result) for result in results]
    options = {
        "dataset_name": "d",
        "dataset_hash": "h",
        "system": "s",
        "k": 3,
        "seed": seed,
        "scorers": SPECS,
        "elapsed_seconds": 2.0,
    }
    whole = build_report(examples, results, **options)  # type: ignore[arg-type]
    small = build_report(examples, compact, **options)  # type: ignore[arg-type]
    assert small.model_dump_json() == whole.model_dump_json()


def test_alike_scores_are_kept_once_and_texts_are_left_to_the_store() -> None:
    kept = ReportInputs()
    pairs = [
        PairResult(
            example_id=f"e{i}",
            repetition=0,
            output=Output.coerce("yes"),
            scores=[
                Score(
                    name="label",
                    value=1.0,
                    answer="yes",
                    expected="yes",
                    passed=True,
                    explanation=f"long text {i}",
                )
            ],
            passed=True,
            latency_ms=float(i),
        )
        for i in range(3)
    ]
    compact = [kept.compact(pair) for pair in pairs]
    assert compact[0].scores is compact[1].scores is compact[2].scores
    assert compact[0].output is compact[2].output
    assert compact[0].scores[0].explanation == ""
    assert [c.latency_ms for c in compact] == [0.0, 1.0, 2.0]
    assert pairs[0].scores[0].explanation == "long text 0"  # the whole result is untouched
