"""The gate's run checks: a run that measured nothing never passes, whatever its floors."""

from __future__ import annotations

import pytest

from arbiter.contract import Completeness, Example, Output, PairResult, Report, ScorerSpec
from arbiter.harness.gate import (
    DEFAULT_MAX_ERROR_RATE,
    DEFAULT_MAX_UNDECIDED_RATE,
    DEFAULT_MIN_DECIDED,
    evaluate_gate,
)
from arbiter.harness.report import build_report


def _report(outcomes: list[bool | str | None], *, done: int | None = None) -> Report:
    """A run of one repetition per example: True / False passed or failed, None
    undecided, "error" a failed call."""
    examples = [Example(id=f"e{i}", input={}, expected="x") for i in range(len(outcomes))]
    results = []
    for example, outcome in zip(examples, outcomes, strict=True):
        if outcome == "error":
            results.append(
                PairResult(
                    example_id=example.id,
                    repetition=0,
                    passed=False,
                    error_type="SystemCrashed",
                    error_message="down",
                    latency_ms=1.0,
                )
            )
        else:
            results.append(
                PairResult(
                    example_id=example.id,
                    repetition=0,
                    output=Output(text="x"),
                    passed=outcome if isinstance(outcome, bool) else None,
                    latency_ms=1.0,
                )
            )
    return build_report(
        examples,
        results,
        dataset_name="d",
        dataset_hash="0" * 64,
        system="s",
        k=1,
        scorers=[ScorerSpec(name="exact")],
        completeness=Completeness(
            done=len(results) if done is None else done, expected=len(results)
        ),
    )


def _gate(report: Report, **options: float) -> list[str]:
    correct = {f"e{i}": [None] for i in range(report.n_examples)}
    result = evaluate_gate(report, correct, **options)  # type: ignore[arg-type]
    assert result.passed is not result.failures
    return result.failures


def test_a_healthy_run_passes_with_no_floor() -> None:
    assert _gate(_report([True] * 18 + [False] * 2)) == []


def test_a_run_whose_every_call_failed_fails_with_no_floor_set() -> None:
    (failure,) = _gate(_report(["error"] * 20))
    assert failure.startswith("errors: 20 of 20 calls failed (100.0%; at most 20.0% allowed")
    assert "SystemCrashed=20" in failure


def test_errors_fail_even_when_every_floor_is_met() -> None:
    report = _report([True] * 15 + ["error"] * 5)  # 25% errors, 75% accuracy
    failures = _gate(report, min_accuracy=0.7)
    assert [f.split(":")[0] for f in failures] == ["errors"]


def test_nearly_all_undecided_fails_with_a_named_reason() -> None:
    failures = _gate(_report([True] + [None] * 19), min_accuracy=0.5)
    assert failures == [
        "undecided: 19 of 20 pairs have no outcome, every gating scorer abstained or errored "
        "(95.0%; at most 50.0% allowed, --max-undecided-rate)"
    ]


def test_a_run_that_decided_nothing_fails_on_both_counts() -> None:
    failures = _gate(_report([None] * 3))
    assert [f.split(":")[0] for f in failures] == ["undecided", "too few decided pairs"]
    assert failures[1] == "too few decided pairs: 0 (at least 1 required, --min-decided)"


def test_too_few_decided_pairs_fail_against_a_raised_minimum() -> None:
    (failure,) = _gate(_report([True] * 9), min_decided=10)
    assert failure == "too few decided pairs: 9 (at least 10 required, --min-decided)"


@pytest.mark.parametrize(
    ("outcomes", "options"),
    [
        (["error"] * 20, {"max_error_rate": 1.0}),
        ([True] + [None] * 19, {"max_undecided_rate": 1.0, "min_decided": 1}),
        ([None] * 3, {"max_undecided_rate": 1.0, "min_decided": 0}),
    ],
)
def test_each_threshold_can_be_set(outcomes: list[bool | str | None], options: float) -> None:
    assert _gate(_report(outcomes), **options) == []  # type: ignore[arg-type]


def test_thresholds_are_strict_bounds() -> None:
    at_the_bound = _report([True] * 16 + ["error"] * 4)  # exactly 20% errors
    assert DEFAULT_MAX_ERROR_RATE == 0.2
    assert _gate(at_the_bound) == []
    half_undecided = _report([True] * 10 + [None] * 10)
    assert DEFAULT_MAX_UNDECIDED_RATE == 0.5
    assert DEFAULT_MIN_DECIDED == 1
    assert _gate(half_undecided) == []


def test_a_partial_run_never_passes_even_with_relaxed_checks() -> None:
    report = _report([True] * 20).model_copy(
        update={"status": "interrupted", "completeness": Completeness(done=20, expected=30)}
    )
    (failure,) = _gate(report, max_error_rate=1.0, max_undecided_rate=1.0, min_decided=0)
    assert "the run is interrupted with 20/30 pairs: a partial run never passes" in failure


def test_overfit_warning_counts_decided_examples_only() -> None:
    report = _report([True] + [None] * 19)
    result = evaluate_gate(report, {}, max_undecided_rate=1.0, min_decided=1)
    assert result.passed
    assert result.warnings == []


def test_run_checks_join_the_signed_floors_only_when_changed() -> None:
    from arbiter.attest import digest_of
    from arbiter.service.attestation import gate_record_id
    from arbiter.service.runs import GateFloors

    before_the_checks = {
        "min_accuracy": 0.5,
        "min_pass_k": None,
        "cohorts": {},
        "epsilon": 0.0,
        "baseline": None,
    }
    default = gate_record_id("r", GateFloors(min_accuracy=0.5), None)
    assert default == f"r:{digest_of(before_the_checks)[:16]}"  # ids signed earlier hold
    relaxed = gate_record_id("r", GateFloors(min_accuracy=0.5, max_error_rate=1.0), None)
    assert relaxed == f"r:{digest_of({**before_the_checks, 'max_error_rate': 1.0})[:16]}"
