"""The one-line name of a system under test, as reports, ``arbiter runs`` and --dry-run show it."""

from __future__ import annotations

from typing import Any

import pytest

from arbiter.harness.describe import describe_system_short


@pytest.mark.parametrize(
    ("description", "shown"),
    [
        ({"kind": "python", "target": "pkg.mod:fn"}, "python:pkg.mod:fn"),
        (
            {"kind": "http", "url": "http://127.0.0.1:8765/ingest"},
            "http:http://127.0.0.1:8765/ingest",
        ),
        (
            {"kind": "mcp", "url": "http://127.0.0.1:8766/mcp", "tool": "classify"},
            "mcp:http://127.0.0.1:8766/mcp#classify",
        ),
        ({"kind": "precomputed", "field": "output"}, "precomputed (field output)"),
        ({"kind": "precomputed", "field": "response"}, "precomputed (field response)"),
        ({"kind": "precomputed"}, "precomputed (field output)"),
    ],
)
def test_a_system_is_named_by_its_kind_and_what_it_answers_from(
    description: dict[str, Any], shown: str
) -> None:
    assert describe_system_short(description) == shown
