"""JSON printed by Arbiter is inert on a terminal and parses back to the same data."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arbiter.cli.common import echo_json
from arbiter.escape import json_text

OBEYED = ["\x1b[2J", "\x9b31m", "\u202e", "\u2066", "\u200b", "\ufeff", "\x7f", "\r"]


@pytest.mark.parametrize("hostile", [*OBEYED, "\ud800"])
def test_nothing_a_terminal_obeys_is_printed_raw(hostile: str) -> None:
    text = json_text({"answer": f"a{hostile}b"})
    assert hostile not in text
    text.encode("utf-8")  # a lone surrogate would make this raise


@given(
    st.recursive(st.text() | st.integers(), lambda c: st.lists(c) | st.dictionaries(st.text(), c))
)
def test_the_text_parses_back_to_the_same_data(payload: Any) -> None:
    assert json.loads(json_text(payload)) == payload


def test_readable_text_stays_as_it_is() -> None:
    assert json_text({"city": "Brasília 東京"}, indent=None) == '{"city": "Brasília 東京"}'


def test_echo_json_prints_the_inert_text(capsys: pytest.CaptureFixture[str]) -> None:
    echo_json({"label": "\x9b2J\ud800"})
    out = capsys.readouterr().out
    assert json.loads(out) == {"label": "\x9b2J\ud800"}
    assert "\x9b" not in out
