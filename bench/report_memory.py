"""What build_report costs the driver at a million pairs (issue 21: under 500 MB).

Run: ``python bench/report_memory.py [--n 1000000] [--k 1] [--rounds 2]``.

Each figure is of a fresh process: it builds ``--n`` pairs' ResultColumns (one ``label``
scorer, as a running run keeps them: shared compact scores; a few pairs failed, examples
in three cohorts), then computes the report the old way (a copy of build_report as it
was at 646d368, kept here) or the new (the package's). The figure is the RSS
build_report added at its peak (``VmHWM`` reset through ``/proc/self/clear_refs`` just
before, minus the RSS then), and its time. Old and new alternate, round after round, so
both meet the same load on a shared machine. A benchmark, never a test: it prints, it
does not assert (but says whether the reports' bytes differ).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import math
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from arbiter.contract import (
    Band,
    ClassificationMetrics,
    CohortMetrics,
    Completeness,
    Example,
    Interval,
    LatencySummary,
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
)
from arbiter.scoring.metrics import apply_label_map, classification_metrics, map_label

LABELS = ("high", "low", "medium")
SPEC = ScorerSpec(name="label", args={"label_map": {"high": "yes", "low": "no", "medium": "no"}})


def _status(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _columns(n: int, k: int) -> tuple[list[Example], ResultColumns]:
    """``n`` pairs over ``n // k`` examples, added as results arrive (in a shuffled order)."""
    examples = [
        Example(id=f"b-{i}", input={"q": "x"}, expected=LABELS[i % 3], cohort="abc"[i % 7 % 3])
        for i in range(n // k)
    ]
    columns = ResultColumns(examples, [SPEC.label])
    scores = {
        (answer, expected): Score(
            name="label",
            value=float(answer == expected),
            answer=answer,
            expected=expected,
            passed=answer == expected,
            explanation=f"expected {expected!r}, got {answer!r}",
        )
        for answer in LABELS
        for expected in LABELS
    }
    output = Output.coerce({"label": "high"})
    rng = np.random.default_rng(0)
    for row in rng.permutation(len(examples) * k).tolist():
        place, repetition = divmod(row, k)
        expected = LABELS[place % 3]
        if row % 97 == 0:
            result = PairResult.model_construct(
                example_id=examples[place].id, repetition=repetition, output=None, scores=[],
                passed=False, error_type="SystemTimeout", error_message="no answer in 30 s",
                latency_ms=30_000.0,
            )  # fmt: skip
        else:
            answer = LABELS[(place + repetition + row % 5) % 3] if row % 4 else expected
            score = scores[(answer, expected)]
            result = PairResult.model_construct(
                example_id=examples[place].id, repetition=repetition, output=output,
                scores=[score], passed=score.passed, error_type=None, error_message=None,
                latency_ms=float(row % 1000) / 7,
            )  # fmt: skip
        columns.add(result)
    return examples, columns


def child(way: str, n: int, k: int) -> None:
    started = time.perf_counter()
    examples, columns = _columns(n, k)
    built_s = time.perf_counter() - started
    gc.collect()
    before = _status("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
    build = old_build_report if way == "old" else build_report
    started = time.perf_counter()
    report = build(
        examples, columns, dataset_name="big", dataset_hash="h", system="s", k=k,
        scorers=[SPEC], elapsed_seconds=100.0, completeness=Completeness(done=n, expected=n),
    )  # fmt: skip
    seconds = time.perf_counter() - started
    peak = _status("VmHWM")
    digest = hashlib.sha256(report.model_dump_json().encode()).hexdigest()
    print(json.dumps({"way": way, "n": n, "built_s": built_s, "before_mb": before,
                      "peak_mb": peak, "seconds": seconds, "digest": digest}))  # fmt: skip


def _run(way: str, n: int, k: int) -> dict[str, Any]:
    load = Path("/proc/loadavg").read_text().split()[0]
    out = subprocess.run(
        [sys.executable, __file__, "--child", way, str(n), str(k)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    figures: dict[str, Any] = json.loads(out.splitlines()[-1])
    figures["load"] = f"{load}-{Path('/proc/loadavg').read_text().split()[0]}"
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="pairs")
    parser.add_argument("--k", type=int, default=1, help="repetitions per example")
    parser.add_argument("--rounds", type=int, default=2, help="old/new pairs")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        way, n, k = options.child
        child(way, int(n), int(k))
        return 0
    print(f"report_memory: {options.n:,} pairs, k={options.k}, {os.cpu_count()} CPUs")
    digests = set()
    added: dict[str, list[float]] = {"old": [], "new": []}
    for round_ in range(options.rounds):
        for way in ("old", "new"):
            f = _run(way, options.n, options.k)
            digests.add(f["digest"])
            added[way].append(f["peak_mb"] - f["before_mb"])
            print(f"  {way}  round {round_ + 1}: columns built {f['before_mb']:7.1f} MB "
                  f"({f['built_s']:.1f} s), build_report +{added[way][-1]:6.1f} MB at its "
                  f"peak, {f['seconds']:.2f} s, load {f['load']}")  # fmt: skip
    print(f"  old/new added peak: {min(added['old']) / max(min(added['new']), 0.1):.1f}x; "
          f"{'the same report bytes' if len(digests) == 1 else 'REPORTS DIFFER'}")  # fmt: skip
    return 0


# build_report as it was at 646d368 (the old way), kept as it was; only the helpers it
# shares with the new one, which did not change, are imported.


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


if __name__ == "__main__":
    sys.exit(main())
