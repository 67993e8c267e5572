"""The scope primitives: which sources a call touched, and which lie outside a scope."""

from __future__ import annotations

import pytest
from pydantic import JsonValue

from arbiter.contract import ToolCall
from arbiter.scoring.scope import (
    Touch,
    in_scope,
    normalise_source,
    scope_diff,
    sources_touched,
    sql_targets,
)


@pytest.mark.parametrize(
    ("statement", "sources"),
    [
        ("SELECT * FROM sales.orders", ["sales.orders"]),
        ("select * from orders", []),  # unqualified: the connection's own database
        ("SELECT * FROM a.t1, b.t2 x, c.t3 AS y WHERE 1 = 1", ["a.t1", "b.t2", "c.t3"]),
        (
            "SELECT * FROM s.o o JOIN crm.c c ON o.id = c.id LEFT JOIN hr.p ON 1=1",
            ["s.o", "crm.c", "hr.p"],
        ),
        ('SELECT * FROM "Fin"."Ledger" JOIN [Ops].[Jobs] ON 1=1', ["fin.ledger", "ops.jobs"]),
        ("SELECT * FROM `cat`.`schema`.`t`", ["cat.schema.t"]),
        ("DELETE FROM dbc.tables", ["dbc.tables"]),
        ("SELECT * FROM (SELECT * FROM inner_db.t) q", ["inner_db.t"]),
        ("SELECT EXTRACT(YEAR FROM o.created_at) FROM sales.orders o", ["sales.orders"]),
        ("SELECT 'from x.y' AS note FROM a.t -- from c.d\n", ["a.t"]),
        ("SELECT 1 /* JOIN hidden.t */ FROM a.t", ["a.t"]),
        ("SELECT * FROM a.t UNION SELECT * FROM b.t", ["a.t", "b.t"]),
    ],
)
def test_sql_targets_reads_the_qualified_from_and_join_targets(
    statement: str, sources: list[str]
) -> None:
    assert sql_targets(statement) == sources


@pytest.mark.parametrize(
    "hostile",
    [
        'FROM "' + "a" * 200_000,  # an unterminated quoted identifier
        "/* " * 100_000,  # unterminated comments
        "'" * 200_001,  # literals without end
        "from a." * 50_000,  # one endless dotted name
        "(" * 100_000 + ")" * 100_000,
    ],
)
def test_sql_targets_reads_hostile_statements_to_the_end_without_failing(hostile: str) -> None:
    assert isinstance(sql_targets(hostile), list)


def test_normalise_source_drops_quotes_case_and_spaces_at_dots() -> None:
    assert normalise_source(' "Sales" . [EU] ') == "sales.eu"


def test_sources_touched_reads_keys_at_any_depth_once_per_call_and_source() -> None:
    arguments: JsonValue = {
        "Database": "Sales",
        "params": {"db": "sales", "table": "hr.people", "url": "https://API.Example.com/x"},
        "sql": "SELECT * FROM crm.customers JOIN crm.orders ON 1=1",
        "index": ["logs", 3],
    }
    calls = [ToolCall(name="query", arguments=arguments), ToolCall(name="other", arguments="db")]
    touched = sources_touched(calls)
    assert [(t.source, t.target, t.kind, t.call) for t in touched] == [
        ("sales", None, "data", 0),
        ("crm", "crm.customers", "data", 0),
        ("crm", "crm.orders", "data", 0),
        ("logs", None, "data", 0),
        ("hr", "hr.people", "data", 0),  # nested: read after the top level
        ("api.example.com", None, "host", 0),
    ]
    assert {t.via for t in touched} == {"database", "sql", "index", "table", "url"}


def test_an_unqualified_table_touches_no_source_of_its_own() -> None:
    call = ToolCall(name="q", arguments={"database": "sales", "table": "orders"})
    assert [t.source for t in sources_touched([call])] == ["sales"]


def test_the_argument_keys_are_configurable() -> None:
    call = ToolCall(name="q", arguments={"warehouse": "w1", "database": "ignored"})
    touched = sources_touched([call], source_keys=["warehouse"])
    assert [t.source for t in touched] == ["w1"]


@pytest.mark.parametrize(
    ("source", "kind", "declared", "inside"),
    [
        ("sales", "data", ["Sales"], True),
        ("sales.eu", "data", ["sales"], True),
        ("salesforce", "data", ["sales"], False),  # a prefix only at a dot
        ("sales", "data", ["sales.eu"], False),  # the scope allows one part only
        ("api.example.com", "host", ["example.com"], True),
        ("badexample.com", "host", ["example.com"], False),
        ("example.com", "host", ["api.example.com"], False),
    ],
)
def test_in_scope_covers_dotted_prefixes_and_parent_domains(
    source: str, kind: str, declared: list[str], inside: bool
) -> None:
    assert in_scope(source, declared, kind=kind) is inside  # type: ignore[arg-type]


def test_scope_diff_lists_each_outside_source_once_in_order_and_allows_system_catalogs() -> None:
    touched: list[Touch | str] = [
        Touch("hr", "data", 0, "db"),
        Touch("dbc", "data", 1, "sql"),
        Touch("hr", "data", 2, "db"),
        Touch("evil.com", "host", 3, "url"),
        "sales.eu",
        "ops",
    ]
    assert scope_diff(touched, ["sales"]) == ["hr", "evil.com", "ops"]
    assert scope_diff(touched, ["sales"], allowed=[]) == ["hr", "dbc", "evil.com", "ops"]


def test_a_scope_may_name_single_tables_of_a_source() -> None:
    calls = [ToolCall(name="q", arguments={"sql": "SELECT * FROM ops.jobs JOIN ops.pay ON 1=1"})]
    touched = sources_touched(calls)
    assert [t.named for t in touched] == ["ops.jobs", "ops.pay"]
    assert scope_diff(touched, ["ops.jobs"]) == ["ops"]  # ops.pay is outside
    assert scope_diff(touched, ["ops.jobs", "ops.pay"]) == []
    assert scope_diff(touched, ["OPS"]) == []
