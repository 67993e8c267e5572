"""The fast reader (orjson, with checks) gives exactly what the exact reader gives.

:func:`arbiter.datasets.jsonio.parse_json` parses with orjson when that is safe and falls
back to the standard library's reader otherwise. These tests hold the two to the same
answers: every value equal (types included), every refusal the same kind and message.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from arbiter.datasets import jsonio
from arbiter.datasets.jsonio import MAX_DEPTH, JsonInputError, parse_json

pytest.importorskip("orjson")


def _exact(text: str, *, unique_keys: bool = True, allow_non_finite: bool = False) -> Any:
    """What the standard reader alone answers (the fast path turned off)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(jsonio, "orjson", None)
        return parse_json(
            text, source="f", unique_keys=unique_keys, allow_non_finite=allow_non_finite
        )


def _assert_same(text: str, **options: Any) -> None:
    try:
        expected: Any = ("value", _exact(text, **options))
    except JsonInputError as exc:
        expected = ("error", exc.kind, str(exc))
    try:
        found: Any = ("value", parse_json(text, source="f", **options))
    except JsonInputError as exc:
        found = ("error", exc.kind, str(exc))
    assert found == expected, text[:200]
    if found[0] == "value":
        assert _types(found[1]) == _types(expected[1]), text[:200]


def _types(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _types(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_types(item) for item in value]
    return type(value).__name__


def test_a_repeated_key_is_refused_wherever_it_hides() -> None:
    for text in (
        '{"a":1,"a":2}',
        '{"a": 1, "b": {"c": [1, {"d": 1, "d": 1}]}}',
        '{"x":"\\u003a","a":1,"a":1}',  # an escaped colon does not make up for the lost key
        '{"a":{"k:":1},"b":2,"a":{"k:":1}}',
        '[{"a":1},{"b":1,"b":{"c":1}}]',
    ):
        with pytest.raises(JsonInputError, match="duplicate key"):
            parse_json(text, source="f")
        _assert_same(text)
        _assert_same(text, unique_keys=False)
    assert parse_json('{"a":1,"a":2}', source="f", unique_keys=False) == {"a": 2}


def test_long_integers_stay_integers() -> None:
    for text in (
        "123456789012345678901234567890",
        '{"n": -9223372036854775809}',
        '{"n":18446744073709551616}',
        "[1, 99999999999999999999999]",
        '{"t":"1767225600000000000","n":12345678901234567890123}',
        "1" * 5000,
    ):
        _assert_same(text)
    assert parse_json('{"n":12345678901234567890123}', source="f") == {"n": 12345678901234567890123}


def test_what_the_exact_reader_refuses_is_refused_the_same_way() -> None:
    deep = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
    wide_deep = '{"s":"' + "[" * 300 + '","v":' + deep + "}"
    for text in (
        "NaN",
        '{"a": Infinity}',
        "1e999",
        '"\\ud800"',
        '"\\udc00x"',
        '{"a":1,}',
        "\ufeff{}",
        deep,
        wide_deep,
        "[" * 2000 + "]" * 2000,
        '"a\x01"',
    ):
        _assert_same(text)
        _assert_same(text, allow_non_finite=True)


def test_the_depth_limit_is_exact() -> None:
    for depth in (MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1):
        for inner in ("", "1", '{"k":"]]]]"}'):
            text = "[" * depth + inner + "]" * depth
            _assert_same(text)
            text = '{"s":"' + "{" * 200 + '","v":' + text + "}"
            _assert_same(text)


def test_random_documents_read_the_assert_same() -> None:
    rng = random.Random(17)
    strings = ["", "a", "é", "😀", ":", "\\", '"', "]}", "\u2028", "\x00", "k:v", "\ud83d\ude00"]

    def scalar() -> Any:
        pick = rng.random()
        if pick < 0.2:
            return rng.choice(strings) + rng.choice(strings)
        if pick < 0.4:
            return rng.randint(-(10**25), 10**25) if rng.random() < 0.3 else rng.randint(-99, 99)
        if pick < 0.6:
            return rng.uniform(-1e6, 1e6) * 10 ** rng.randint(-300, 300)
        return rng.choice([None, True, False, 0, -0.0, 1.5e-320])

    def value(depth: int) -> Any:
        if depth <= 0 or rng.random() < 0.3:
            return scalar()
        if rng.random() < 0.5:
            return [value(depth - 1) for _ in range(rng.randint(0, 4))]
        return {rng.choice(strings) + str(i): value(depth - 1) for i in range(rng.randint(0, 4))}

    for _ in range(2_000):
        tree = value(rng.randint(0, 6))
        for text in (
            json.dumps(tree),
            json.dumps(tree, ensure_ascii=False, separators=(",", ":")),
            json.dumps(tree, indent=1),
        ):
            _assert_same(text)
            if text.startswith("{") and len(text) > 2:
                # the same document with its first key given again
                first = text[1 : text.index(":", 1 + text.index('"', 2))]
                _assert_same("{" + first + ":0," + text[1:])


def test_a_large_text_is_checked_for_depth_without_a_copy_that_grows_with_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import orjson

    written: list[int] = []

    class Recording:
        JSONDecodeError = orjson.JSONDecodeError
        JSONEncodeError = orjson.JSONEncodeError
        OPT_INDENT_2 = orjson.OPT_INDENT_2
        loads = staticmethod(orjson.loads)

        @staticmethod
        def dumps(value: Any, option: int = 0) -> bytes:
            out = orjson.dumps(value, option=option)
            written.append(len(out))
            return out

    monkeypatch.setattr(jsonio, "orjson", Recording)
    # 400 kB of leaves MAX_DEPTH levels down, beside a few empty arrays (more brackets
    # than levels: the depth must be checked).
    leaves = ",".join(["1"] * 200_000)
    chain = "[" * (MAX_DEPTH - 1) + leaves + "]" * (MAX_DEPTH - 1)
    legal = "[" + "[]," * 10 + chain + "]"
    assert parse_json(legal, source="f") == json.loads(legal)
    # Written again with an indent, each leaf would take 2 * 128 spaces: some 50 MB.
    assert max(written) < 2 * len(legal), max(written)
    with pytest.raises(JsonInputError, match="nested deeper than 128 levels"):
        parse_json("[" + legal + "]", source="f")
    monkeypatch.undo()
    _assert_same('{"s":"' + "[" * 70_000 + '","v":' + "[" + legal + "]" + "}")
