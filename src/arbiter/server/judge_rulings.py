"""Recent judge rulings to annotate: what an LLM judge said of one stored item.

A ruling is one score of a *model* scorer (a judge: its spec's kind is ``model``) on one
result of a stored run. Its item id is the result's record id
(``run:{run_id}:{repetition}:{example}``, see :mod:`arbiter.server.agent_records`), so
an annotation on it points back at what was judged; its dimension is the judge's own
(the registry's), else the judge's name.

The queue reads the newest :data:`QUEUE_RUNS` runs that have a judge and at most
:data:`RESULTS_PER_RUN` results of each, so it stays fast on stores of large runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from arbiter.contract import Annotation, FrozenRuling, PairResult, RunInfo, Score
from arbiter.errors import StoreError
from arbiter.server.agent_records import is_agent_run, parse_record_id, record_id
from arbiter.store import Store
from arbiter.store.browse_repository import ResultFilter, page_results

__all__ = [
    "QUEUE_RUNS",
    "RESULTS_PER_RUN",
    "Ruling",
    "find_ruling",
    "judge_labels",
    "recent_rulings",
]

QUEUE_RUNS = 20
"""Newest runs with a judge the queue reads."""
RESULTS_PER_RUN = 200
"""Results of each run the queue reads."""


@dataclass(frozen=True)
class Ruling:
    """One judge's ruling on one stored item, as the queue shows it."""

    item_id: str
    """The item's id: the result's record id."""
    judge: str
    """The judge's name in the run."""
    dimension: str
    score: Score
    """The judge's score as stored now."""
    frozen: FrozenRuling
    """The ruling as it would be frozen if labelled now."""
    run: RunInfo
    example_id: str
    repetition: int
    answer: str | None
    """The judged output's text, when it has one."""
    at: datetime
    agent_run: bool
    """Whether the item is an agent's trajectory (it opens on ``/trajectories``)."""


def judge_labels(info: RunInfo) -> list[str]:
    """The names (in the run) of the run's model scorers: its judges."""
    specs = info.config.get("scorers") or []
    names = []
    for spec in specs:
        if isinstance(spec, dict) and spec.get("kind") == "model":
            name = spec.get("alias") or spec.get("name")
            if isinstance(name, str):
                names.append(name)
    return names


def _rulings(
    info: RunInfo, result: PairResult, judges: list[str], dimension_of: Callable[[str], str | None]
) -> list[Ruling]:
    found = []
    at = info.finished_at or info.created_at
    at = at if at.tzinfo is not None else at.replace(tzinfo=UTC)
    for score in result.scores:
        if score.name not in judges:
            continue
        found.append(
            Ruling(
                item_id=record_id(info.id, result.repetition, result.example_id),
                judge=score.name,
                dimension=dimension_of(score.name) or score.name,
                score=score,
                frozen=FrozenRuling.of(score),
                run=info,
                example_id=result.example_id,
                repetition=result.repetition,
                answer=result.output.answer_text if result.output is not None else None,
                at=at,
                agent_run=is_agent_run(info),
            )
        )
    return found


def recent_rulings(
    store: Store,
    dimension_of: Callable[[str], str | None],
    *,
    judge: str | None = None,
    unlabelled_by: str | None = None,
    annotations: list[Annotation] | None = None,
) -> list[Ruling]:
    """Judge rulings of the newest runs with a judge, newest run first.

    Args:
        store: The store.
        dimension_of: The dimension a judge (by name) measures; None: its name.
        judge: Only this judge's rulings.
        unlabelled_by: Leave out rulings this annotator already labelled.
        annotations: The stored annotations (to know what is labelled).
    """
    done = {
        (a.item_id, a.dimension)
        for a in annotations or ()
        if unlabelled_by is not None and a.annotator == unlabelled_by
    }
    rulings: list[Ruling] = []
    seen_runs = 0
    for info in store.list_runs(limit=200):
        judges = [j for j in judge_labels(info) if judge is None or j == judge]
        if not judges:
            continue
        seen_runs += 1
        results, _ = page_results(store, info.id, ResultFilter(), offset=0, limit=RESULTS_PER_RUN)
        for result in results:
            for ruling in _rulings(info, result, judges, dimension_of):
                if (ruling.item_id, ruling.dimension) not in done:
                    rulings.append(ruling)
        if seen_runs >= QUEUE_RUNS:
            break
    return rulings


def find_ruling(
    store: Store, item_id: str, judge: str, dimension_of: Callable[[str], str | None]
) -> Ruling | None:
    """The ruling of ``judge`` on the item ``item_id`` names, as stored now; None if none."""
    ref = parse_record_id(item_id)
    if ref is None:
        return None
    try:
        info = store.get_run(ref.run_id)
    except StoreError:
        return None
    if judge not in judge_labels(info):
        return None
    for result in store.results(info.id):
        if result.example_id == ref.case_id and result.repetition == ref.repetition:
            found = _rulings(info, result, [judge], dimension_of)
            return found[0] if found else None
    return None
