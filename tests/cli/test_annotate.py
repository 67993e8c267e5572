"""``arbiter annotate`` and ``arbiter annotations``: labels stored; bad input exits 3."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Result

Cli = Callable[..., Result]
AGREE = ("annotate", "t1", "groundedness", "--agree", "--judge", "groundedness")


def test_agreeing_with_a_ruling_is_stored_and_calibrated_on(cli: Cli) -> None:
    result = cli(*AGREE, "--verdict", "fail", "--annotator", "ana")
    assert result.code == 0, result.err
    assert result.out == "stored: t1 / groundedness: agree with groundedness's 'fail', by ana\n"
    listed = cli("annotations", "--json")
    (annotation,) = json.loads(listed.out)
    assert annotation["ruling"] == {
        "judge": "groundedness",
        "verdict": "fail",
        "score": None,
        "evidence": [],
    }
    assert (annotation["label"], annotation["owner"]) == ("agree", None)
    calibrated = cli("calibrate", "--store", "--json")
    (judge,) = json.loads(calibrated.out)["judges"]
    assert (judge["judge"], judge["n_pairs"]) == ("groundedness", 1)


def test_a_direct_label_without_a_ruling_is_stored_as_a_note(cli: Cli) -> None:
    result = cli("annotate", "t1", "scope", "--fail", "--annotator", "ana", "--note", "drifted")
    assert result.code == 0, result.err
    assert "a note: no ruling shown" in result.out
    listed = cli("annotations")
    assert listed.out.endswith(
        "t1 / scope: fail (a note: no ruling shown, not calibration evidence), by ana  (drifted)\n"
    )


def test_the_latest_label_per_annotator_is_listed_and_history_keeps_all(cli: Cli) -> None:
    cli(*AGREE, "--verdict", "fail", "--annotator", "ana")
    disagree = ("annotate", "t1", "groundedness", "--disagree", "--judge", "groundedness")
    cli(*disagree, "--verdict", "fail", "--annotator", "ana")
    assert cli("annotations").out.count("\n") == 1
    assert "disagree" in cli("annotations").out
    assert cli("annotations", "--history").out.count("\n") == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("annotate", "t1", "g"), "give one of --agree, --disagree, --pass, --fail"),
        (("annotate", "t1", "g", "--pass", "--fail"), "give one label, not --pass, --fail"),
        (("annotate", "t1", "g", "--agree"), "--agree is about the ruling you saw"),
        (
            ("annotate", "t1", "g", "--pass", "--judge", "j"),
            "takes both --judge NAME and --verdict",
        ),
        (("annotate", "t1", "g", "--pass", "--score", "0.5"), "--score is the judge's"),
        (("annotate",), "give ITEM and DIMENSION, or --file FILE"),
        ((*AGREE, "--verdict", "maybe"), "ruling: field 'verdict'"),
        (("annotate", "t1", "--file", "x.jsonl"), "--file takes the labels from the file"),
    ],
)
def test_bad_input_is_one_line_and_exit_3_and_stores_nothing(
    cli: Cli, args: tuple[str, ...], message: str
) -> None:
    result = cli(*args)
    assert result.code == 3
    assert message in result.err
    assert result.err.count("\n") == 1
    assert cli("annotations").out == "no annotations\n"


def test_a_file_is_imported_or_refused_at_its_file_and_line(cli: Cli, tmp_path: Path) -> None:
    good = {
        "item_id": "t1",
        "dimension": "g",
        "label": "agree",
        "ruling": {"judge": "g", "verdict": "pass"},
    }
    note = {"item_id": "t2", "dimension": "g", "label": "fail", "annotator": "ben"}
    path = tmp_path / "labels.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(note) + "\n", "utf-8")
    result = cli("annotate", "--file", str(path), "--annotator", "ana")
    assert result.code == 0, result.err
    assert result.out == f"stored 2 annotations from {path}: 1 on a ruling shown, 1 note\n"
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(good) + "\n" + json.dumps({**note, "label": "ok"}) + "\n", "utf-8")
    refused = cli("annotate", "--file", str(bad), "--annotator", "ana")
    assert refused.code == 3
    assert f"{bad}:2: field 'label'" in refused.err
    assert len(json.loads(cli("annotations", "--json").out)) == 2  # the bad file added nothing


def test_hostile_text_is_printed_inert(cli: Cli) -> None:
    result = cli("annotate", "t1\x1b[2J", "g", "--pass", "--annotator", "ana\x07")
    assert result.code == 0, result.err
    assert "\x1b" not in result.out
    assert "\x07" not in result.out
    assert "t1\\x1b[2J" in result.out
