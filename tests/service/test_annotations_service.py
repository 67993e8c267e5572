"""annotate / import_annotations / list_annotations: frozen rulings, notes, owners, files."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from arbiter.contract import Evidence, FrozenRuling, Score
from arbiter.errors import InputError
from arbiter.service.annotations import annotate, import_annotations, list_annotations
from arbiter.service.calibration import calibrate_store
from arbiter.store import Store
from arbiter.store.annotations_repository import annotation_history

T0 = datetime(2026, 3, 1, tzinfo=UTC)
RULING = {"judge": "groundedness", "verdict": "fail", "score": 0.2}


def lines(path: Path, rows: list[dict[str, Any] | str]) -> Path:
    path.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), "utf-8"
    )
    return path


def test_a_label_freezes_the_score_it_was_given_on(store: Store) -> None:
    score = Score(name="groundedness", passed=False, value=0.2, evidence=[Evidence(quote="q")])
    stored = annotate(store, "t1", "groundedness", "agree", "ana", ruling=score, now=T0)
    score.passed, score.evidence[0].quote = True, "rewritten"  # a later re-score
    (kept,) = list_annotations(store)
    assert kept == stored
    assert kept.ruling == FrozenRuling(
        judge="groundedness", verdict="fail", score=0.2, evidence=(Evidence(quote="q"),)
    )
    assert kept.human_passed is False


def test_a_direct_label_without_a_ruling_is_a_note(store: Store) -> None:
    note = annotate(store, "t1", "groundedness", "pass", "ana", comment="looks right")
    assert note.is_note
    report = calibrate_store(store)
    assert report.judges == []
    assert report.excluded["notes"] == 1


def test_agreeing_needs_the_ruling_shown(store: Store) -> None:
    with pytest.raises(InputError, match="needs the ruling it is about"):
        annotate(store, "t1", "groundedness", "agree", "ana")
    assert annotation_history(store) == []


@pytest.mark.parametrize(
    ("ruling", "match"),
    [
        ({"judge": "g", "verdict": "maybe"}, r"ruling: field 'verdict'"),
        ({"verdict": "pass"}, r"ruling: field 'judge'"),
    ],
)
def test_a_bad_ruling_is_an_input_error_naming_the_field(
    store: Store, ruling: dict[str, Any], match: str
) -> None:
    with pytest.raises(InputError, match=match):
        annotate(store, "t1", "groundedness", "agree", "ana", ruling=ruling)


def test_labels_are_listed_per_owner_and_latest_per_annotator(store: Store) -> None:
    annotate(store, "t1", "g", "agree", "ana", ruling=RULING, owner="key-a", now=T0)
    later = annotate(
        store, "t1", "g", "disagree", "ana", ruling=RULING, owner="key-a", now=T0 + timedelta(1)
    )
    other = annotate(
        store, "t1", "g", "agree", "ana", ruling=RULING, owner="key-b", now=T0 + timedelta(2)
    )
    cli = annotate(store, "t2", "g", "fail", "ops", now=T0)
    assert list_annotations(store, owner="key-a") == [later]  # key-b's later row hides nothing
    assert len(list_annotations(store, owner="key-a", latest=False)) == 2
    assert list_annotations(store) == [cli]
    assert list_annotations(store, everyone=True) == [cli, other]
    assert list_annotations(store, everyone=True, item="t2") == [cli]
    assert list_annotations(store, everyone=True, limit=1) == [other]


def test_a_file_is_imported_whole_with_the_importers_owner(store: Store, tmp_path: Path) -> None:
    path = lines(
        tmp_path / "labels.jsonl",
        [
            {"item_id": "t1", "dimension": "g", "label": "agree", "ruling": RULING},
            {"item_id": "t2", "dimension": "g", "label": "pass", "annotator": "ben"},
        ],
    )
    stored = import_annotations(store, path, annotator="ana", owner="key-a", now=T0)
    assert [(a.item_id, a.annotator, a.owner, a.created_at) for a in stored] == [
        ("t1", "ana", "key-a", T0),
        ("t2", "ben", "key-a", T0),
    ]
    assert list_annotations(store, owner="key-a") == stored


@pytest.mark.parametrize(
    ("row", "match"),
    [
        ("{not json", r"labels.jsonl:2:"),
        ("[1, 2]", r"labels.jsonl:2: expected an annotation object, got array"),
        ({"item_id": "t", "dimension": "g", "label": "maybe"}, r"labels.jsonl:2: field 'label'"),
        (
            {"item_id": "t", "dimension": "g", "label": "agree", "annotator": "a"},
            r"labels.jsonl:2: .*needs the ruling",
        ),
        (
            {"item_id": "t", "dimension": "g", "label": "pass", "owner": "me"},
            r"labels.jsonl:2: field 'owner'",
        ),
        ({"item_id": "t", "dimension": "g", "label": "pass"}, r"labels.jsonl:2: field 'annotator'"),
    ],
)
def test_a_bad_line_names_file_and_line_and_stores_nothing(
    store: Store, tmp_path: Path, row: dict[str, Any] | str, match: str
) -> None:
    good = {"item_id": "t1", "dimension": "g", "label": "pass", "annotator": "ana"}
    path = lines(tmp_path / "labels.jsonl", [good, row])
    with pytest.raises(InputError, match=match):
        import_annotations(store, path)
    assert annotation_history(store) == []


def test_an_empty_file_is_an_input_error(store: Store, tmp_path: Path) -> None:
    path = lines(tmp_path / "labels.jsonl", [])
    with pytest.raises(InputError, match="no annotations"):
        import_annotations(store, path)
