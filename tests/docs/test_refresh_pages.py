"""refresh_pages: a shown block is brought up to date without losing what it left out."""

from __future__ import annotations

from tests.docs.refresh_pages import refresh_block

PRINTED = [
    "run 20261201-100000-aaaaaa started (if interrupted: arbiter run --resume ...)",
    "run          20261201-100000-aaaaaa",
    "pass rate    50.0%",
    "latency      p50 1.0 ms",
    "",
    "per scorer",
    " scorer   pass rate",
    " casefold     50.0%",
    "",
    "label: per label",
    "| negative | 1.000 |",
    "",
    "label: confusion",
    "| negative | 2 |",
    "",
    "stored as run 20261201-100000-aaaaaa in sqlite:///.arbiter/arbiter.db",
]


def test_a_changed_table_is_replaced_and_the_rest_kept_as_the_page_wrote_it() -> None:
    shown = [
        "run          20260101-000000-bbbbbb",
        "pass rate    50.0%",
        "",
        "per scorer",
        "┃ scorer   ┃ pass rate ┃",
        "│ casefold │     50.0% │",
        "...",
        "label: confusion",
        "| negative | 2 |",
        "",
        "stored as run 20260101-000000-bbbbbb in sqlite:///.arbiter/arbiter.db",
    ]
    assert refresh_block(shown, PRINTED) == [
        "run          20260101-000000-bbbbbb",  # the page's own id, not the printed one
        "pass rate    50.0%",
        "",
        "per scorer",
        " scorer   pass rate",
        " casefold     50.0%",
        "...",  # still leaves the per-label table out
        "label: confusion",
        "| negative | 2 |",
        "",
        "stored as run 20260101-000000-bbbbbb in sqlite:///.arbiter/arbiter.db",
    ]


def test_a_block_that_still_matches_is_left_as_it_is() -> None:
    shown = [
        "pass rate    50.0%",
        "...",
        "stored as run 20260101-000000-bbbbbb in sqlite:///.arbiter/arbiter.db",
    ]
    assert refresh_block(shown, PRINTED) == shown
