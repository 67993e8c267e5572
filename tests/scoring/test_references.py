"""Structural data references in an answer: what counts, what stays quiet, and at what cost."""

from __future__ import annotations

import pytest

from arbiter.scoring.references import (
    MAX_CHARS,
    data_references,
    out_of_scope_references,
    references_outside,
)


def names(text: str) -> list[str]:
    return [reference.name for reference in data_references(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("According to crm.accounts, 12 churned.", ["crm.accounts"]),
        ("See `Sales`.`Orders` for details.", []),  # two quoted names, not one dotted name
        ('Joined "crm.accounts" with it.', ["crm.accounts"]),
        ("Three parts: cat.schema.orders.", ["cat.schema.orders"]),
    ],
)
def test_qualified_names_are_references_anywhere(text: str, expected: list[str]) -> None:
    assert names(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("the approval chain is in the 'val' database", ["val"]),
        ('The survey schema is "marketing_research".', ["marketing_research"]),
        ("the grants database `research_funding` lists her", ["research_funding"]),
        ("the database named Billing holds it", []),  # plain English, unquoted
        ("the database named 'Billing' holds it", ["billing"]),
        ("table: `Ledger`", ["ledger"]),
    ],
)
def test_quoted_identifiers_count_next_to_a_container_word(text: str, expected: list[str]) -> None:
    assert names(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("According to the vendor_agreements table, yes.", ["vendor_agreements"]),
        ("counters in the restaurants_mvm_test database", ["restaurants_mvm_test"]),
        ("orders_2024 is the table to read", ["orders_2024"]),
        ("schema sales2024 was loaded", ["sales2024"]),
        ("the tables staff_absences, returns", ["staff_absences"]),
    ],
)
def test_technical_identifiers_count_next_to_a_container_word(
    text: str, expected: list[str]
) -> None:
    assert names(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "The table below lists them; the database has no other bookings.",
        "Yes, the sales database is current and the schema has not changed.",
        "Store S-07 has the highest return rate, 11.8%, i.e. 3.5 times the e.g. average.",
        "The 'final' answer is in the report, not in any vendor_agreements.",  # no container
        "'val' and then, much later, a database.",
        "It's the company's database, and the users' table.",
    ],
)
def test_prose_without_a_structural_reference_is_quiet(text: str) -> None:
    assert names(text) == []


def test_each_name_is_reported_once_at_its_first_occurrence() -> None:
    text = "crm.accounts, then CRM.Accounts again, then the 'crm.accounts' table"
    found = data_references(text)
    assert [(r.name, r.written, r.kind, r.start) for r in found] == [
        ("crm.accounts", "crm.accounts", "qualified", 0)
    ]


@pytest.mark.parametrize(
    ("text", "outside"),
    [
        ("fleet_ops.work_orders holds 42", []),  # the database covers its tables
        ("the work_orders table", []),  # an entity named in prose
        ("work_orders.status is open", []),  # an entity covers its columns
        ("I read dbc.tables and information_schema.columns", []),  # system catalogs
        ("sales.work_orders has it", ["sales.work_orders"]),  # an entity under another db
        ("the vendor_agreements table", ["vendor_agreements"]),
        ("the 'val' database and hr.salaries", ["val", "hr.salaries"]),
    ],
)
def test_out_of_scope_references_use_the_scope_rule(text: str, outside: list[str]) -> None:
    found = out_of_scope_references(text, databases=["fleet_ops"], entities=["work_orders"])
    assert [r.name for r in found] == outside


def test_references_outside_filters_references_found_once() -> None:
    found = data_references("crm.accounts and fleet_ops.vehicles")
    assert [r.name for r in references_outside(found, databases=["crm"])] == ["fleet_ops.vehicles"]


def test_an_empty_scope_leaves_only_system_catalogs_covered() -> None:
    found = out_of_scope_references("dbc.tables and crm.accounts", databases=[])
    assert [r.name for r in found] == ["crm.accounts"]


@pytest.mark.parametrize(
    "hostile",
    [
        "'" + "a" * 127 + " " * 1,  # an unterminated quote, again and again
        "a." * 4,  # a dotted run
        "x_1 database " * 1,  # candidates everywhere
        "'q' table ",
        "`" * 7,
    ],
)
def test_a_megabyte_of_hostile_text_is_read_in_linear_time(hostile: str) -> None:
    text = hostile * (1_000_000 // len(hostile) + 1)
    found = data_references(text)  # finishes: every pattern is bounded per position
    assert len(found) <= 1_000
    assert all(r.start < MAX_CHARS for r in found)


def test_text_past_the_reading_limit_is_ignored() -> None:
    text = " " * MAX_CHARS + "crm.accounts"
    assert data_references(text) == []


def test_an_overlong_identifier_is_not_a_name() -> None:
    assert names("the " + "x_" * 200 + " table and " + "a" * 300 + ".b") == []
