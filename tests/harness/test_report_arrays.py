"""The report folded over arrays (issue 21) is the report as it was, byte for byte.

A copy of :func:`build_report` as it was at 646d368 (per-example dicts and lists, at the
bottom of this file) is the oracle: on generated runs (repetitions missing, given twice, of examples
outside the scope; True / False / unknown outcomes, errors; several scorers with values,
answers, expected categories, bands, errors and model calls; cohorts; ``label`` with a
label map, a scorer with a category map) both give the same JSON, from a list of results
and from columns filled in any order.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, overload

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arbiter.contract import (
    Band,
    ClassificationMetrics,
    CohortMetrics,
    Completeness,
    Example,
    Interval,
    LatencySummary,
    ModelCalls,
    Output,
    PairResult,
    Report,
    RunStatus,
    Score,
    ScorerSection,
    ScorerSpec,
)
from arbiter.harness.compact import OUTCOMES, ResultColumns
from arbiter.harness.report import (
    _bootstraps,
    _category_map,
    _label_map,
    _summed,
    _wilson,
    build_report,
    example_outcomes,
    per_example_outcomes,
)
from arbiter.scoring.metrics import apply_label_map, classification_metrics, map_label

SPECS = [
    ScorerSpec(name="label", args={"label_map": {"A": "pos", "B": "pos", "C": "neg"}}),
    ScorerSpec(name="label", alias="plain_label"),
    ScorerSpec(name="f1_tokens"),
    ScorerSpec(name="rubric", kind="model"),
    ScorerSpec(name="step_count", gating=False),
    ScorerSpec(
        name="jury",
        kind="model",
        args={"category_map": {"ACCEPT": "clean", "REVISE": "defective", "REJECT": "defective"}},
    ),
]
ANSWERS = ["A", "B", "C", "ACCEPT", "REVISE", "REJECT"]
EXPECTED = [None, "", "A", "B", "C", "clean", "defective", "ACCEPT", "REJECT"]
VALUES = [None, 0.0, 1.0, 0.5, 0.25, 3.75, -2.0, 1e308, 0.1, float("inf")]
BANDS: list[Band | None] = [None, "healthy", "review", "danger"]


def _score(
    rng: random.Random, name: str, shared: dict[int, Score], values: Sequence[float | None]
) -> Score:
    """A score of ``name``; often an object given before (columns share alike scores)."""
    if shared and rng.random() < 0.4:
        return rng.choice(list(shared.values()))
    has_model = rng.random() < 0.5
    score = Score(
        name=name,
        value=rng.choice(values if rng.random() < 0.3 else values[:4]),
        answer=rng.choice([None, *ANSWERS]),
        expected=rng.choice(EXPECTED),
        passed=rng.choice([True, False, None]),
        band=rng.choice(BANDS),
        error="ProviderTimeout: late" if rng.random() < 0.15 else None,
        model=ModelCalls(
            calls=1,
            input_tokens=rng.randint(1, 50),
            latency_ms=rng.random(),
            cost_usd=rng.choice([None, rng.random() / 7]),
        )
        if has_model
        else None,
        explanation="why",
    )
    shared[len(shared)] = score
    return score


def _run(
    seed: int, n: int, k: int, specs: Sequence[ScorerSpec], values: Sequence[float | None] = VALUES
) -> tuple[list[Example], list[PairResult]]:
    rng = random.Random(seed)
    examples = [
        Example(
            id=f"e{i}",
            input={"q": i},
            expected=rng.choice([None, "A", "B", "C", "", 3]),
            expected_label=rng.choice([None, None, "B"]),
            cohort=rng.choice([None, "a", "b", "c"]),
        )
        for i in range(n)
    ]
    shared: dict[int, Score] = {}
    results = []
    ids = [e.id for e in examples] + ["outside"]
    for example_id in ids:
        for repetition in range(k):
            for _ in range(rng.choice([0, 1, 1, 1, 1, 2])):  # missing, once, twice
                failed = rng.random() < 0.15
                scores = [
                    _score(rng, spec.label, shared, values)
                    for spec in specs
                    if not failed and rng.random() < 0.9
                ]
                rng.shuffle(scores)  # a pair's scores need not follow the run's scorers
                results.append(
                    PairResult(
                        example_id=example_id,
                        repetition=repetition,
                        output=None if failed else Output.coerce({"label": "A"}),
                        scores=scores,
                        passed=rng.choice([True, False, None]),
                        error_type=rng.choice(["SystemTimeout", "Crash"]) if failed else None,
                        error_message=f"no answer {rng.randint(0, 3)}" if failed else None,
                        latency_ms=rng.choice([0.0, 1.5, rng.random() * 100]),
                    )
                )
    rng.shuffle(results)
    return examples, results


def _options(specs: Sequence[ScorerSpec], seed: int, k: int) -> dict[str, Any]:
    return {
        "dataset_name": "d",
        "dataset_hash": "h",
        "system": "s",
        "k": k,
        "seed": seed,
        "scorers": list(specs),
        "elapsed_seconds": 2.0,
        "completeness": Completeness(done=3, expected=4),
    }


def _columns(
    examples: Sequence[Example], results: Sequence[PairResult], specs: Sequence[ScorerSpec]
) -> ResultColumns:
    columns = ResultColumns(examples, [spec.label for spec in specs])
    columns.extend(results)
    return columns


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**20),
    n=st.integers(1, 7),
    k=st.integers(1, 3),
    picked=st.lists(st.sampled_from(range(len(SPECS))), unique=True, max_size=len(SPECS)),
)
def test_the_report_of_arrays_is_the_report_of_dicts_byte_for_byte(
    seed: int, n: int, k: int, picked: list[int]
) -> None:
    specs = [SPECS[i] for i in picked]
    examples, results = _run(seed, n, k, specs)
    options = _options(specs, seed % 5, k)
    try:
        expected = old_build_report(examples, results, **options).model_dump_json()
    except ValueError as error:  # no result in scope: refused alike
        with pytest.raises(ValueError, match=str(error)):
            build_report(examples, results, **options)
        return
    assert build_report(examples, results, **options).model_dump_json() == expected
    kept = _columns(examples, results, specs)
    assert build_report(examples, kept, **options).model_dump_json() == expected
    assert old_build_report(examples, kept, **options).model_dump_json() == expected


@pytest.mark.parametrize("seed", range(6))
def test_the_report_of_a_bigger_run_is_the_report_of_dicts(seed: int) -> None:
    examples, results = _run(seed, 400, 3, SPECS, values=VALUES[:-1])  # no infinite mean
    options = _options(SPECS, seed, 3)
    expected = old_build_report(examples, results, **options).model_dump_json()
    assert build_report(examples, results, **options).model_dump_json() == expected
    report = Report.model_validate_json(expected)
    # The run exercises what the arrays fold: cohorts, measures, both mapped views, errors.
    assert set(report.cohorts) == {"a", "b", "c"}
    assert report.sections["f1_tokens"].value is not None
    assert report.mapped is not None
    assert report.sections["jury"].mapped is not None
    assert set(report.errors_by_type) == {"SystemTimeout", "Crash"}


class _ReadOnce(Sequence[Example]):
    """Examples that may be iterated once and never indexed, as a lazily decoded
    dataset is best read."""

    def __init__(self, examples: list[Example]) -> None:
        self.examples, self.passes = examples, 0

    def __len__(self) -> int:
        return len(self.examples)

    @overload
    def __getitem__(self, index: int) -> Example: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Example]: ...
    def __getitem__(self, index: int | slice) -> Example | Sequence[Example]:
        raise AssertionError("the examples were indexed")

    def __iter__(self) -> Iterator[Example]:
        self.passes += 1
        return iter(self.examples)


@pytest.mark.parametrize("as_columns", [False, True])
def test_the_examples_are_read_in_one_pass(as_columns: bool) -> None:
    examples, results = _run(7, 50, 2, SPECS)
    options = _options(SPECS, 0, 2)
    expected = old_build_report(examples, results, **options).model_dump_json()
    given_results: Sequence[PairResult] | ResultColumns = results
    if as_columns:
        given_results = _columns(examples, results, SPECS)
    once = _ReadOnce(examples)
    assert build_report(once, given_results, **options).model_dump_json() == expected
    assert once.passes == 1


def test_the_outcomes_of_examples_are_those_of_the_public_helpers() -> None:
    # The report's per-example figures fold what the public helpers give (of a repetition
    # given twice, the later result), as before.
    examples, results = _run(3, 30, 3, [])
    report = build_report(examples, results, **_options([], 0, 3))
    summary = example_outcomes(per_example_outcomes(examples, results))
    assert report.n_examples == len(summary)
    assert report.undecided_examples == sum(o is None for o in summary.values())


# build_report as it was at 646d368, the oracle: a copy kept as it was (only the helpers
# it shares with the new one, which did not change, are imported).


def old_build_report(
    examples: Sequence[Example],
    results: Sequence[PairResult] | ResultColumns,
    *,
    dataset_name: str,
    dataset_hash: str,
    system: str,
    k: int,
    seed: int = 0,
    scorers: Sequence[ScorerSpec] = (),
    run_id: str | None = None,
    elapsed_seconds: float | None = None,
    status: RunStatus = "completed",
    completeness: Completeness | None = None,
) -> Report:
    """build_report as it was at 646d368, kept as it was."""
    labels = [spec.label for spec in scorers]
    if isinstance(results, ResultColumns):
        columns = results
        if columns.scorers != labels:
            raise ValueError(f"the results were kept for scorers {columns.scorers}, not {labels}")
    else:
        columns = ResultColumns(examples, labels)
        columns.extend(results)
    if not len(columns):
        raise ValueError("the run has no results to report on")
    # A stable sort, as sorting the results by the same key was.
    order: list[int] = np.lexsort((columns.repetitions, columns.positions)).tolist()
    positions = columns.positions
    passed = [OUTCOMES[columns.passed[row]] for row in order]

    sections = {
        spec.label: _section(spec, columns, index, order, examples, seed)
        for index, spec in enumerate(scorers)
    }
    label_section = sections.get("label")
    label_map = _label_map(label_section.spec) if label_section else None

    by_example: dict[int, dict[int, bool | None]] = {}
    for row, outcome in zip(order, passed, strict=True):
        by_example.setdefault(positions[row], {})[columns.repetitions[row]] = outcome
    # In dataset order already: the rows are ordered by their example's place.
    outcomes = {place: [reps[i] for i in sorted(reps)] for place, reps in by_example.items()}
    del by_example
    decided_pairs = [outcome for outcome in passed if outcome is not None]
    per_example = example_outcomes(outcomes)
    decided = [i for i, outcome in per_example.items() if outcome is not None]
    all_passed = np.array([per_example[i] is True for i in decided], dtype=float)
    mean_passed = np.array([_share(outcomes[i]) for i in decided], dtype=float)

    cohorts: dict[str, CohortMetrics] = {}
    by_cohort: dict[str, list[int]] = {}
    for place, e in enumerate(examples):
        if e.cohort is not None and place in outcomes:
            by_cohort.setdefault(e.cohort, []).append(place)
    for cohort in sorted(by_cohort):
        ids = by_cohort[cohort]
        flat = [c is True for i in ids for c in outcomes[i] if c is not None]
        settled = [per_example[i] for i in ids if per_example[i] is not None]
        cohorts[cohort] = CohortMetrics(
            n=len(ids),
            accuracy=_wilson(sum(flat), len(flat)),
            pass_k=sum(c is True for c in settled) / len(settled) if settled else 0.0,
        )

    errors = Counter(error_type for error_type, _ in columns.errors.values())
    latencies = np.frombuffer(columns.latencies, dtype=np.float64)[order]
    latency = LatencySummary(
        p50_ms=float(np.percentile(latencies, 50)),
        p95_ms=float(np.percentile(latencies, 95)),
        p99_ms=float(np.percentile(latencies, 99)),
        mean_ms=float(latencies.mean()),
    )
    n = len(order)
    throughput = n / elapsed_seconds if elapsed_seconds else None
    pass_hat_k, pass_at_1 = _bootstraps([all_passed, mean_passed], seed)
    model = _summed(s.model for s in sections.values())

    return Report(
        run_id=run_id,
        status=status,
        completeness=completeness,
        dataset=dataset_name,
        dataset_hash=dataset_hash,
        system=system,
        k=k,
        n_examples=len(outcomes),
        seed=seed,
        label_map=label_map,
        scorers=list(scorers),
        sections=sections,
        accuracy=_wilson(sum(decided_pairs), len(decided_pairs)),
        undecided=n - len(decided_pairs),
        strict=label_section.classification if label_section else None,
        mapped=label_section.mapped if label_section else None,
        pass_hat_k=pass_hat_k,
        pass_at_1=pass_at_1,
        undecided_examples=len(outcomes) - len(decided),
        cohorts=cohorts,
        errors_by_type=dict(sorted(errors.items())),
        error_examples=_first_messages(columns, order),
        error_rate=sum(errors.values()) / n,
        latency=latency,
        examples_per_second=throughput,
        model=model,
    )


def _section(
    spec: ScorerSpec,
    columns: ResultColumns,
    index: int,
    order: Sequence[int],
    examples: Sequence[Example],
    seed: int,
) -> ScorerSection:
    """The figures of the run's ``index``-th scorer over the run's pairs (``order``:
    the rows of ``columns`` in report order; failed calls count as failed)."""
    name = spec.label
    column = columns.scores[index]
    scores = [column[row] for row in order]
    places = [columns.positions[row] for row in order]
    expected_of = _expected_categories(spec, places, scores, examples)
    passed = failed = abstained = errored = 0
    bands: Counter[Band] = Counter()
    # Outcomes are folded as they come, not listed per example: containers built per
    # pair live through the report, and the cyclic collector walks them again and again.
    settled: dict[int, bool | None] = {}
    values: dict[int, list[float]] = {}
    y_true: list[str] = []
    y_pred: list[str | None] = []
    answered = columns.answered
    for row, place, score in zip(order, places, scores, strict=True):
        outcome: bool | None
        if score is None:
            outcome = False if not answered[row] else None
            if outcome is None:
                abstained += 1  # a result stored before this scorer existed
        else:
            outcome = score.passed
            if score.error is not None:
                errored += 1
            elif outcome is None:
                abstained += 1
            if score.band is not None:
                bands[score.band] += 1
            if score.value is not None:
                values.setdefault(place, []).append(score.value)
        if outcome is True:
            passed += 1
        elif outcome is False:
            failed += 1
        settled[place] = _combined(settled.get(place, True), outcome)
        expected = score.expected if score is not None else None
        if expected is None:
            expected = expected_of.get(place)
        if expected is not None and (score is None or score.error is None):
            y_true.append(expected)
            y_pred.append(score.answer if score is not None else None)

    classification, mapped = _classifications(spec, y_true, y_pred)

    decided = [outcome for outcome in settled.values() if outcome is not None]
    pass_hat_k = None
    if decided:
        (pass_hat_k,) = _bootstraps([np.array(decided, dtype=float)], seed)
    value = None
    # A mean of values that are all 0 or 1 is the pass rate again: only measures get one.
    if values and any(v not in (0.0, 1.0) for vs in values.values() for v in vs):
        value = _mean_value([v for vs in values.values() for v in vs], values, seed)
    return ScorerSection(
        name=name,
        spec=spec,
        n=len(order),
        passed=passed,
        failed=failed,
        abstained=abstained,
        errored=errored,
        pass_rate=_wilson(passed, passed + failed) if passed + failed else None,
        pass_hat_k=pass_hat_k,
        classification=classification,
        mapped=mapped,
        value=value,
        bands=dict(sorted(bands.items())),
        model=_summed(s.model for s in scores if s is not None),
    )


def _combined(outcome: bool | None, repetition: bool | None) -> bool | None:
    """An example's outcome with one more repetition's, as :func:`example_outcomes`
    settles them: a failure wins, then an unknown; True is the start."""
    if outcome is False or repetition is False:
        return False
    if outcome is None or repetition is None:
        return None
    return True


def _expected_categories(
    spec: ScorerSpec,
    places: Sequence[int],
    scores: Sequence[Score | None],
    examples: Sequence[Example],
) -> dict[int, str]:
    """Per example (by its place), the category its answers are compared with, for
    pairs with no score (``scores`` holds the scorer's score of each pair, ``places``
    each pair's example).

    A failed call has no score, yet it counts against the scorer's classification report
    (a wrong answer, as scikit-learn counts a label outside the matrix): its expected
    category is the one the scorer gave the example's other repetitions, or for
    ``label`` the example's own label.
    """
    found = {
        place: s.expected
        for place, s in zip(places, scores, strict=True)
        if s is not None and s.expected
    }
    if spec.name == "label":
        for place, example in enumerate(examples):
            reference = example.reference_label
            if reference is not None:
                found.setdefault(place, reference)
    return found


def _share(reps: Sequence[bool | None]) -> float:
    settled = [r for r in reps if r is not None]
    return sum(settled) / len(settled)


def _mean_value(flat: list[float], values: Mapping[Any, list[float]], seed: int) -> Interval | None:
    """The mean of per-example mean values with its bootstrap interval.

    None when a value is infinite (no mean to speak of). Values are scaled by the
    largest magnitude first so that sums of values near the float maximum cannot
    overflow into an infinite or undefined interval.
    """
    scale = max(abs(v) for v in flat)
    if not math.isfinite(scale):
        return None
    scale = scale if scale > 1.0 else 1.0
    means = np.array([sum(v / scale for v in vs) / len(vs) for vs in values.values()])
    (interval,) = _bootstraps([means], seed)
    if scale == 1.0:
        return interval
    return interval.model_copy(
        update={
            "estimate": interval.estimate * scale,
            "low": interval.low * scale,
            "high": interval.high * scale,
        }
    )


def _first_messages(columns: ResultColumns, order: Sequence[int]) -> dict[str, str]:
    """The message of each error type's first pair, in report order."""
    first: dict[str, str] = {}
    errors = columns.errors
    if errors:
        for row in order:
            found = errors.get(row)
            if found is not None and found[0] not in first:
                first[found[0]] = found[1]
    return dict(sorted(first.items()))


def _classifications(
    spec: ScorerSpec, y_true: list[str], y_pred: list[str | None]
) -> tuple[ClassificationMetrics | None, ClassificationMetrics | None]:
    """The strict classification report and the mapped one (None where there is none).

    With a category map, an expected value that is a category (a value of the map, not
    a key) was only known at that level (a case labelled defective, not with its
    verdict): it counts in the mapped view alone.
    """
    if not y_true:
        return None, None
    mapping = _category_map(spec)
    if not mapping:
        return classification_metrics(y_true, y_pred), None
    coarse = set() if spec.name == "label" else set(mapping.values()) - set(mapping)
    fine = [(t, p) for t, p in zip(y_true, y_pred, strict=True) if t not in coarse]
    strict = classification_metrics([t for t, _ in fine], [p for _, p in fine]) if fine else None
    mapped_true = [t if t in coarse else map_label(t, mapping) for t in y_true]
    return strict, classification_metrics(mapped_true, apply_label_map(y_pred, mapping))
