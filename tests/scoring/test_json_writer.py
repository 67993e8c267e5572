"""json_writer writes what json.dumps writes with the same options, and fails alike."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arbiter.scoring.json_writer import json_writer

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)
OPTIONS: list[dict[str, Any]] = [
    {},
    {"ensure_ascii": False},
    {"sort_keys": True, "separators": (",", ":"), "ensure_ascii": False},
    {"sort_keys": True, "separators": (",", ":")},
]


@pytest.mark.parametrize("options", OPTIONS, ids=str)
@given(value=VALUES)
def test_it_writes_what_json_dumps_writes(options: dict[str, Any], value: Any) -> None:
    assert json_writer(**options)(value) == json.dumps(value, **options)


@pytest.mark.parametrize(
    ("value", "error"),
    [({"a": {1, 2}}, TypeError), ([10**5000], ValueError), ({1: "a", "b": 2}, TypeError)],
    ids=["a set", "an int past str()'s limit", "keys that cannot be sorted"],
)
def test_a_value_json_cannot_write_raises_as_json_dumps_does(value: Any, error: type) -> None:
    with pytest.raises(error):
        json.dumps(value, sort_keys=True)
    with pytest.raises(error):
        json_writer(sort_keys=True)(value)


def test_a_value_that_contains_itself_raises_a_recursion_error() -> None:
    looped: list[Any] = []
    looped.append(looped)
    with pytest.raises(RecursionError):
        json_writer()(looped)
