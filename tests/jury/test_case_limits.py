"""What the store cannot keep is refused before anything is written: a NUL in a case's
texts (at file:line and the field, as the dataset loader does), a case id longer than
its column, a critic name or model longer than theirs (exit 3, no jury run stored)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from arbiter.contract import Case
from arbiter.datasets import load_dataset
from arbiter.errors import InputError
from arbiter.jury.cases import load_cases
from arbiter.jury.critics import DEFAULT_ROSTER
from arbiter.jury.jury import Jury
from arbiter.service.arbitrate import arbitrate
from arbiter.service.jury import judge_cases
from arbiter.store import Store
from arbiter.store.jury_repository import list_jury_runs

CASE = {"id": "c1", "task": "Summarize.", "context": "It is 30 days.", "output": "It is 30 days."}
LONG_ID = "x" * 201


def _jury_runs(folder: Path) -> list[Any]:
    """The jury runs of the CLI fixture's store (none when it was never created)."""
    if not (folder / "store.db").exists():
        return []
    store = Store(f"sqlite:///{folder / 'store.db'}")
    try:
        return list_jury_runs(store)
    finally:
        store.close()


def _lines(folder: Path, *rows: dict[str, Any]) -> Path:
    path = folder / "cases.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("row", "field"),
    [
        ({**CASE, "task": "Sum\x00marize."}, "task"),
        ({**CASE, "output": "30\x00days"}, "output"),
        ({**CASE, "metadata": {"notes": ["ok", "bad\x00"]}}, "metadata.notes[1]"),
        ({**CASE, "metadata": {"k\x00ey": 1}}, "metadata.k\x00ey"),
        (
            {
                **CASE,
                "defects": [{"dimension": "accuracy", "kind": "unsupported", "quote": "\x00"}],
            },
            "defects[0].quote",
        ),
    ],
)
def test_a_nul_in_a_case_is_refused_at_its_line_and_field(
    tmp_path: Path, row: dict[str, Any], field: str
) -> None:
    path = _lines(tmp_path, CASE | {"id": "c0"}, row)
    with pytest.raises(InputError) as caught:
        load_cases(path)
    assert str(caught.value) == (
        f"{path}:2: field {field!r}: must not contain a NUL character (U+0000)"
    )


def test_a_nul_escaped_in_the_json_text_is_found_too(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps(CASE).replace("30 days.", "30\\u0000days.", 1) + "\n")
    assert "\\u0000" in path.read_text()
    with pytest.raises(InputError, match=r"cases.jsonl:1: field 'context': must not contain"):
        load_cases(path)


def test_a_case_row_of_a_dataset_is_refused_the_same_way(tmp_path: Path) -> None:
    path = _lines(tmp_path, {**CASE, "context": "a\x00b"})
    with pytest.raises(InputError, match=r"cases.jsonl:1: field 'context': must not contain"):
        load_dataset(path)


def test_a_case_id_longer_than_the_store_keeps_is_refused_at_its_line(tmp_path: Path) -> None:
    path = _lines(tmp_path, CASE, {**CASE, "id": LONG_ID})
    with pytest.raises(InputError) as caught:
        load_cases(path)
    assert str(caught.value) == (
        f"{path}:2: field 'id': 201 characters, more than the 200 the store keeps"
    )
    assert len(load_cases(_lines(tmp_path, {**CASE, "id": "x" * 200}))[0].id) == 200


@pytest.mark.parametrize("row", [{**CASE, "id": LONG_ID}, {**CASE, "task": "a\x00"}])
def test_judge_refuses_the_file_with_exit_3_and_stores_nothing(
    cli: Any, tmp_path: Path, row: dict[str, Any]
) -> None:
    path = _lines(tmp_path, row)
    result = cli("judge", "--file", str(path), "--no-audit")
    assert result.code == 3
    assert result.err.startswith(f"arbiter: error: {path}:1: field ")
    assert result.err.count("\n") == 1
    assert _jury_runs(tmp_path) == []


def test_a_roster_critic_name_longer_than_the_store_keeps_is_refused(
    cli: Any, tmp_path: Path
) -> None:
    roster = tmp_path / "roster.json"
    critic = DEFAULT_ROSTER[0].model_dump(mode="json") | {"name": "n" * 201}
    roster.write_text(json.dumps([critic]), encoding="utf-8")
    result = cli("judge", "--case", "clean_01", "--roster", str(roster), "--no-audit")
    assert result.code == 3
    assert f"{roster}: [0]: field 'name': 201 characters; the store keeps at most 200" in (
        result.err
    )


def test_judge_cases_checks_every_case_before_the_run_is_created(store: Store) -> None:
    cases = [Case(**CASE), Case(**{**CASE, "id": LONG_ID})]
    with pytest.raises(InputError, match="case 2 has an id of 201 characters"):
        asyncio.run(
            judge_cases(
                store,
                "judge",
                list(DEFAULT_ROSTER),
                cases,
                config={},
                audit_root=None,
                concurrency=1,
                signer=None,
            )
        )
    assert list_jury_runs(store) == []


def test_an_arbitration_with_a_long_case_id_stores_nothing(store: Store) -> None:
    jury = Jury(DEFAULT_ROSTER)
    with pytest.raises(InputError, match="the store keeps case ids of at most 200"):
        asyncio.run(arbitrate(store, jury, Case(**{**CASE, "id": LONG_ID}), owner=None))
    assert list_jury_runs(store) == []
