"""A judge's calibration falling below the kappa floor: one inbox event on the edge.

The edge rule is a pure function with property tests; the service is checked on a real
SQLite store, with the people's votes as the kappa pairs (judge ``run_verdict``).
"""

from __future__ import annotations

import asyncio
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from arbiter.config import Settings
from arbiter.judges.calibration import CalibrationReport, LabelPair, calibrate
from arbiter.judges.judges import JUDGES
from arbiter.service.trust_calibration import check_calibration, judge_standing
from arbiter.service.votes import cast_vote
from arbiter.store import Store
from arbiter.store.trust_repository import list_events
from arbiter.trust.calibration_edge import CalibrationReading, calibration_edges
from tests.trust.helpers import save, stored

FLOOR = 0.6
MIN_PAIRS = 10
KEYS = [("g", "grounded"), ("g", "scope"), ("h", "grounded")]

readings = st.builds(
    CalibrationReading,
    judge=st.sampled_from(["g", "h"]),
    dimension=st.sampled_from(["grounded", "scope"]),
    kappa=st.one_of(st.floats(-1.0, 1.0), st.just(math.nan), st.just(FLOOR)),
    n_pairs=st.integers(0, 40),
)


def _key(reading: CalibrationReading) -> tuple[str, str]:
    return reading.judge, reading.dimension


one_check = st.lists(readings, max_size=4, unique_by=_key)  # a check reads a judge once
checks = st.lists(one_check, max_size=12)


def _run(checks_: list[list[CalibrationReading]]) -> tuple[list[int], dict[object, object]]:
    standing: dict[tuple[str, str], str] = {}
    counts = []
    for check in checks_:
        standing, drops = calibration_edges(  # type: ignore[assignment]
            standing,  # type: ignore[arg-type]
            check,
            floor=FLOOR,
            min_pairs=MIN_PAIRS,
        )
        counts.append(len(drops))
    return counts, standing  # type: ignore[return-value]


def _standing(reading: CalibrationReading) -> str | None:
    if reading.n_pairs < MIN_PAIRS:
        return None
    return "gating" if reading.kappa >= FLOOR else "advisory"  # nan compares False


@settings(max_examples=300, deadline=None)
@given(checks)
def test_a_drop_is_reported_once_per_fall_from_gating(
    sequence: list[list[CalibrationReading]],
) -> None:
    counts, _ = _run(sequence)
    # The reference: follow each judge's measurable standings and count gating -> advisory.
    expected = 0
    last: dict[tuple[str, str], str] = {}
    for check in sequence:
        for reading in check:
            now = _standing(reading)
            if now is None:
                continue
            key = (reading.judge, reading.dimension)
            expected += last.get(key) == "gating" and now == "advisory"
            last[key] = now
    assert sum(counts) == expected


@settings(max_examples=200, deadline=None)
@given(checks, one_check)
def test_the_same_check_again_reports_nothing(
    sequence: list[list[CalibrationReading]], check: list[CalibrationReading]
) -> None:
    _, standing = _run(sequence)
    after, _ = calibration_edges(standing, check, floor=FLOOR, min_pairs=MIN_PAIRS)  # type: ignore[arg-type]
    again, drops = calibration_edges(after, check, floor=FLOOR, min_pairs=MIN_PAIRS)
    assert drops == []
    assert again == after


@settings(max_examples=200, deadline=None)
@given(one_check)
def test_too_few_pairs_and_first_sightings_never_drop(check: list[CalibrationReading]) -> None:
    after, drops = calibration_edges({}, check, floor=FLOOR, min_pairs=MIN_PAIRS)
    assert drops == []  # nothing was gating before
    assert all(
        key in after for key in {(r.judge, r.dimension) for r in check if r.n_pairs >= MIN_PAIRS}
    )
    few = [CalibrationReading(r.judge, r.dimension, -1.0, MIN_PAIRS - 1) for r in check]
    gating = dict.fromkeys(KEYS, "gating")
    kept, none = calibration_edges(gating, few, floor=FLOOR, min_pairs=MIN_PAIRS)  # type: ignore[arg-type]
    assert none == []
    assert kept == gating


