"""What a running run keeps of each result for its report (columns): the report computed
from columns filled as results arrive is the report of the whole results, whatever their
order, and the columns keep no output or text, alike scores once."""

from __future__ import annotations

import random

import pytest

from arbiter.contract import Example, ModelCalls, Output, PairResult, Score, ScorerSpec
from arbiter.harness.compact import ResultColumns
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


OPTIONS = {
    "dataset_name": "d",
    "dataset_hash": "h",
    "system": "s",
    "k": 3,
    "scorers": SPECS,
    "elapsed_seconds": 2.0,
}


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_the_report_of_columns_filled_as_results_arrive_is_the_report_of_the_results(
    seed: int,
) -> None:
    examples, results = _run(seed)
    # A result of an example outside the run's scope is counted, never reported on.
    stray = PairResult(example_id="elsewhere", repetition=0, passed=True, latency_ms=1.0)
    columns = ResultColumns(examples, [spec.label for spec in SPECS])
    for result in [*results, stray]:
        columns.add(result)
    assert (columns.added, len(columns)) == (len(results) + 1, len(results))
    options = {**OPTIONS, "seed": seed}
    whole = build_report(examples, results, **options)  # type: ignore[arg-type]
    # The columns of the same results in another order give the same bytes.
    shuffled = ResultColumns(examples, [spec.label for spec in SPECS])
    shuffled.extend(random.Random(seed + 1).sample(results, len(results)))
    kept = build_report(examples, columns, **options)  # type: ignore[arg-type]
    again = build_report(examples, shuffled, **options)  # type: ignore[arg-type]
    assert kept.model_dump_json() == whole.model_dump_json() == again.model_dump_json()
    assert whole.errors_by_type == {"SystemTimeout": whole.errors_by_type["SystemTimeout"]}
    assert whole.error_examples == {"SystemTimeout": "no answer within 30s"}


def test_columns_kept_for_other_scorers_are_refused() -> None:
    examples, results = _run(0)
    columns = ResultColumns(examples, ["label"])
    columns.extend(results)
    with pytest.raises(ValueError, match="kept for scorers"):
        build_report(examples, columns, **OPTIONS)  # type: ignore[arg-type]


def test_columns_keep_alike_scores_once_and_leave_outputs_and_texts_to_the_store() -> None:
    examples = [Example(id=f"e{i}", input={}) for i in range(3)]
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
    columns = ResultColumns(examples, ["label"])
    columns.extend(pairs)
    first, second, third = columns.scores[0]
    assert first is second is third
    assert first is not None
    assert first.explanation == ""
    assert list(columns.latencies) == [0.0, 1.0, 2.0]
    assert list(columns.answered) == [1, 1, 1]
    assert not hasattr(columns, "outputs")
    assert pairs[0].scores[0].explanation == "long text 0"  # the whole result is untouched


def test_a_runs_pairs_are_made_as_read_in_the_order_a_list_of_them_had() -> None:
    from arbiter.harness.compact import RunPairs

    examples = [Example(id=f"e{i}", input={}) for i in range(4)]
    pairs = RunPairs(examples, 3)
    listed = [(e, rep) for e in examples for rep in range(3)]
    assert len(pairs) == 12
    assert list(pairs) == listed
    assert [pairs[i] for i in range(-12, 12)] == listed + listed
    assert pairs[2:7:2] == listed[2:7:2]
    with pytest.raises(IndexError):
        pairs[12]


def test_a_kept_pair_weighs_tens_of_bytes_not_a_result() -> None:
    import tracemalloc

    n = 20_000
    examples = [Example(id=f"e{i}", input={}) for i in range(n)]
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
                    explanation=f"expected 'yes', got 'yes' ({i})",
                )
            ],
            passed=True,
            latency_ms=float(i),
        )
        for i in range(n)
    ]
    columns = ResultColumns(examples, ["label"])  # its id index is made before measuring
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    columns.extend(pairs)
    kept = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert len(columns) == n
    # A compact PairResult per pair (the driver's copy before columns) was ~400 bytes.
    assert kept / n < 64
