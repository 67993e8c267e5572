"""Recent judge rulings to annotate: what an LLM judge said of one stored item.

A ruling is one score of a *model* scorer (a judge: its spec's kind is ``model``) on one
result of a stored run, or on a stored trajectory scored online with a judge. Its item
id is the result's record id (``run:{run_id}:{repetition}:{example}``, see
:mod:`arbiter.service.agent_records`) or the trajectory's (``tr-...``), so an annotation
on it points back at what was judged; its dimension is the judge's own (the
registry's), else the judge's name.

The queue reads the newest :data:`QUEUE_RUNS` runs that have a judge, at most
:data:`RESULTS_PER_RUN` results of each, and the newest :data:`STORED_RUNS` stored
trajectories, so it stays fast on a large store.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from arbiter.contract import (
    Annotation,
    FrozenRuling,
    PairResult,
    RunInfo,
    Score,
    StoredTrajectory,
)
from arbiter.errors import StoreError
from arbiter.service.agent_records import is_agent_run, parse_record_id, record_id
from arbiter.store import Store
from arbiter.store.browse_repository import ResultFilter, RunFilter, page_results
from arbiter.store.trajectory_repository import get_trajectory, list_trajectories

__all__ = [
    "QUEUE_RUNS",
    "RESULTS_PER_RUN",
    "STORED_RUNS",
    "Ruling",
    "find_ruling",
    "judge_labels",
    "recent_rulings",
]

QUEUE_RUNS = 20
"""Newest runs with a judge the queue reads."""
RESULTS_PER_RUN = 200
"""Results of each run the queue reads."""
STORED_RUNS = 500
"""Newest stored trajectories the queue reads (their judges' scores, when they have any)."""


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
    run: RunInfo | None
    """The stored run it is a result of; None for a stored trajectory."""
    example_id: str
    """The example (case) judged; a stored trajectory's own id."""
    repetition: int
    answer: str | None
    """The judged output's text, when it has one."""
    at: datetime
    agent_run: bool
    """Whether the item is an agent's trajectory (it opens on ``/trajectories``)."""
    source: str = ""
    """Where the item is, in words: the run's name, or the agent's."""


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
                source=info.name or info.id,
            )
        )
    return found


def _stored_judges(stored: StoredTrajectory) -> list[str]:
    return [spec.label for spec in stored.scorers if spec.kind == "model"]


def _stored_rulings(
    stored: StoredTrajectory, judges: list[str], dimension_of: Callable[[str], str | None]
) -> list[Ruling]:
    at = stored.created_at if stored.created_at.tzinfo else stored.created_at.replace(tzinfo=UTC)
    run = stored.trajectory or stored.flow
    answer = None
    if stored.trajectory is not None:
        answer = stored.trajectory.final_answer
    elif stored.flow is not None:
        answer = stored.flow.output
    return [
        Ruling(
            item_id=stored.id,
            judge=score.name,
            dimension=dimension_of(score.name) or score.name,
            score=score,
            frozen=FrozenRuling.of(score),
            run=None,
            example_id=(run.id if run is not None else None) or stored.id,
            repetition=0,
            answer=answer,
            at=at,
            agent_run=True,
            source=stored.agent,
        )
        for score in stored.scores
        if score.name in judges
    ]


def recent_rulings(
    store: Store,
    dimension_of: Callable[[str], str | None],
    *,
    judge: str | None = None,
    unlabelled_by: str | None = None,
    annotations: list[Annotation] | None = None,
    viewer: str | None = None,
) -> list[Ruling]:
    """Judge rulings of the newest runs with a judge, newest run first.

    Args:
        store: The store.
        dimension_of: The dimension a judge (by name) measures; None: its name.
        judge: Only this judge's rulings.
        unlabelled_by: Leave out rulings this annotator already labelled.
        annotations: The stored annotations (to know what is labelled).
        viewer: Whose runs and trajectories may be seen; None: all.
    """
    from arbiter.service.browse import list_runs

    done = {
        (a.item_id, a.dimension)
        for a in annotations or ()
        if unlabelled_by is not None and a.annotator == unlabelled_by
    }
    rulings: list[Ruling] = []
    seen_runs = 0
    for info in list_runs(store, RunFilter(viewer=viewer), limit=200).items:
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
    stored, _ = list_trajectories(store, viewer=viewer, limit=STORED_RUNS)
    for record in stored:
        judges = [j for j in _stored_judges(record) if judge is None or j == judge]
        for ruling in _stored_rulings(record, judges, dimension_of):
            if (ruling.item_id, ruling.dimension) not in done:
                rulings.append(ruling)
    return sorted(rulings, key=lambda r: r.at, reverse=True)


def find_ruling(
    store: Store,
    item_id: str,
    judge: str,
    dimension_of: Callable[[str], str | None],
    *,
    viewer: str | None = None,
) -> Ruling | None:
    """The ruling of ``judge`` on the item ``item_id`` names, as stored now, if ``viewer``
    may see it; None if none."""
    from arbiter.service.browse import find_run

    ref = parse_record_id(item_id)
    if ref is None:
        stored = get_trajectory(store, item_id, viewer=viewer)
        if stored is None or judge not in _stored_judges(stored):
            return None
        found = _stored_rulings(stored, [judge], dimension_of)
        return found[0] if found else None
    try:
        info = find_run(store, ref.run_id, viewer=viewer)
    except StoreError:
        return None
    if info.id != ref.run_id or judge not in judge_labels(info):
        return None
    for result in store.results(info.id):
        if result.example_id == ref.case_id and result.repetition == ref.repetition:
            found = _rulings(info, result, [judge], dimension_of)
            return found[0] if found else None
    return None