def test_a_judge_voted_below_the_floor_is_one_event_and_advisory(store: Store) -> None:
    runs = [stored(i, "helper", i % 2 == 0) for i in range(12)]
    save(store, runs)
    for run in runs:  # a person agrees with every verdict: kappa 1
        cast_vote(store, run.id, "up" if run.passed else "down", owner=None, viewer=None)
    assert judge_standing(store, "run_verdict", "helper") == "gating"
    assert list_events(store, kind="calibration_drop") == []
    for run in runs:  # another disagrees with every one: kappa falls to 0 on the way
        cast_vote(store, run.id, "down" if run.passed else "up", owner="key-b", viewer=None)
    (event,) = list_events(store, kind="calibration_drop")
    assert event.agent == "run_verdict"
    assert event.severity == "warning"
    assert event.record_id == "run_verdict/helper"
    assert event.details["standing"] == "advisory"
    assert isinstance(event.details["kappa"], float)
    assert event.details["kappa"] < FLOOR
    assert judge_standing(store, "run_verdict", "helper") == "advisory"
    # Later checks that still find it below the floor add nothing.
    assert check_calibration(store, settings=Settings(_env_file=None)) == []  # type: ignore[call-arg]
    assert len(list_events(store, kind="calibration_drop")) == 1


def test_the_floor_is_the_setting(store: Store) -> None:
    runs = [stored(i, "helper", i % 2 == 0) for i in range(12)]
    save(store, runs)
    for index, run in enumerate(runs):  # 10 of 12 agree: kappa 2/3
        agree = index >= 2
        vote = "up" if run.passed == agree else "down"
        cast_vote(store, run.id, vote, owner=None, viewer=None)
    lenient = Settings(_env_file=None, trust_kappa_floor=0.5)  # type: ignore[call-arg]
    strict = Settings(_env_file=None, trust_kappa_floor=0.9)  # type: ignore[call-arg]
    assert check_calibration(store, settings=lenient) == []
    assert judge_standing(store, "run_verdict", "helper") == "gating"
    (event,) = check_calibration(store, settings=strict)
    assert event.details["floor"] == 0.9
    assert check_calibration(store, settings=strict) == []


def _report(judge: str, dimension: str, agree: int, disagree: int) -> CalibrationReport:
    pairs = [
        LabelPair(label, label, judge, dimension, f"i{n}")
        for n, label in enumerate(["pass", "fail"] * (agree // 2))
    ] + [
        LabelPair(label, "fail" if label == "pass" else "pass", judge, dimension, f"d{n}")
        for n, label in enumerate(["pass", "fail"] * (disagree // 2))
    ]
    return calibrate(pairs, n_resamples=1)


def test_a_judge_fallen_below_the_floor_condemns_nothing(store: Store) -> None:
    from tests.trust.test_ingest_judges import CountingProvider, _judges, _run, _store_runs

    judge = "answer_groundedness"
    dimension = JUDGES[judge].dimension
    assert check_calibration(store, report=_report(judge, dimension, 20, 0), floor=FLOOR) == []
    [record] = _store_runs(store, _run(cost=9.0), owner="key-a")
    [judged] = asyncio.run(
        _judges(CountingProvider("fail")).judge_stored(store, [record], owner="key-a")
    )
    assert judged.condemned_by == [judge]  # gating: its failing ruling condemns
    (drop,) = check_calibration(store, report=_report(judge, dimension, 10, 10), floor=FLOOR)
    assert drop.details["judge"] == judge
    [later] = _store_runs(store, _run(cost=9.5), owner="key-a")
    [judged] = asyncio.run(
        _judges(CountingProvider("fail")).judge_stored(store, [later], owner="key-a")
    )
    assert judged.rulings[judge] == "fail"
    assert judged.condemned_by == []
    assert judged.advisory == [judge]
    assert judged.event_id is None
    kinds = [e.kind for e in list_events(store, viewer=None)]
    assert kinds.count("judge_condemnation") == 1


def test_labels_that_take_a_judge_below_the_floor_are_one_event(store: Store) -> None:
    from arbiter.contract import Score
    from arbiter.service.annotations import annotate

    def label(item: str, passed: bool, verdict: str) -> None:
        ruling = Score(name="groundedness", passed=passed, value=1.0 if passed else 0.0)
        annotate(store, item, "groundedness", verdict, "ana", ruling=ruling)  # type: ignore[arg-type]

    for n in range(12):  # the person agrees with the judge on every item
        label(f"a{n}", n % 2 == 0, "agree")
    assert list_events(store, kind="calibration_drop") == []
    for n in range(12):  # then disagrees on as many
        label(f"b{n}", n % 2 == 0, "disagree")
    (event,) = list_events(store, kind="calibration_drop")
    assert event.details["judge"] == "groundedness"
    assert event.details["dimension"] == "groundedness"
