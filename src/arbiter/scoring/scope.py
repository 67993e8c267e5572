"""Which data sources an agent's tool calls touched, and which of them lie outside a scope.

Pure primitives shared by the ``scope_adherence`` trajectory scorer (which observes) and
the grounding gate (which enforces), so the two can never disagree on what "out of
scope" means.

A call touches a source through its arguments, searched at any depth:

- a *source key* (``database``, ``db``, ``database_name``, ``index``, ``collection``)
  names the source itself;
- a *table key* (``table``) names a table: its qualifier (``sales`` of
  ``sales.orders``) is the source, an unqualified table lies in the call's own database
  and adds none;
- a *URL key* (``url``) touches the URL's host;
- a *SQL key* (``sql``, ``query``) holds a statement whose ``FROM`` / ``JOIN`` targets
  are read: a qualified target's qualifier is a source (``crm`` of ``crm.customers``,
  ``cat.schema`` of ``cat.schema.t``), an unqualified one adds none. String literals
  and comments are skipped, and a ``FROM`` inside parentheses counts only after a
  ``SELECT`` at that depth (so ``EXTRACT(YEAR FROM o.created_at)`` touches nothing).
  The statement is read by one tokenising pass: linear in its length.

Names are compared case-folded, without their quotes (``"Sales"``, ```sales```,
``[sales]``). A touch is in scope when what the call named (the table, when it named
one) or one of its dotted prefixes is declared: ``sales`` covers ``sales.orders`` and
``sales.eu.orders``, and a scope may name single tables (``maintenance.work_orders``).
A host is in scope when it or a parent domain is declared (``example.com`` covers
``api.example.com``). System catalogs (:data:`SYSTEM_CATALOGS`) are always allowed.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from pydantic import JsonValue

from arbiter.contract import ToolCall

__all__ = [
    "SOURCE_KEYS",
    "SQL_KEYS",
    "SYSTEM_CATALOGS",
    "TABLE_KEYS",
    "URL_KEYS",
    "Touch",
    "in_scope",
    "normalise_source",
    "scope_diff",
    "sources_touched",
    "sql_targets",
]

SOURCE_KEYS: tuple[str, ...] = ("database", "db", "database_name", "index", "collection")
"""Argument keys whose value names a data source."""
TABLE_KEYS: tuple[str, ...] = ("table",)
"""Argument keys whose value names a table (its qualifier is the source)."""
URL_KEYS: tuple[str, ...] = ("url",)
"""Argument keys whose value is a URL (its host is the source)."""
SQL_KEYS: tuple[str, ...] = ("sql", "query")
"""Argument keys whose value is a SQL statement (its FROM / JOIN qualifiers are sources)."""
SYSTEM_CATALOGS: tuple[str, ...] = (
    "dbc",
    "information_schema",
    "pg_catalog",
    "sys",
    "performance_schema",
)
"""Catalogs every database has (Teradata's DBC, the SQL standard's, PostgreSQL's, ...):
reading them is never out of scope."""

_MAX_NODES = 10_000
"""JSON nodes of one call's arguments searched for keys (the rest is not read)."""
_MAX_VALUE_CHARS = 1_000_000
"""Characters of one SQL statement read."""
_MAX_NAME_CHARS = 1_000
"""Longest source name kept; a longer value is not a name."""

SourceKind = Literal["data", "host"]
"""``data``: a database, index or collection; ``host``: a URL's host."""


@dataclass(frozen=True)
class Touch:
    """One data source a tool call touched."""

    source: str
    """The source's normalised name (case-folded, unquoted)."""
    kind: SourceKind
    """A data source, or a URL's host (compared by domain)."""
    call: int
    """The index of the call in the sequence given to :func:`sources_touched`."""
    via: str
    """The argument key that named it (``database``, ``sql``, ...)."""
    target: str | None = None
    """The table the call named, when it named one (``sales.orders``); a scope may
    cover just that table."""

    @property
    def named(self) -> str:
        """What the call named: the table when there is one, else the source."""
        return self.target or self.source


_QUOTES = "\"'`[]"


def normalise_source(name: str) -> str:
    """A source name as it is compared: case-folded, quotes dropped, no spaces at dots.

    Examples:
        >>> normalise_source(' "Sales" . [Orders] ')
        'sales.orders'
    """
    parts = (part.strip().strip(_QUOTES).strip() for part in name.casefold().split("."))
    return ".".join(part for part in parts if part)


def _host(value: str) -> str | None:
    text = value.strip()[:_MAX_NAME_CHARS]
    if not text:
        return None
    try:
        parts = urlsplit(text if "//" in text else "//" + text)
        host = parts.hostname
    except ValueError:  # a malformed port or IPv6 literal
        return None
    return host.rstrip(".") if host else None


# One token per match, every character covered (``other``), each alternative linear in
# the token it matches: a pass over a statement is linear in its length.
_SQL_TOKEN = re.compile(
    r"""(?P<space>\s+)
    |(?P<literal>'[^']*(?:'|\Z))
    |(?P<quoted>"[^"]*(?:"|\Z)|`[^`]*(?:`|\Z)|\[[^\]]*(?:\]|\Z))
    |(?P<comment>--[^\n]*|/\*.*?(?:\*/|\Z))
    |(?P<word>[^\W\d][\w$#@]*)
    |(?P<other>.)""",
    re.VERBOSE | re.DOTALL,
)
_NAME_TOKENS = frozenset({"word", "quoted"})


def _sql_tokens(statement: str) -> Iterator[tuple[str, str]]:
    """(kind, text) of each token but spaces and comments; literals kept as a marker."""
    for match in _SQL_TOKEN.finditer(statement):
        kind = match.lastgroup or "other"
        if kind in ("space", "comment"):
            continue
        yield kind, match.group()


def sql_targets(statement: str) -> list[str]:
    """The qualified ``FROM`` / ``JOIN`` targets of a SQL statement, normalised, in order.

    ``FROM a.t1, b.t2 x JOIN c.t3`` gives ``a.t1``, ``b.t2``, ``c.t3``; an unqualified
    target gives nothing (it lies in the connection's own database).

    Examples:
        >>> sql_targets("SELECT * FROM Sales.Orders o JOIN crm.customers c ON o.c = c.id")
        ['sales.orders', 'crm.customers']
    """
    tokens = list(_sql_tokens(statement[:_MAX_VALUE_CHARS]))
    found: list[str] = []
    selected = [True]  # per parenthesis depth: has a SELECT been seen at it (depth 0: yes)
    index = 0
    while index < len(tokens):
        kind, text = tokens[index]
        index += 1
        if kind == "other" and text == "(":
            selected.append(False)
        elif kind == "other" and text == ")":
            if len(selected) > 1:
                selected.pop()
        elif kind == "word":
            keyword = text.casefold()
            if keyword == "select":
                selected[-1] = True
            elif keyword == "join" or (keyword == "from" and selected[-1]):
                index = _read_targets(tokens, index, found, many=keyword == "from")
    return found


def _read_targets(
    tokens: Sequence[tuple[str, str]], index: int, found: list[str], *, many: bool
) -> int:
    """Read the target(s) after FROM / JOIN from ``index``; return where reading stopped."""
    while True:
        parts: list[str] = []
        while index < len(tokens) and tokens[index][0] in _NAME_TOKENS:
            parts.append(tokens[index][1])
            index += 1
            if index < len(tokens) and tokens[index] == ("other", "."):
                index += 1
            else:
                break
        if len(parts) > 1:
            target = normalise_source(".".join(parts))
            if "." in target:
                found.append(target)
        if not (many and parts):
            return index
        # An alias (``AS x`` or ``x``) may follow; then a comma lists another target.
        if index < len(tokens) and tokens[index][0] == "word":
            if tokens[index][1].casefold() == "as":
                index += 1
            if index < len(tokens) and tokens[index][0] in _NAME_TOKENS:
                if tokens[index][1].casefold() in _CLAUSE_WORDS:
                    return index
                index += 1
        if index < len(tokens) and tokens[index] == ("other", ","):
            index += 1
            continue
        return index


_CLAUSE_WORDS = frozenset(
    {"where", "join", "inner", "left", "right", "full", "cross", "outer", "on", "group", "order"}
    | {"having", "limit", "union", "except", "intersect", "natural", "using", "window", "from"}
)


def _arguments(arguments: JsonValue) -> Iterator[tuple[str, JsonValue]]:
    """(key, value) of every object member in the arguments, breadth first, bounded."""
    queue: deque[JsonValue] = deque([arguments])
    seen = 0
    while queue and seen < _MAX_NODES:
        node = queue.popleft()
        seen += 1
        if isinstance(node, dict):
            for key, value in node.items():
                yield key.casefold(), value
                if isinstance(value, dict | list):
                    queue.append(value)
        elif isinstance(node, list):
            queue.extend(item for item in node if isinstance(item, dict | list))


def _names(value: JsonValue) -> list[str]:
    """A key's value as names: a string, or the strings of a list."""
    items = value if isinstance(value, list) else [value]
    return [item for item in items if isinstance(item, str) and 0 < len(item) <= _MAX_NAME_CHARS]


def sources_touched(
    tool_calls: Sequence[ToolCall],
    *,
    source_keys: Collection[str] = SOURCE_KEYS,
    table_keys: Collection[str] = TABLE_KEYS,
    url_keys: Collection[str] = URL_KEYS,
    sql_keys: Collection[str] = SQL_KEYS,
) -> list[Touch]:
    """Every data source the calls touched, once per call and source, in call order.

    Args:
        tool_calls: The calls, in order (``Touch.call`` indexes this sequence).
        source_keys: Argument keys naming a source.
        table_keys: Argument keys naming a table (its qualifier is the source).
        url_keys: Argument keys holding a URL (its host is the source).
        sql_keys: Argument keys holding a SQL statement.

    Returns:
        The touches; keys are matched case-insensitively, at any depth of the arguments.

    Examples:
        >>> call = ToolCall(name="sql", arguments={"database": "Sales",
        ...     "sql": "SELECT 1 FROM crm.customers"})
        >>> [(t.source, t.target, t.via) for t in sources_touched([call])]
        [('sales', None, 'database'), ('crm', 'crm.customers', 'sql')]
    """
    keys = {
        **{k.casefold(): "sql" for k in sql_keys},
        **{k.casefold(): "url" for k in url_keys},
        **{k.casefold(): "table" for k in table_keys},
        **{k.casefold(): "source" for k in source_keys},
    }
    touches: list[Touch] = []
    for index, call in enumerate(tool_calls):
        seen: set[tuple[str, str | None, SourceKind]] = set()
        for key, value in _arguments(call.arguments):
            role = keys.get(key)
            if role is None:
                continue
            for source, target, kind in _read(role, value):
                if source and (source, target, kind) not in seen:
                    seen.add((source, target, kind))
                    touches.append(Touch(source, kind, index, key, target))
    return touches


def _read(role: str, value: JsonValue) -> Iterator[tuple[str, str | None, SourceKind]]:
    """(source, table or None, kind) of each name an argument's value holds."""
    if role == "sql":
        if isinstance(value, str):
            for target in sql_targets(value):
                yield target.rpartition(".")[0], target, "data"
        return
    for name in _names(value):
        if role == "source":
            yield normalise_source(name), None, "data"
        elif role == "table":
            table = normalise_source(name)
            if "." in table:
                yield table.rpartition(".")[0], table, "data"
        else:
            host = _host(name)
            if host is not None:
                yield host, None, "host"


def in_scope(source: str, declared: Collection[str], *, kind: SourceKind = "data") -> bool:
    """Whether ``source`` is covered by a declared name (normalised both sides).

    A data source is covered by itself or a dotted prefix; a host by itself or a
    parent domain.
    """
    name = normalise_source(source) if kind == "data" else source.casefold().rstrip(".")
    for entry in declared:
        wanted = normalise_source(entry) if kind == "data" else entry.casefold().strip(" .")
        if not wanted:
            continue
        if name == wanted:
            return True
        if kind == "data" and name.startswith(wanted + "."):
            return True
        if kind == "host" and name.endswith("." + wanted):
            return True
    return False


def scope_diff(
    touched: Iterable[Touch | str],
    declared: Collection[str],
    *,
    allowed: Collection[str] = SYSTEM_CATALOGS,
) -> list[str]:
    """The sources touched outside the declared scope, each once, in first-touched order.

    A touch is outside when the scope covers neither its table nor its source; what is
    listed is the source (``maintenance``, not each of its tables).

    Args:
        touched: What :func:`sources_touched` found (a plain string is a data source).
        declared: The scope: data source names and hosts.
        allowed: Sources always in scope (system catalogs).

    Examples:
        >>> scope_diff(["sales.eu", "hr", "dbc"], ["sales"])
        ['hr']
    """
    scope = [*declared, *allowed]
    outside: dict[str, None] = {}
    for touch in touched:
        source: str
        named: str
        kind: SourceKind
        if isinstance(touch, str):
            source, named, kind = touch, touch, "data"
        else:
            source, named, kind = touch.source, touch.named, touch.kind
        if source not in outside and not in_scope(named, scope, kind=kind):
            outside[source] = None
    return list(outside)
