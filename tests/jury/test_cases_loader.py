"""Loading case files: the bundled cases, and one-line errors naming file:line:field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arbiter.errors import InputError
from arbiter.jury.cases import bundled_cases_path, load_cases

GOOD = {"id": "a", "task": "t", "context": "c", "output": "o", "expected": "ACCEPT"}


def _line(**overrides: object) -> str:
    return json.dumps({**GOOD, **overrides})


def test_bundled_cases_load_with_unique_ids_and_labels() -> None:
    path = bundled_cases_path()
    cases = load_cases(path)
    assert path.is_file()
    assert len(cases) >= 60
    assert len({c.id for c in cases}) == len(cases)
    assert all(c.defective is not None for c in cases)  # follows from expected
    assert sum(not c.defective for c in cases) >= 15


def test_blank_lines_and_a_byte_order_mark_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    text = f"{_line()}\n\n   \n{_line(id='b', expected='REJECT')}\n"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    cases = load_cases(path)
    assert [c.id for c in cases] == ["a", "b"]
    assert cases[1].defective is True


def test_a_case_without_id_is_named_after_the_file_and_its_position(tmp_path: Path) -> None:
    path = tmp_path / "summedits.jsonl"
    without_id = {k: v for k, v in GOOD.items() if k not in ("id", "expected")}
    path.write_text(f"{_line()}\n{json.dumps({**without_id, 'defective': True})}\n")
    cases = load_cases(path)
    assert cases[1].id == "summedits-2"
    assert cases[1].expected is None
    assert cases[1].defective is True


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (f"{_line()}\n{{not json\n", "cases.jsonl:2:2: invalid JSON"),
        (f"{_line(expected='MAYBE')}\n", "cases.jsonl:1: field 'expected'"),
        (
            json.dumps({"id": "a", "context": "c", "output": "o"}) + "\n",
            "field 'task': Field required",
        ),
        (
            f"{_line()}\n{_line(id='b')}\n{_line()}\n",
            "cases.jsonl:3: field 'id': duplicate id 'a' (first used at line 1)",
        ),
        (f"{_line(expected='ACCEPT', defective=True)}\n", "contradicts expected=ACCEPT"),
        (f"{_line(surprise=1)}\n", "cases.jsonl:1: field 'surprise': Extra inputs"),
        ("[1, 2]\n", "cases.jsonl:1: a case must be a JSON object, got array"),
        ('{"id": NaN}\n', "cases.jsonl:1: invalid JSON: NaN is not valid JSON"),
        ("", "cases.jsonl: no cases"),
        ("\n  \n", "cases.jsonl: no cases"),
    ],
)
def test_a_bad_case_file_fails_in_one_line_naming_where(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_cases(path)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_file_that_is_not_utf8_names_the_line_of_the_bad_byte(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_bytes(_line().encode() + b"\n" + b'{"id": "caf\xe9"}\n')
    with pytest.raises(InputError, match=r"cases\.jsonl:2: byte 0xe9 .* not valid UTF-8"):
        load_cases(path)


def test_a_directory_or_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is a directory"):
        load_cases(tmp_path)
    with pytest.raises(InputError, match="no such file"):
        load_cases(tmp_path / "absent.jsonl")
