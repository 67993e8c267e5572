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
  The statement is read in time linear in its length.

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
from functools import lru_cache
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
_CACHED_CHARS = 4_096
"""Statements up to this long have their targets cached (1,024 of them)."""
_MAX_NAME_CHARS = 1_000
"""Longest source name kept; a longer value is not a name."""
_CACHED_SCOPE = 64
"""Scopes of up to this many names (with the allowed ones) are normalised once (256 of
them are kept)."""

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


# What matters in a statement, found by a search that skips the rest in C: literals,
# quoted identifiers and comments (consumed whole, so nothing inside them counts),
# parentheses, and the keywords SELECT / FROM / JOIN. Each alternative ends where its
# characters end, so the searches of one statement take time linear in its length.
_SQL_EVENT = re.compile(
    r"""'[^']*(?:'|\Z)
    |"[^"]*(?:"|\Z)|`[^`]*(?:`|\Z)|\[[^\]]*(?:\]|\Z)
    |--[^\n]*|/\*.*?(?:\*/|\Z)
    |(?P<paren>[()])
    |(?<![\w$#@])(?P<keyword>select|from|join)(?![\w$#@])""",
    re.IGNORECASE | re.VERBOSE | re.DOTALL,
)
# A name: a bare identifier or a quoted one (bounded, so an unterminated quote costs
# little); a target: dotted names. Matched at one position, never searched.
_NAME = r"""(?:[^\W\d][\w$#@]*|"[^"]{1,256}"|`[^`]{1,256}`|\[[^\]]{1,256}\])"""
_TARGET = re.compile(rf"\s*({_NAME}(?:\s*\.\s*{_NAME})*)")
_ALIAS = re.compile(r"\s*(?:as\s+)?([^\W\d][\w$#@]*)", re.IGNORECASE)
_COMMA = re.compile(r"\s*,")
_CLAUSE_WORDS = frozenset(
    {"where", "join", "inner", "left", "right", "full", "cross", "outer", "on", "group", "order"}
    | {"having", "limit", "union", "except", "intersect", "natural", "using", "window", "from"}
    | {"select", "set", "values", "returning", "qualify", "sample", "top", "lateral"}
)


def sql_targets(statement: str) -> list[str]:
    """The qualified ``FROM`` / ``JOIN`` targets of a SQL statement, normalised, in order.

    ``FROM a.t1, b.t2 x JOIN c.t3`` gives ``a.t1``, ``b.t2``, ``c.t3``; an unqualified
    target gives nothing (it lies in the connection's own database).

    Examples:
        >>> sql_targets("SELECT * FROM Sales.Orders o JOIN crm.customers c ON o.c = c.id")
        ['sales.orders', 'crm.customers']
    """
    if len(statement) <= _CACHED_CHARS:
        return list(_cached_targets(statement))
    return _targets(statement[:_MAX_VALUE_CHARS])


@lru_cache(maxsize=1024)
def _cached_targets(statement: str) -> tuple[str, ...]:
    # Agents repeat their statements (retries, paging): a short one is read once.
    return tuple(_targets(statement))


def _targets(text: str) -> list[str]:
    found: list[str] = []
    selected = [True]  # per parenthesis depth: has a SELECT been seen at it (depth 0: yes)
    at = 0
    while (event := _SQL_EVENT.search(text, at)) is not None:
        at = event.end()
        paren, keyword = event.group("paren"), event.group("keyword")
        if paren == "(":
            selected.append(False)
        elif paren == ")":
            if len(selected) > 1:
                selected.pop()
        elif keyword is not None:
            keyword = keyword.casefold()
            if keyword == "select":
                selected[-1] = True
            elif keyword == "join" or selected[-1]:
                at = _read_targets(text, at, found, many=keyword == "from")
    return found


def _read_targets(text: str, at: int, found: list[str], *, many: bool) -> int:
    """Read the target(s) after FROM / JOIN at ``at``; return where reading stopped."""
    while (target := _TARGET.match(text, at)) is not None:
        name = normalise_source(target.group(1))
        if name.split(".", 1)[0] in _CLAUSE_WORDS:
            return at  # FROM followed by a keyword: no target here
        at = target.end()
        if "." in name and len(name) <= _MAX_NAME_CHARS:
            found.append(name)
        if not many:
            return at
        alias = _ALIAS.match(text, at)
        if alias is not None and alias.group(1).casefold() not in _CLAUSE_WORDS:
            at = alias.end()
        comma = _COMMA.match(text, at)
        if comma is None:
            return at
        at = comma.end()
    return at


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


def _members(arguments: JsonValue) -> Iterable[tuple[str, JsonValue]]:
    """:func:`_arguments`, without its queue for the common flat object of scalars."""
    if isinstance(arguments, dict) and not any(
        isinstance(value, dict | list) for value in arguments.values()
    ):
        return [(key.casefold(), value) for key, value in arguments.items()]
    return _arguments(arguments)


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
        for key, value in _members(call.arguments):
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


class _Scope:
    """Declared names, normalised once, and the coverage rule over them."""

    def __init__(self, declared: Iterable[str]) -> None:
        entries = list(declared)
        self.data = {name for name in map(normalise_source, entries) if name}
        self.hosts = {name for name in (e.casefold().strip(" .") for e in entries) if name}

    def covers(self, name: str, kind: SourceKind) -> bool:
        if kind == "data":
            parts = normalise_source(name).split(".")
            # The name itself or a dotted prefix: a.b.c, a.b, a.
            return any(".".join(parts[:n]) in self.data for n in range(len(parts), 0, -1))
        labels = name.casefold().rstrip(".").split(".")
        # The host itself or a parent domain: api.example.com, example.com, com.
        return any(".".join(labels[n:]) in self.hosts for n in range(len(labels)))


@lru_cache(maxsize=256)
def _scope_of(entries: tuple[str, ...]) -> _Scope:
    # A case's scope is read for each of its runs: a small one is normalised once.
    return _Scope(entries)


def in_scope(source: str, declared: Collection[str], *, kind: SourceKind = "data") -> bool:
    """Whether ``source`` is covered by a declared name (normalised both sides).

    A data source is covered by itself or a dotted prefix; a host by itself or a
    parent domain.
    """
    return _Scope(declared).covers(source, kind)


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
    entries = (*declared, *allowed)
    cached = len(entries) <= _CACHED_SCOPE and all(isinstance(e, str) for e in entries)
    scope = _scope_of(entries) if cached else _Scope(entries)
    outside: dict[str, None] = {}
    for touch in touched:
        source: str
        named: str
        kind: SourceKind
        if isinstance(touch, str):
            source, named, kind = touch, touch, "data"
        else:
            source, named, kind = touch.source, touch.named, touch.kind
        if source not in outside and not scope.covers(named, kind):
            outside[source] = None
    return list(outside)
