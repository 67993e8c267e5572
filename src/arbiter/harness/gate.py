"""The release gate: run checks, floors, cohort floors and significant regressions.

Before any floor, the gate checks that the run measured something: a run that is not
complete, whose calls failed too often, whose pairs are mostly undecided, or that has
too few decided pairs fails with that reason whatever floors are set (the thresholds
have defaults; the caller may set them, never switch them off silently).

A regression against a baseline fails the gate only when it is both larger than
``epsilon`` and significant: the seeded paired-bootstrap 95% interval of the
per-example difference (current − baseline) lies entirely below zero.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
from pydantic import BaseModel, Field

from arbiter.contract import Report
from arbiter.contract.runs import (
    DEFAULT_MAX_ERROR_RATE,
    DEFAULT_MAX_UNDECIDED_RATE,
    DEFAULT_MIN_DECIDED,
)
from arbiter.stats import paired_bootstrap_diff

__all__ = [
    "DEFAULT_MAX_ERROR_RATE",
    "DEFAULT_MAX_UNDECIDED_RATE",
    "DEFAULT_MIN_DECIDED",
    "GateResult",
    "evaluate_gate",
    "run_check_failures",
]

OVERFIT_MIN_EXAMPLES = 10
"""A perfect score on at least this many examples is reported as an over-fit smell."""


class GateResult(BaseModel):
    """The gate's decision and every reason for it."""

    passed: bool
    """True when no failure was found."""
    failures: list[str] = Field(default_factory=list)
    """One line per missed floor or significant regression."""
    warnings: list[str] = Field(default_factory=list)
    """Things worth a look that do not fail the gate."""


def _fmt(value: float) -> str:
    return f"{value:.3f}"


def evaluate_gate(
    report: Report,
    correct: Mapping[str, Sequence[bool | None]],
    *,
    baseline: Report | None = None,
    baseline_correct: Mapping[str, Sequence[bool | None]] | None = None,
    min_accuracy: float | None = None,
    min_pass_k: float | None = None,
    cohort_floors: Mapping[str, float] | None = None,
    epsilon: float = 0.0,
    seed: int = 0,
    max_error_rate: float = DEFAULT_MAX_ERROR_RATE,
    max_undecided_rate: float = DEFAULT_MAX_UNDECIDED_RATE,
    min_decided: int = DEFAULT_MIN_DECIDED,
) -> GateResult:
    """Decide whether a run may ship; a run that is not complete never does, nor one that
    fails a run check (see :func:`run_check_failures`), whatever floors are set.

    Args:
        report: The report of the run under judgement.
        correct: Its per-example outcome per repetition (None: unknown).
        baseline: The report of the baseline run, if comparing.
        baseline_correct: The baseline's per-example outcomes.
        min_accuracy: Floor on accuracy: the share of decided pairs that passed (for a
            run scored by ``label`` alone, its label accuracy; mapped when a label map
            was used).
        min_pass_k: Floor on pass^k.
        cohort_floors: Floor on accuracy per cohort name.
        epsilon: Largest drop against the baseline tolerated even when significant.
        seed: Seed of the paired bootstrap.
        max_error_rate: Largest share of pairs whose call failed.
        max_undecided_rate: Largest share of pairs without a decided outcome.
        min_decided: Fewest decided pairs.
    """
    failures = run_check_failures(
        report,
        max_error_rate=max_error_rate,
        max_undecided_rate=max_undecided_rate,
        min_decided=min_decided,
    )
    warnings: list[str] = []
    accuracy = report.accuracy
    if min_accuracy is not None and accuracy.estimate < min_accuracy:
        failures.append(
            f"accuracy {_fmt(accuracy.estimate)} is below the floor {_fmt(min_accuracy)} "
            f"(95% CI {_fmt(accuracy.low)}–{_fmt(accuracy.high)}, n={accuracy.n})"
        )
    if min_pass_k is not None and report.pass_hat_k.estimate < min_pass_k:
        failures.append(
            f"pass^{report.k} {_fmt(report.pass_hat_k.estimate)} is below the floor "
            f"{_fmt(min_pass_k)} (95% CI {_fmt(report.pass_hat_k.low)}–"
            f"{_fmt(report.pass_hat_k.high)}, n={report.pass_hat_k.n})"
        )
    for cohort, floor in sorted((cohort_floors or {}).items()):
        figures = report.cohorts.get(cohort)
        if figures is None:
            known = ", ".join(sorted(report.cohorts)) or "none"
            failures.append(f"cohort {cohort!r} has no examples in this run (cohorts: {known})")
        elif figures.accuracy.estimate < floor:
            failures.append(
                f"cohort {cohort!r} accuracy {_fmt(figures.accuracy.estimate)} is below the floor "
                f"{_fmt(floor)} (n={figures.n})"
            )
    if baseline is not None and baseline_correct is not None:
        failures.extend(
            _regressions(report, correct, baseline, baseline_correct, epsilon, seed, warnings)
        )
    decided_examples = report.n_examples - report.undecided_examples
    if accuracy.estimate == 1.0 and decided_examples >= OVERFIT_MIN_EXAMPLES:
        warnings.append(
            f"100% accuracy on {decided_examples} examples: an over-fit smell — is the dataset "
            "too easy, or did the system see it?"
        )
    return GateResult(passed=not failures, failures=failures, warnings=warnings)


