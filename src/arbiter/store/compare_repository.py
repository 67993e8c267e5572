"""What a comparison of two runs reads: per-example figures counted in SQL, the results of
a few examples, and the examples in a dataset's order.

Reading a run of 100,000 results whole (outputs, raw answers, every score's explanation
and evidence, each turned into a result) takes seconds; a comparison needs of each
example only how its repetitions fared: how many there were, how many calls failed,
how many passed and failed, and per scorer how many it passed and failed and the mean of
its values. The database counts those (``GROUP BY`` example, and example and scorer over
the scores' JSON: SQLite's ``json_each``, PostgreSQL's ``json_array_elements``) and hands
back one short row per example and scorer.

A row reads as :func:`arbiter.store.repository._pair_result` reads it: a result stored
before scorers (``scores`` null) counts as scored by ``label`` on its ``correct``, its
call failed when it has an error or no label. A mean of values is the one Python makes
(``sum`` in repetition order, over the values as stored: the database hands back their
JSON text, never a float it parsed), so the figures equal those of the whole results.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import bindparam, literal, select, text

from arbiter.contract import PairResult
from arbiter.errors import StoreError
from arbiter.store.models import ResultRow
from arbiter.store.report_models import DatasetExampleRow
from arbiter.store.repository import Store, _pair_result

__all__ = ["RunFigures", "dataset_scope", "results_of", "run_figures"]

_CHUNK = 500
"""Example ids per ``IN (...)`` when results are read by example."""


@dataclass(frozen=True)
class RunFigures:
    """A run's results counted per example (the shapes of
    :class:`arbiter.harness.diff.RunTallies`)."""

    outcome: dict[str, tuple[int, int, int, int]]
    """Example -> (repetitions, failed calls, passed, failed with failed calls), in the
    order :meth:`Store.results` reads them grouped (by first repetition, then example)."""
    scorers: dict[str, dict[str, tuple[int, int, float | None]]]
    """Scorer -> example -> (passed, failed, over repetitions whose call did not fail;
    mean of its values over all, None when it gave none); only examples it scored."""


# Per row: whether it is of schema 1 (``legacy``), its call failed (``dead``), its outcome.
_SQLITE_ROWS = """
SELECT example_id, repetition, scores, correct,
       (scores IS NULL OR scores = 'null') AS legacy,
       CASE WHEN scores IS NULL OR scores = 'null'
            THEN (error_type IS NOT NULL OR label IS NULL)
            ELSE (output IS NULL OR output = 'null') END AS dead,
       CASE WHEN scores IS NULL OR scores = 'null' THEN correct ELSE passed END AS ok
FROM results WHERE run_id = :run
"""

_SQLITE_OUTCOME = f"""
WITH r AS ({_SQLITE_ROWS})
SELECT example_id, COUNT(*), SUM(dead),
       SUM(CASE WHEN NOT dead AND ok = 1 THEN 1 ELSE 0 END),
       SUM(CASE WHEN dead OR ok = 0 THEN 1 ELSE 0 END)
FROM r GROUP BY example_id ORDER BY MIN(repetition), example_id
"""

_SQLITE_SCORES = f"""
WITH r AS NOT MATERIALIZED ({_SQLITE_ROWS}),
s AS (
  SELECT r.example_id, r.repetition, r.dead,
         json_extract(e.value, '$.name') AS name,
         json_extract(e.value, '$.passed') AS passed,
         json_extract(e.value, '$.value') AS value,
         CASE WHEN json_extract(e.value, '$.value') IS NOT NULL
              THEN e.value -> '$.value' END AS shown
  FROM r, json_each(r.scores) AS e WHERE NOT r.legacy
  UNION ALL
  SELECT example_id, repetition, dead, 'label', ok, ok, CASE WHEN ok THEN '1' ELSE '0' END
  FROM r WHERE legacy AND NOT dead
)
SELECT example_id, name,
       SUM(CASE WHEN NOT dead AND passed = 1 THEN 1 ELSE 0 END),
       SUM(CASE WHEN NOT dead AND passed = 0 THEN 1 ELSE 0 END),
       COUNT(value), SUM(CASE WHEN value = 1 THEN 1 ELSE 0 END),
       SUM(CASE WHEN value NOT IN (0, 1) THEN 1 ELSE 0 END),
       group_concat(repetition || ':' || shown, ',')
FROM s WHERE name IN :names GROUP BY example_id, name
"""

_POSTGRES_ROWS = """
SELECT example_id, repetition, scores, correct,
       (scores IS NULL OR scores::text = 'null') AS legacy,
       CASE WHEN scores IS NULL OR scores::text = 'null'
            THEN (error_type IS NOT NULL OR label IS NULL)
            ELSE (output IS NULL OR output::text = 'null') END AS dead,
       CASE WHEN scores IS NULL OR scores::text = 'null' THEN correct ELSE passed END AS ok
FROM results WHERE run_id = :run
"""

_POSTGRES_OUTCOME = f"""
WITH r AS ({_POSTGRES_ROWS})
SELECT example_id, COUNT(*), SUM(CASE WHEN dead THEN 1 ELSE 0 END),
       SUM(CASE WHEN NOT dead AND ok THEN 1 ELSE 0 END),
       SUM(CASE WHEN dead OR NOT ok THEN 1 ELSE 0 END)
