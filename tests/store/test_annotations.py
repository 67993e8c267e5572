"""The annotation store: append-only, latest per annotator, the frozen ruling kept."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from arbiter.contract import Annotation, Evidence, FrozenRuling, Score
from arbiter.store import Store
from arbiter.store import annotations_repository as repository
from arbiter.store.annotations_repository import (
    add_annotations,
    annotation_history,
    latest_annotations,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _ruling(verdict: str = "pass", judge: str = "groundedness") -> FrozenRuling:
    return FrozenRuling.model_validate(
        {"judge": judge, "verdict": verdict, "score": 0.9, "evidence": [{"quote": "q"}]}
    )


def _annotation(
    label: str = "agree",
    *,
    item: str = "t1",
    annotator: str = "ann",
    minutes: int = 0,
    ruling: FrozenRuling | None = None,
    note: bool = False,
    **extra: object,
) -> Annotation:
    return Annotation.model_validate(
        {
            "item_id": item,
            "dimension": "groundedness",
            "label": label,
            "ruling": None if note else (ruling or _ruling()),
            "annotator": annotator,
            "created_at": T0 + timedelta(minutes=minutes),
            **extra,
        }
    )


def test_the_repository_offers_no_update_or_delete() -> None:
    assert set(repository.__all__) == {
        "add_annotations",
        "annotation_history",
        "latest_annotations",
    }


def test_a_flip_is_a_new_row_and_the_history_keeps_both(store: Store) -> None:
    add_annotations(store, [_annotation("agree", minutes=0)])
    add_annotations(store, [_annotation("disagree", minutes=5)])
    assert [a.label for a in annotation_history(store)] == ["agree", "disagree"]
    assert [a.label for a in latest_annotations(store)] == ["disagree"]


def test_latest_is_per_item_dimension_and_annotator(store: Store) -> None:
    add_annotations(
        store,
        [
            _annotation("agree", annotator="ann", minutes=0),
            _annotation("disagree", annotator="bob", minutes=1),
            _annotation("disagree", annotator="ann", minutes=2),
            _annotation("fail", annotator="ann", item="t2", minutes=3),
        ],
    )
    latest = {(a.item_id, a.annotator): a.label for a in latest_annotations(store)}
    assert latest == {("t1", "ann"): "disagree", ("t1", "bob"): "disagree", ("t2", "ann"): "fail"}


def test_latest_goes_by_time_not_by_insertion_order(store: Store) -> None:
    add_annotations(store, [_annotation("disagree", minutes=9), _annotation("agree", minutes=1)])
    assert [a.label for a in latest_annotations(store)] == ["disagree"]


def test_the_frozen_ruling_is_read_back_as_stored(store: Store) -> None:
    shown = _ruling("fail")
    add_annotations(store, [_annotation("agree", ruling=shown)])
    # A re-score flips the judge later; what the human saw is not rewritten.
    add_annotations(store, [_annotation("fail", item="t9", ruling=_ruling("pass"))])
    (first,) = [a for a in annotation_history(store) if a.item_id == "t1"]
    assert first.ruling == shown
    assert first.ruling is not None
    assert first.ruling.evidence == (Evidence(quote="q"),)
    assert first.human_passed is False


def test_reads_filter_by_judge_and_dimension(store: Store) -> None:
    add_annotations(
        store,
        [_annotation("agree"), _annotation("agree", item="t2", ruling=_ruling(judge="safety"))],
    )
    assert [a.item_id for a in latest_annotations(store, judge="safety")] == ["t2"]
    assert latest_annotations(store, dimension="other") == []


def test_untrusted_text_round_trips_exactly(store: Store) -> None:
    add_annotations(store, [_annotation("fail", comment="nul \x00 and \u2028", note=True)])
    (stored,) = annotation_history(store)
    assert stored.comment == "nul \x00 and \u2028"
    assert stored.is_note


def test_a_timestamp_comes_back_aware_in_utc(store: Store) -> None:
    from datetime import timezone

    local = datetime(2026, 1, 1, 12, tzinfo=timezone(timedelta(hours=2)))
    add_annotations(store, [_annotation("agree").model_copy(update={"created_at": local})])
    (stored,) = annotation_history(store)
    assert stored.created_at == local


@pytest.mark.parametrize(
    ("label", "verdict", "expected"),
    [
        ("agree", "pass", True),
        ("agree", "fail", False),
        ("disagree", "pass", False),
        ("disagree", "fail", True),
        ("agree", "unknown", None),
        ("pass", "fail", True),
        ("fail", "pass", False),
    ],
)
def test_the_humans_own_verdict(label: str, verdict: str, expected: bool | None) -> None:
    assert _annotation(label, ruling=_ruling(verdict)).human_passed is expected


def test_agreeing_needs_a_ruling_to_agree_with() -> None:
    with pytest.raises(ValidationError, match="needs the ruling"):
        Annotation.model_validate(
            {"item_id": "t", "dimension": "d", "label": "agree", "annotator": "a", "created_at": T0}
        )


def test_a_naive_timestamp_is_refused() -> None:
    with pytest.raises(ValidationError, match="timezone-aware"):
        _annotation("pass").model_validate(
            {**_annotation("pass").model_dump(), "created_at": datetime(2026, 1, 1)}
        )


def test_a_later_rescore_does_not_rewrite_the_ruling_the_human_saw(store: Store) -> None:
    shown = Score(name="groundedness", value=0.2, passed=False, evidence=[Evidence(quote="x")])
    add_annotations(store, [_annotation("agree", ruling=FrozenRuling.of(shown))])
    # The judge is re-scored: the score object the ruling was read from changes.
    shown.passed = True
    shown.value = 0.9
    shown.evidence[0].quote = "rewritten"
    (stored,) = latest_annotations(store)
    assert stored.ruling == FrozenRuling(
        judge="groundedness", verdict="fail", score=0.2, evidence=(Evidence(quote="x"),)
    )
    assert stored.human_passed is False


@pytest.mark.parametrize(
    ("score", "verdict"),
    [
        (Score(name="j", passed=True), "pass"),
        (Score(name="j", passed=False), "fail"),
        (Score(name="j", passed=None), "unknown"),
        (Score(name="j", passed=False, error="timeout"), "unknown"),
    ],
)
def test_a_ruling_frozen_from_a_score(score: Score, verdict: str) -> None:
    assert FrozenRuling.of(score).verdict == verdict
