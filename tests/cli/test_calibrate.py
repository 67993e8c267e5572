"""``arbiter calibrate`` on pairs files and on the annotations in the store."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score

from arbiter.contract import Annotation, FrozenRuling
from arbiter.store import Store
from arbiter.store.annotations_repository import add_annotations
from tests.conftest import Result

Cli = Callable[..., Result]


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.UndefinedMetricWarning")
@pytest.mark.filterwarnings("ignore:A single label was found:UserWarning")
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.tuples(st.sampled_from(["pass", "fail"]), st.sampled_from(["pass", "fail", "meh"])),
        min_size=1,
        max_size=40,
    )
)
def test_calibrate_reproduces_sklearn_kappa_on_random_pairs(
    cli: Cli, tmp_path: Path, labels: list[tuple[str, str]]
) -> None:
    rows = [{"id": f"i{n}", "judge_label": j, "human_label": h} for n, (j, h) in enumerate(labels)]
    result = cli("calibrate", str(_jsonl(tmp_path / "pairs.jsonl", rows)), "--json")
    assert result.code == 0, result.err
    (judge,) = json.loads(result.out)["judges"]
    expected = cohen_kappa_score(
        [j for j, _ in labels], [h for _, h in labels], replace_undefined_by=math.nan
    )
    assert judge["kappa"]["value"] == (None if math.isnan(expected) else expected)


def test_columns_and_dimension_are_named_by_options(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "pairs.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "model", "gold", "aspect"])
        writer.writerows([[f"i{n}", "true", "true", "tone"] for n in range(3)])
        writer.writerows([["j1", "false", "", "facts"], ["j2", "false", "false", "facts"]])
    result = cli(
        "calibrate", str(path), "--judge-column", "model", "--human-column", "gold",
        "--by", "aspect", "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    judges = {j["dimension"]: j for j in json.loads(result.out)["judges"]}
    assert judges["tone"]["n_pairs"] == 3
    assert judges["tone"]["labels"] == ["pass"]
    assert (judges["facts"]["n_pairs"], judges["facts"]["n_human_unknown"]) == (1, 1)


def test_the_jury_calibrates_like_any_judge(cli: Cli, tmp_path: Path) -> None:
    decisions = ["ACCEPT", "REJECT", "REVISE", "REJECT", "ACCEPT", "REVISE"] * 2
    truth = ["ACCEPT", "REJECT", "REVISE", "REVISE", "ACCEPT", "REVISE"] * 2
    rows = [
        {"id": f"case-{n}", "judge": "jury", "decision": d, "expected": t}
        for n, (d, t) in enumerate(zip(decisions, truth, strict=True))
    ]
    path = _jsonl(tmp_path / "jury.jsonl", rows)
    args = ["calibrate", str(path), "--judge-column", "decision", "--human-column", "expected"]
    result = cli(*args, "--positive", "REJECT", "--json")
    assert result.code == 0, result.err
    (jury,) = json.loads(result.out)["judges"]
    assert jury["judge"] == "jury"
    assert jury["kappa"]["value"] == cohen_kappa_score(decisions, truth)
    assert (jury["precision"]["value"], jury["recall"]["value"]) == (0.5, 1.0)
    assert jury["status"] == "calibrated"
    shown = cli(*args, "--positive", "REJECT")
    assert "jury: calibrated" in shown.out
    assert "kappa      0.750" in shown.out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"judge_label": "pass", "human_label": "fail"}\n{"human_label": "x"}\n',
         "pairs.jsonl:2: no 'judge_label' column"),
        ('{"judge_label": [1], "human_label": "fail"}\n',
         "pairs.jsonl:1: 'judge_label' must be a label"),
        ('{"judge_label": "pass", "human_label": "fail"}\n[1, 2]\n',
         "pairs.jsonl:2: expected an object"),
        ('{"judge_label": "pass", "human_label": ' + json.dumps("x" * 300) + "}\n",
         "pairs.jsonl:1: 'human_label' is 300 characters"),
        ("{oops\n", "pairs.jsonl:1"),
        ("", "pairs.jsonl: no pairs"),
    ],
)  # fmt: skip
def test_a_bad_row_is_an_input_error_naming_file_and_line(
    cli: Cli, tmp_path: Path, content: str, message: str
) -> None:
    (tmp_path / "pairs.jsonl").write_text(content, encoding="utf-8")
    result = cli("calibrate", str(tmp_path / "pairs.jsonl"))
    assert result.code == 3
    assert message in result.err
    assert "Traceback" not in result.err


def test_a_short_csv_row_names_its_line(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "p.csv").write_text("judge_label,human_label\npass,fail\npass\n")
    result = cli("calibrate", str(tmp_path / "p.csv"))
    assert result.code == 3
    assert "p.csv:3: row has 1 cells" in result.err


@pytest.mark.parametrize("args", [[], ["x.jsonl", "--store"]])
def test_file_or_store_exactly_one(cli: Cli, args: list[str]) -> None:
    result = cli("calibrate", *args)
    assert result.code == 3
    assert "give a pairs FILE or --store" in result.err


def test_calibrate_from_the_store_uses_the_latest_label_and_the_frozen_ruling(
    cli: Cli, tmp_path: Path
) -> None:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)

    def label(item: str, label: str, verdict: str | None, minutes: int = 0) -> Annotation:
        ruling = None if verdict is None else FrozenRuling(judge="groundedness", verdict=verdict)  # type: ignore[arg-type]
        return Annotation(
            item_id=item, dimension="groundedness", label=label, ruling=ruling,  # type: ignore[arg-type]
            annotator="ann", created_at=t0 + timedelta(minutes=minutes),
        )  # fmt: skip

    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    add_annotations(
        store,
        [
            *(label(f"ok{n}", "agree", "pass") for n in range(6)),
            *(label(f"bad{n}", "agree", "fail") for n in range(5)),
            label("bad0", "disagree", "fail", minutes=1),  # a flip: the latest row wins
            label("note", "fail", None),
        ],
    )
    result = cli("calibrate", "--store", "--json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    (judge,) = report["judges"]
    assert judge["judge"] == "groundedness"
    assert judge["n_pairs"] == 11
    assert judge["agreement"]["value"] == 10 / 11
    assert report["excluded"] == {"notes": 1, "propagated": 0}
    assert "left out: 1 notes" in cli("calibrate", "--store").out


def test_terminal_output_is_escaped(cli: Cli, tmp_path: Path) -> None:
    rows = [{"judge": "j\x1b[2J", "judge_label": "pass", "human_label": "pass"}]
    result = cli("calibrate", str(_jsonl(tmp_path / "p.jsonl", rows)))
    assert result.code == 0, result.err
    assert "\x1b" not in result.out
    assert "too_few_pairs" in result.out


def test_a_judge_column_named_judge_is_the_label_not_the_judges_name(
    cli: Cli, tmp_path: Path
) -> None:
    # Regression: the column ``judge`` was also read as the judge's name, so the pairs
    # were grouped by their label ("pass" / "fail") instead of forming one judge.
    rows = [
        {"id": f"i{n}", "judge": j, "human": h}
        for n, (j, h) in enumerate([("pass", "pass"), ("fail", "fail"), ("pass", "fail")] * 4)
    ]
    path = _jsonl(tmp_path / "pairs.jsonl", rows)
    result = cli(
        "calibrate", str(path), "--judge-column", "judge", "--human-column", "human", "--json"
    )
    assert result.code == 0, result.err
    (judge,) = json.loads(result.out)["judges"]
    assert judge["judge"] == "judge"
    assert judge["n_pairs"] == 12
    assert judge["kappa"]["value"] == cohen_kappa_score(
        [r["judge"] for r in rows], [r["human"] for r in rows]
    )


@pytest.mark.parametrize("column", ["verdict", "gold"])
def test_by_naming_a_label_column_is_an_input_error(cli: Cli, tmp_path: Path, column: str) -> None:
    path = _jsonl(tmp_path / "p.jsonl", [{"verdict": "pass", "gold": "pass"}])
    result = cli(
        "calibrate", str(path), "--judge-column", "verdict", "--human-column", "gold",
        "--by", column,
    )  # fmt: skip
    assert result.code == 3
    assert f"--by {column!r} is the" in result.err
