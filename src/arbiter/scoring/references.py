"""Structural data references in an answer, and which of them lie outside a scope.

Allowlist-based, not blocklist-based: rather than matching known phrasings of drift,
every identifier that is *structurally* a data reference is extracted, and each one the
declared scope does not cover is reported. Three shapes count:

- a *qualified* name, ``db.table`` (or deeper), each part an identifier of two or more
  characters (so ``e.g.`` and ``U.S.`` are not names);
- a *quoted* identifier (``'val'``, ``"marketing"``, ```crm```) next to a container word
  (database, schema, catalog, table, ...), in either order, with at most one short
  copula between (``the schema is 'x'``, ``the 'val' database``);
- a *technical* identifier, snake_case or with a digit (``vendor_agreements``,
  ``sales2024``), next to a container word in the same way.

Plain English next to a container word (``the database``, ``the sales table``) is never
a candidate: that structural requirement is what keeps prose quiet. Numbers are not
references. A reference is in scope when :func:`arbiter.scoring.scope.scope_diff` finds
it covered by the declared databases, the declared entities (table or concept names) and
the system catalogs, so the gate and the ``scope_adherence`` scorer share one rule.

The text is read once, token by token, in time linear in its length (at most
:data:`MAX_CHARS` characters are read).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Literal

from arbiter.scoring.scope import SYSTEM_CATALOGS, normalise_source, scope_diff

__all__ = [
    "CONTAINER_WORDS",
    "COPULAS",
    "MAX_CHARS",
    "DataReference",
    "ReferenceKind",
    "data_references",
    "out_of_scope_references",
    "references_outside",
]

MAX_CHARS = 1_000_000
"""Characters of an answer read; the rest is ignored."""
_MAX_NAME = 128
"""Longest identifier kept; a longer run of word characters is not a name."""
_MAX_REFERENCES = 1_000
"""Most references returned for one text."""

CONTAINER_WORDS: frozenset[str] = frozenset(
    {"database", "databases", "db", "dbs", "schema", "schemas", "catalog", "catalogs"}
    | {"table", "tables", "view", "views", "dataset", "datasets", "collection", "collections"}
)
"""Words naming a data container: an identifier next to one is a reference."""
COPULAS: frozenset[str] = frozenset(
    {"is", "was", "are", "were", "called", "named", "the", "a", "an", ":", "="}
)
"""Short words allowed between a container word and the identifier it names."""

ReferenceKind = Literal["qualified", "quoted", "technical"]
"""How a reference was recognised (see the module docstring)."""


@dataclass(frozen=True)
class DataReference:
    """One structural data reference found in a text."""

    name: str
    """The name as compared: case-folded, unquoted (:func:`normalise_source`)."""
    written: str
    """The name as the text wrote it (quotes included)."""
    kind: ReferenceKind
    """Which shape it has."""
    start: int
    """Its offset in the text."""


# One token at a time: a quoted identifier, a (dotted) word, or one punctuation mark.
# Each alternative is bounded or greedy over one character class, so the search reads
# every character a constant number of times.
_TOKEN = re.compile(
    r"""(?P<q>['"`])(?P<quoted>[^\W\d][\w$.\-]{0,127})(?P=q)
    |(?P<word>[\w$]+(?:\.[\w$]+)*)
    |(?P<mark>[:=])
    |(?P<stop>\S)""",
    re.VERBOSE,
)
_TECHNICAL = re.compile(r"[^\W\d](?=[\w$]*[_\d])(?=[\w$]*[^\W\d_])[\w$]*")
"""A technical identifier: starts with a letter or ``_``, holds a letter and an
underscore or a digit (``vendor_agreements``, ``sales2024``)."""
_PART = re.compile(r"[^\W\d][\w$]+")
"""One part of a qualified name: an identifier of two or more characters."""


@dataclass(frozen=True)
class _Token:
    text: str
    """The token (a quoted one without its quotes)."""
    quoted: bool
    start: int
    """Its offset, quotes included."""
    written: str

    @property
    def folded(self) -> str:
        return self.text.casefold()


def _qualified(name: str) -> bool:
    if len(name) > _MAX_NAME or "." not in name:
        return False
    return all(_PART.fullmatch(part) for part in name.split("."))


def _candidate(token: _Token) -> ReferenceKind | None:
    """How a token next to a container word names a container, if it does."""
    if token.quoted:
        return "quoted"
    if len(token.text) <= _MAX_NAME:
        if _qualified(token.text):
            return "qualified"
        if _TECHNICAL.fullmatch(token.text):
            return "technical"
    return None


def data_references(text: str) -> list[DataReference]:
    """Every structural data reference of ``text``, once per name, in order.

    Args:
        text: An answer (untrusted; at most :data:`MAX_CHARS` characters are read).

    Returns:
        The references, each name once (its first occurrence), at most 1,000.

    Examples:
        >>> [r.name for r in data_references(
        ...     "Per crm.accounts and the 'val' database, not the sales table.")]
        ['crm.accounts', 'val']
    """
    found: dict[str, DataReference] = {}
    # The last three tokens since a punctuation mark, kept so that "X database" and
    # "X is the database" are seen from the container word, looking back a constant
    # distance; a mark other than ':' or '=' breaks adjacency.
    previous: list[_Token] = []
    pending = 0  # tokens still allowed between a container word and the name it has

    def add(token: _Token, kind: ReferenceKind) -> None:
        name = normalise_source(token.text)
        if name and name not in found:
            found[name] = DataReference(name, token.written, kind, token.start)

    for match in _TOKEN.finditer(text, 0, min(len(text), MAX_CHARS)):
        group = match.lastgroup
        if group == "stop":
            previous, pending = [], 0
            continue
        if len(found) >= _MAX_REFERENCES:
            break
        quoted = group == "quoted"
        inner = match.group("quoted") if quoted else match.group()
        token = _Token(inner, quoted, match.start(), match.group())
        if group != "mark" and _qualified(inner):
            add(token, "qualified")
        if group == "word" and token.folded in CONTAINER_WORDS:
            for before in reversed(previous):
                kind = _candidate(before)
                if kind is not None:
                    add(before, kind)
                    break
                if before.folded not in COPULAS:
                    break
            pending = 2
        elif pending:
            kind = None if group == "mark" else _candidate(token)
            if kind is not None:
                add(token, kind)
                pending = 0
            elif token.folded in COPULAS:
                pending -= 1
            else:
                pending = 0
        previous = [*previous[-2:], token]
    return sorted(found.values(), key=lambda reference: reference.start)


def out_of_scope_references(
    text: str,
    *,
    databases: Collection[str],
    entities: Collection[str] = (),
    allowed: Collection[str] = SYSTEM_CATALOGS,
) -> list[DataReference]:
    """The references of ``text`` that no declared database, entity or catalog covers.

    Args:
        text: An answer.
        databases: The scope's databases (a dotted prefix covers a qualified name).
        entities: The scope's in-scope table or concept names.
        allowed: Names always in scope (system catalogs).

    Returns:
        The uncovered references, in order.

    Examples:
        >>> [r.name for r in out_of_scope_references(
        ...     "fleet_ops.vehicles and the vendor_agreements table", databases=["fleet_ops"])]
        ['vendor_agreements']
    """
    return references_outside(
        data_references(text), databases=databases, entities=entities, allowed=allowed
    )


def references_outside(
    references: Sequence[DataReference],
    *,
    databases: Collection[str],
    entities: Collection[str] = (),
    allowed: Collection[str] = SYSTEM_CATALOGS,
) -> list[DataReference]:
    """Those of ``references`` the scope does not cover (see :func:`out_of_scope_references`)."""
    outside = set(
        scope_diff([ref.name for ref in references], [*databases, *entities], allowed=allowed)
    )
    return [ref for ref in references if ref.name in outside]
