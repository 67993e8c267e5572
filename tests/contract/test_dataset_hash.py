"""The dataset's content hash, computed example by example, is the digest it always was."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arbiter.contract import Dataset, Example


def old_content_hash(dataset: Dataset) -> str:
    """The formula of 0.3 to 0.5, kept verbatim: the whole list dumped to one string."""
    payload = [e.canonical_dump() for e in dataset.examples]
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


_text = st.text(
    alphabet=st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=12
)
_json: Any = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**20), max_value=10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=4),
    max_leaves=12,
)
_blank_free = _text.filter(lambda s: bool(s.strip()))


@st.composite
def datasets(draw: st.DrawFn) -> Dataset:
    n = draw(st.integers(min_value=1, max_value=12))
    examples = [
        Example(
            id=f"{draw(_blank_free)}-{i}",
            input=draw(st.dictionaries(_text, _json, max_size=4)),
            expected_label=draw(st.none() | _blank_free),
            expected=draw(_json),
            output=draw(_json),
            cohort=draw(st.none() | _text),
            metadata=draw(st.dictionaries(_text, _json, max_size=3)),
        )
        for i in range(n)
    ]
    return Dataset(examples=examples)


@settings(max_examples=300, deadline=None)
@given(datasets())
def test_streamed_hash_equals_the_old_formula(dataset: Dataset) -> None:
    assert dataset.content_hash == old_content_hash(dataset)


@pytest.mark.parametrize(
    "examples",
    [
        [Example(id="a", input={})],  # every optional field empty: left out of the hash
        [Example(id="é-ü", input={"q": "日本語 🙂", "n": [1, 2.5, None]}, expected_label="ja")],
        [Example(id="x", input={"b": 1, "a": {"z": {}, "y": []}}, expected={"k": [True]})],
        [Example(id=f"e{i}", input={"q": "x" * 50}, expected="x") for i in range(5000)],
    ],
    ids=["empty-optional", "unicode", "nested", "longer-than-a-buffer"],
)
def test_hash_of_chosen_datasets_equals_the_old_formula(examples: list[Example]) -> None:
    dataset = Dataset(examples=examples)
    assert dataset.content_hash == old_content_hash(dataset)


def test_hash_pinned_for_a_known_dataset() -> None:
    # Pinned: a store's runs are resumable only while their dataset's hash is unchanged.
    dataset = Dataset(examples=[Example(id="a", input={"q": 1}, expected_label="yes")])
    text = '[{"cohort":null,"expected_label":"yes","id":"a","input":{"q":1},"metadata":{}}]'
    assert dataset.content_hash == hashlib.sha256(text.encode()).hexdigest()


def test_hash_depends_on_each_example() -> None:
    one = Dataset(examples=[Example(id="a", input={"q": 1}), Example(id="b", input={"q": 2})])
    other = Dataset(examples=[Example(id="a", input={"q": 1}), Example(id="b", input={"q": 3})])
    assert one.content_hash != other.content_hash
