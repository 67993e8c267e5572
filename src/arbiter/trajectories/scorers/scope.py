"""The ``scope_adherence`` scorer: data sources touched outside the case's declared scope.

The case declares its scope as the assertion ``scope``: a list of data source names
(databases, indexes, collections; ``sales`` covers ``sales.eu``) and hosts
(``example.com`` covers ``api.example.com``). What a call touched, and what lies
outside, is computed by :mod:`arbiter.scoring.scope`, the primitives the grounding gate
shares, so the scorer that observes and the gate that enforces agree on what "out of
scope" means.

The value is the number of distinct sources touched outside the scope (a retry storm
against one source counts once: ``tool_calls`` measures volume), banded by
``max_out_of_scope``. It does not gate by default: observe, don't constrain.
"""

from __future__ import annotations

from pydantic import JsonValue

from arbiter.contract import Evidence, Example, Output, Score
from arbiter.errors import InputError
from arbiter.scoring.base import ScoreFunction
from arbiter.scoring.reading import quoted
from arbiter.scoring.scope import (
    SOURCE_KEYS,
    SQL_KEYS,
    SYSTEM_CATALOGS,
    TABLE_KEYS,
    URL_KEYS,
    Touch,
    scope_diff,
    sources_touched,
)
from arbiter.trajectories.scorers.common import (
    assertions,
    banded,
    scored_tool_calls,
    trajectory_scorer,
)

__all__ = ["scope_adherence"]

_MAX_EVIDENCE = 10


def _declared_scope(example: Example) -> list[str] | None:
    value = assertions(example).get("scope")
    if value is None:
        return None
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise InputError(f"assertion 'scope' must be a list of source names, got {value!r}")
    names = [item for item in value if isinstance(item, str) and item.strip()]
    return names or None


@trajectory_scorer(name="scope_adherence", dimension="scope", moment="act", gating=False)
def scope_adherence(
    *,
    allowed: list[str] | None = None,
    source_keys: list[str] | None = None,
    table_keys: list[str] | None = None,
    url_keys: list[str] | None = None,
    sql_keys: list[str] | None = None,
) -> ScoreFunction:
    """Distinct data sources touched outside the case's ``scope``, banded by ``max_out_of_scope``.

    Sub-agents' calls count; framework-internal tools do not. Abstains when the case
    declares no scope (or an empty one).

    Args:
        allowed: Sources always in scope; None: the system catalogs
            (``dbc``, ``information_schema``, ``pg_catalog``, ``sys``, ...).
        source_keys: Argument keys naming a source; None: database, db, database_name,
            index, collection.
        table_keys: Argument keys naming a table, whose qualifier is the source; None:
            table.
        url_keys: Argument keys holding a URL, whose host is the source; None: url.
        sql_keys: Argument keys holding SQL, whose FROM / JOIN qualifiers are sources;
            None: sql, query.
    """
    always = tuple(allowed) if allowed is not None else SYSTEM_CATALOGS
    keys = {
        "source_keys": tuple(source_keys) if source_keys is not None else SOURCE_KEYS,
        "table_keys": tuple(table_keys) if table_keys is not None else TABLE_KEYS,
        "url_keys": tuple(url_keys) if url_keys is not None else URL_KEYS,
        "sql_keys": tuple(sql_keys) if sql_keys is not None else SQL_KEYS,
    }

    def score(example: Example, output: Output) -> Score:
        assert output.trajectory is not None
        declared = _declared_scope(example)
        if declared is None:
            return Score(explanation="the case declares no scope")
        calls = scored_tool_calls(output.trajectory, example, include_handoffs=True)
        touched = sources_touched(calls, **keys)
        outside = scope_diff(touched, declared, allowed=always)
        result = banded(len(outside), "max_out_of_scope", example, higher_is_better=False)
        touched_names = list(dict.fromkeys(t.source for t in touched))
        if outside:
            shown = ", ".join(quoted(name, 60) for name in outside[:5])
            result.explanation = f"outside the scope: {shown}; {result.explanation}"
        else:
            result.explanation = (
                f"{len(touched_names)} source(s) touched, all in scope; {result.explanation}"
            )
        first_call: dict[str, Touch] = {}
        for touch in touched:
            first_call.setdefault(touch.source, touch)
        result.evidence = [
            Evidence(
                quote=name[:200],
                verified=True,
                note=f"out of scope: call {first_call[name].call} "
                f"({calls[first_call[name].call].name[:80]}, via {first_call[name].via})",
            )
            for name in outside[:_MAX_EVIDENCE]
        ]
        shown_outside: list[JsonValue] = list(outside[:100])
        shown_touched: list[JsonValue] = list(touched_names[:100])
        result.metadata.update({"out_of_scope": shown_outside, "touched": shown_touched})
        return result

    return score