FROM r GROUP BY example_id ORDER BY MIN(repetition), example_id
"""

_POSTGRES_SCORES = f"""
WITH r AS NOT MATERIALIZED ({_POSTGRES_ROWS}),
s AS (
  SELECT r.example_id, r.repetition, r.dead,
         e.value ->> 'name' AS name,
         (e.value ->> 'passed')::boolean AS passed,
         CASE WHEN json_typeof(e.value -> 'value') = 'number'
              THEN (e.value ->> 'value')::float8 END AS value,
         CASE WHEN json_typeof(e.value -> 'value') = 'number'
              THEN e.value ->> 'value' END AS shown
  FROM r CROSS JOIN LATERAL json_array_elements(
         CASE WHEN r.legacy THEN '[]'::json ELSE r.scores END) AS e
  UNION ALL
  SELECT example_id, repetition, dead, 'label', ok, CASE WHEN ok THEN 1.0 ELSE 0.0 END,
         CASE WHEN ok THEN '1' ELSE '0' END
  FROM r WHERE legacy AND NOT dead
)
SELECT example_id, name,
       SUM(CASE WHEN NOT dead AND passed THEN 1 ELSE 0 END),
       SUM(CASE WHEN NOT dead AND NOT passed THEN 1 ELSE 0 END),
       COUNT(value), SUM(CASE WHEN value = 1 THEN 1 ELSE 0 END),
       SUM(CASE WHEN value NOT IN (0, 1) THEN 1 ELSE 0 END),
       string_agg(repetition || ':' || shown, ',')
FROM s WHERE name IN :names GROUP BY example_id, name
"""

_QUERIES = {
    "sqlite": (_SQLITE_OUTCOME, _SQLITE_SCORES),
    "postgresql": (_POSTGRES_OUTCOME, _POSTGRES_SCORES),
}


def counted_in_sql(store: Store) -> bool:
    """Whether the store's database counts figures in SQL (SQLite and PostgreSQL do)."""
    return store.engine.dialect.name in _QUERIES


def run_figures(store: Store, run_id: str, scorers: Sequence[str]) -> RunFigures:
    """A run's results counted per example, and per example and each of ``scorers``.

    Raises:
        StoreError: The database is neither SQLite nor PostgreSQL (see
            :func:`counted_in_sql`), or cannot be read.
    """
    dialect = store.engine.dialect.name
    if dialect not in _QUERIES:
        raise StoreError(f"figures of run {run_id} are counted in SQLite or PostgreSQL only")
    outcome_sql, scores_sql = _QUERIES[dialect]
    outcome: dict[str, tuple[int, int, int, int]] = {}
    by_scorer: dict[str, dict[str, tuple[int, int, float | None]]] = {n: {} for n in scorers}
    with store.guard(f"count the results of run {run_id}"), store.session() as session:
        for example_id, reps, dead, passed, failed in session.execute(
            text(outcome_sql), {"run": run_id}
        ):
            outcome[example_id] = (int(reps), int(dead), int(passed), int(failed))
        if scorers:
            query = text(scores_sql).bindparams(bindparam("names", expanding=True))
            rows = session.execute(query, {"run": run_id, "names": list(scorers)})
            for example_id, name, passed, failed, n_values, ones, odd, shown in rows:
                by_scorer[name][example_id] = (
                    int(passed),
                    int(failed),
                    _mean(int(n_values), int(ones), int(odd), shown),
                )
    return RunFigures(outcome, by_scorer)


def _mean(n_values: int, ones: int, odd: int, shown: str | None) -> float | None:
    """The mean of an example's values as Python sums them, in repetition order."""
    if not n_values:
        return None
    if not odd:  # only 0s and 1s: their float sum is exact, whatever the order
        return ones / n_values
    values = sorted((int(rep), float(value)) for rep, value in _pairs(shown or ""))
    known = [value for _, value in values]
    return sum(known) / len(known)


def _pairs(shown: str) -> list[tuple[str, str]]:
    pairs = []
    for item in shown.split(","):
        rep, _, value = item.partition(":")
        pairs.append((rep, value))
    return pairs


def results_of(
    store: Store, run_id: str, example_ids: Sequence[str]
) -> dict[str, list[PairResult]]:
    """The results of these examples in a run, by example, repetitions in order."""
    grouped: dict[str, list[PairResult]] = {}
    wanted = list(dict.fromkeys(example_ids))
    with store.guard(f"read the results of run {run_id}"), store.session() as session:
        for start in range(0, len(wanted), _CHUNK):
            rows = session.scalars(
                select(ResultRow)
                .where(
                    ResultRow.run_id == run_id,
                    ResultRow.example_id.in_(wanted[start : start + _CHUNK]),
                )
                .order_by(ResultRow.example_id, ResultRow.repetition)
            ).all()
            for row in rows:
                grouped.setdefault(row.example_id, []).append(_pair_result(row))
    return grouped


_COHORT = {
    "sqlite": "json_extract(example, '$.cohort')",
    "postgresql": "example ->> 'cohort'",
}


def dataset_scope(
    store: Store, dataset_hash: str, limit: int | None, *, cohorts: bool = False
) -> list[tuple[str, str | None]] | None:
    """The ids of a dataset's first ``limit`` examples (None: all) in its order, each with
    its cohort when ``cohorts`` (else None: reading it parses every example), from its
    index of examples (see :func:`arbiter.store.report_repository.index_examples`).

    Returns:
        None when the dataset is not indexed, or the database is neither SQLite nor
        PostgreSQL.
    """
    cohort = _COHORT.get(store.engine.dialect.name)
    if cohort is None:
        return None
    query = select(DatasetExampleRow.example_id, text(cohort) if cohorts else literal(None)).where(
        DatasetExampleRow.dataset_hash == dataset_hash
    )
    if limit:
        query = query.where(DatasetExampleRow.position < limit)
    action = f"read the examples of dataset {dataset_hash[:12]}"
    with store.guard(action), store.session() as session:
        rows = session.execute(query.order_by(DatasetExampleRow.position)).all()
    return [(str(example_id), found) for example_id, found in rows] or None