def run_check_failures(
    report: Report,
    *,
    max_error_rate: float = DEFAULT_MAX_ERROR_RATE,
    max_undecided_rate: float = DEFAULT_MAX_UNDECIDED_RATE,
    min_decided: int = DEFAULT_MIN_DECIDED,
) -> list[str]:
    """Why a run cannot pass whatever its floors, one line each; empty when it can.

    A run must be complete, its failed calls at most ``max_error_rate`` of its pairs,
    its undecided pairs at most ``max_undecided_rate`` of them, and at least
    ``min_decided`` pairs decided.
    """
    failures = []
    done = report.completeness
    if report.status != "completed" or (done is not None and not done.complete):
        shown = f" with {done.done}/{done.expected} pairs" if done is not None else ""
        failures.append(
            f"the run is {report.status}{shown}: a partial run never passes "
            f"(finish it: arbiter run --resume {report.run_id or 'RUN_ID'})"
        )
    decided = report.accuracy.n
    pairs = decided + report.undecided
    if pairs == 0:
        return [*failures, "the run has no result: there is nothing to gate"]
    failed_calls = sum(report.errors_by_type.values())
    if report.error_rate > max_error_rate:
        kinds = ", ".join(f"{kind}={n}" for kind, n in report.errors_by_type.items())
        failures.append(
            f"errors: {failed_calls} of {pairs} calls failed ({report.error_rate:.1%}; at most "
            f"{max_error_rate:.1%} allowed, --max-error-rate; {kinds})"
        )
    undecided_rate = report.undecided / pairs
    if undecided_rate > max_undecided_rate:
        failures.append(
            f"undecided: {report.undecided} of {pairs} pairs have no outcome, every gating "
            f"scorer abstained or errored ({undecided_rate:.1%}; at most "
            f"{max_undecided_rate:.1%} allowed, --max-undecided-rate)"
        )
    if decided < min_decided:
        failures.append(
            f"too few decided pairs: {decided} (at least {min_decided} required, --min-decided)"
        )
    return failures


def _regressions(
    report: Report,
    correct: Mapping[str, Sequence[bool | None]],
    baseline: Report,
    baseline_correct: Mapping[str, Sequence[bool | None]],
    epsilon: float,
    seed: int,
    warnings: list[str],
) -> list[str]:
    if baseline.dataset_hash != report.dataset_hash:
        warnings.append("the baseline ran on a different dataset; comparing the examples in common")
    common = [
        example_id
        for example_id, reps in correct.items()
        if _decided(reps) and _decided(baseline_correct.get(example_id, ()))
    ]
    if not common:
        return ["the run and the baseline have no example in common"]
    failures = []
    measures: dict[str, Callable[[Sequence[bool | None]], float]] = {
        "accuracy": _mean,
        f"pass^{report.k}": _all,
    }
    for name, per_example in measures.items():
        before = np.array([per_example(baseline_correct[i]) for i in common])
        after = np.array([per_example(correct[i]) for i in common])
        delta, low, high = paired_bootstrap_diff(before, after, seed=seed)
        if -delta > epsilon and high < 0:
            failures.append(
                f"{name} regressed by {_fmt(-delta)} against the baseline "
                f"(95% CI of the change {low:+.3f} to {high:+.3f}, n={len(common)} paired "
                f"examples; epsilon {_fmt(epsilon)})"
            )
        elif -delta > epsilon:
            warnings.append(
                f"{name} dropped by {_fmt(-delta)} against the baseline, but the 95% CI of the "
                f"change ({low:+.3f} to {high:+.3f}) includes 0: not significant"
            )
    return failures


def _decided(reps: Sequence[bool | None]) -> bool:
    return any(r is not None for r in reps)


def _mean(reps: Sequence[bool | None]) -> float:
    settled = [r for r in reps if r is not None]
    return sum(settled) / len(settled)


def _all(reps: Sequence[bool | None]) -> float:
    return float(all(r is True for r in reps))
