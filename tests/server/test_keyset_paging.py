"""Keyset paging of the newest-first lists (inbox, rulings): one rule for both."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from arbiter.server.errors import ApiError
from arbiter.server.pagination import keyset_before, keyset_next


@dataclass(frozen=True)
class _Row:
    id: int


@pytest.mark.parametrize(
    ("ids", "limit", "more"),
    [([9, 7, 4], 3, True), ([9, 7], 3, False), ([], 3, False), ([5], 1, True)],
    ids=["full page", "short page", "empty", "one of one"],
)
def test_a_full_page_points_below_its_last_id_and_a_short_one_ends(
    ids: list[int], limit: int, more: bool
) -> None:
    cursor = keyset_next([_Row(i) for i in ids], limit)
    assert (cursor is not None) is more
    if cursor is not None:
        assert keyset_before(cursor) == ids[-1]


def test_no_cursor_is_the_first_page_and_a_forged_one_is_refused() -> None:
    assert keyset_before(None) is None
    with pytest.raises(ApiError) as raised:
        keyset_before("not-a-cursor")
    assert (raised.value.status, raised.value.field) == (400, "query.cursor")
