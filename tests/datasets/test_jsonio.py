"""The one JSON reader: duplicate keys and over-long integers are refused where they are."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arbiter.datasets.jsonio import JsonInputError, parse_json, parse_json_line, read_json_file


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{"a": 1, "a": 2}', "f:1:10"),
        ('{"a": {"b": 1,\n  "c": [1, {"d": 0, "d": 0}]}}', "f:2:21"),
        ('[{"x": 1}, {"x": 1, "y": 2, "x": 3}]', "f:1:29"),
    ],
)
def test_a_duplicate_key_is_refused_at_its_second_occurrence(text: str, where: str) -> None:
    with pytest.raises(JsonInputError) as caught:
        parse_json(text, source="f")
    assert caught.value.kind == "duplicate_key"
    assert str(caught.value).startswith(f"{where}: duplicate key ")
    assert "(give each key once)" in str(caught.value)


def test_the_same_key_in_sibling_objects_is_not_a_duplicate() -> None:
    assert parse_json('[{"a": 1}, {"a": 2}, {"a": {"a": 3}}]', source="f")[2] == {"a": {"a": 3}}


def test_a_jsonl_line_names_its_line_and_column() -> None:
    with pytest.raises(JsonInputError) as caught:
        parse_json_line(b'{"id": "a", "id": "b"}\r\n', source="f.jsonl", line=7)
    assert (
        str(caught.value) == "f.jsonl:7:13: duplicate key 'id' in one object (give each key once)"
    )


def test_every_input_file_read_by_the_reader_refuses_duplicates(tmp_path: Path) -> None:
    label_map = tmp_path / "map.json"
    label_map.write_text('{"low": "low",\n "high": "high",\n "low": "high"}', encoding="utf-8")
    with pytest.raises(JsonInputError, match=r"map\.json:3:2: duplicate key 'low'"):
        read_json_file(label_map, what="label map")


def test_a_hot_stream_may_keep_the_last_value() -> None:
    assert parse_json('{"a": 1, "a": 2}', source="f", unique_keys=False) == {"a": 2}
    assert parse_json('{"a": 1, "a": NaN}', source="f", allow_non_finite=True, unique_keys=False)


def test_an_integer_too_long_to_convert_is_named_with_its_length_and_place() -> None:
    text = '{"s": "' + "1" * 5000 + '",\n "n": -' + "7" * 5000 + "}"
    with pytest.raises(JsonInputError) as caught:
        parse_json(text, source="f")
    message = str(caught.value)
    assert caught.value.kind == "too_long"
    assert message == (
        "f:2:7: the integer here has 5,000 digits, more than the 4,300 a number may have "
        "(write it as a string)"
    )


@pytest.mark.parametrize(
    ("text", "too_deep"),
    [
        ("[" * 128 + "]" * 128, False),
        ("[" * 129 + "]" * 129, True),
        ('{"a": ' * 128 + "1" + "}" * 128, False),
        ('{"a": ' * 64 + "[" * 65 + "]" * 65 + "}" * 64, True),
        ("[" + ", ".join(["[[1], {}]"] * 500) + "]", False),  # wide, not deep
        ('["' + "[" * 300 + '"]', False),  # brackets in a string are text
        ('[["\\"[[[[", {"k": "]]"}]]', False),
    ],
)
def test_depth_is_counted_from_the_text_exactly(text: str, too_deep: bool) -> None:
    if too_deep:
        with pytest.raises(JsonInputError, match="nested deeper than 128 levels"):
            parse_json(text, source="f")
    else:
        parse_json(text, source="f")


def test_a_lone_surrogate_deep_in_a_wide_document_is_found() -> None:
    text = "[" + ", ".join(['{"a": ["ok"]}'] * 300) + ', {"b": ["\\ud800"]}]'
    with pytest.raises(JsonInputError, match="lone UTF-16 surrogate") as caught:
        parse_json(text, source="f")
    assert caught.value.kind == "surrogate"


@pytest.mark.parametrize(
    "text",
    [
        # closers hidden in a string before the deepest point: the depth is still 129
        '["]]]]]]]]", ' + "[" * 128 + "]" * 128 + "]",
        '["\\\\", ' + "[" * 128 + "]" * 128 + "]",  # an escaped backslash ends the string
        '["\\"]]]]\\"", ' + "[" * 128 + "]" * 128 + "]",  # escaped quotes stay inside
    ],
)
def test_strings_cannot_hide_the_depth(text: str) -> None:
    json.loads(text)  # valid JSON
    with pytest.raises(JsonInputError, match="nested deeper than 128 levels"):
        parse_json(text, source="f")


def _tree_depth(value: object) -> int:
    """The nesting depth of arrays and objects, walking the parsed value."""
    if isinstance(value, dict):
        return 1 + max((_tree_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_tree_depth(v) for v in value), default=0)
    return 0


def test_the_depth_read_from_the_text_is_the_depth_of_the_tree() -> None:
    import random

    from arbiter.datasets.jsonio import _nested_deeper_than

    rng = random.Random(7)
    leaves = ['a"]}', "é[{", 1, None, "\\", 'x\\"[', "ü]", "\\\\", ""]

    def value(depth: int) -> object:
        if depth <= 0 or rng.random() < 0.2:
            return rng.choice(leaves)
        if rng.random() < 0.5:
            return [value(depth - 1) for _ in range(rng.randint(0, 3))]
        return {f'k{i}]"{{': value(depth - 1) for i in range(rng.randint(0, 3))}

    for _ in range(1_500):
        tree = value(rng.randint(1, 12))
        depth = _tree_depth(tree)
        for ascii_only in (True, False):
            text = json.dumps(tree, ensure_ascii=ascii_only)
            for limit in (0, 1, 2, 3, 5, 8):
                assert _nested_deeper_than(text, limit) == (depth > limit), (text, limit)
