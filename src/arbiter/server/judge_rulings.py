"""Recent judge rulings to annotate: what an LLM judge said of one stored item.

A ruling is one score of a *model* scorer (a judge: its spec's kind is ``model``) on one
result of a stored run, or on a stored trajectory scored online with a judge. Its item
id is the result's record id (``run:{run_id}:{repetition}:{example}``, see
:mod:`arbiter.service.agent_records`) or the trajectory's (``tr-...``), so an annotation
on it points back at what was judged; its dimension is the judge's own (the
registry's), else the judge's name.

The queue reads the rulings a page at a time, newest runs (and stored trajectories)
first, a run's results in example order, and hands back a :class:`QueueCursor` to the
next page. Each page reads at most :data:`SCAN_BUDGET` results and trajectories, so a
page of a store of any size costs the same; a page cut short by the budget says so and
its cursor goes on from where it stopped.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from arbiter.contract import (
    Example,
    FrozenRuling,
    PairResult,
    RunInfo,
    Score,
    StoredTrajectory,
)
from arbiter.errors import InputError, StoreError
from arbiter.service.agent_records import is_agent_run, parse_record_id, record_id
from arbiter.store import Store
from arbiter.store.browse_repository import ResultFilter, run_headers
from arbiter.store.report_repository import examples_by_id
from arbiter.store.result_pages import page_results
from arbiter.store.trajectory_repository import get_trajectory, list_trajectories

__all__ = [
    "PAGE_RULINGS",
    "SCAN_BUDGET",
    "QueueCursor",
    "QueuePage",
    "Ruling",
    "find_ruling",
    "judge_labels",
    "queue_page",
]

PAGE_RULINGS = 20
"""Rulings one queue page shows (a result judged twice may add one more)."""
SCAN_BUDGET = 2_000
"""Results and stored trajectories one queue page reads at the most."""
_RUN_BATCH = 100
"""Run headers read at a time while looking for runs with a judge."""
_RESULT_BATCH = 100
"""Results of a run read at a time."""


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
    example: Example | None = None
    """The example judged (its input and reference), when the dataset has it."""
    question: str | None = None
    """A stored trajectory's question: its first user message."""


def judge_labels(info: RunInfo | dict[str, Any]) -> list[str]:
    """The names (in the run) of a run's model scorers (its judges), from the run or its
    stored config."""
    config = info if isinstance(info, dict) else info.config
    specs = config.get("scorers") or []
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


def _question(stored: StoredTrajectory) -> str | None:
    """The first user message of a stored trajectory's first model call, if any."""
    if stored.trajectory is None:
        return None
    for call in stored.trajectory.llm_calls:
        for message in call.input_messages:
            if message.role == "user" and message.content:
                return message.content
    return None


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
            question=_question(stored),
        )
        for score in stored.scores
        if score.name in judges
    ]


@dataclass(frozen=True)
class QueueCursor:
    """Where a queue page starts: in the runs (newest first) and the stored trajectories
    (newest first), each read in its order, the two merged by time."""

    run: str | None = None
    """The run being read (None: start at the newest run)."""
    offset: int = 0
    """Results of ``run`` already passed."""
    runs_done: bool = False
    """Every run was read."""
    stored: int = 0
    """Stored trajectories already passed."""
    stored_done: bool = False
    """Every stored trajectory was read."""

    def encode(self) -> str:
        """The cursor as an opaque token for a URL."""
        fields = [self.run, self.offset, self.runs_done, self.stored, self.stored_done]
        raw = json.dumps(fields, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @classmethod
    def decode(cls, token: str) -> QueueCursor:
        """The cursor a token names.

        Raises:
            InputError: The token is not one :meth:`encode` made.
        """
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
            run, offset, runs_done, stored, stored_done = json.loads(raw)
            ok = (run is None or isinstance(run, str)) and all(
                isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (offset, stored)
            )
            if ok and isinstance(runs_done, bool) and isinstance(stored_done, bool):
                return cls(run, offset, runs_done, stored, stored_done)
        except (ValueError, TypeError):
            pass
        raise InputError("cursor: not a position this queue handed out")


@dataclass(frozen=True)
class QueuePage:
    """One page of the queue."""

    rulings: list[Ruling]
    """The rulings to label, newest first."""
    next: QueueCursor | None
    """Where the next page starts; None at the end of the queue."""
    scanned: int
    """Results and trajectories read for it."""
    cut: bool
    """The page stopped at the scan budget, before it was full."""


def _judged_runs(
    store: Store, viewer: str | None, judge: str | None, start: str | None
) -> Iterator[str]:
    """Ids of the runs with a judge, newest first, from the run ``start`` on (it first)."""
    if start is not None:
        yield start
    after = start
    while True:
        batch = run_headers(store, viewer=viewer, after=after, limit=_RUN_BATCH)
        for run_id, config in batch:
            if any(judge is None or j == judge for j in judge_labels(config)):
                yield run_id
        if len(batch) < _RUN_BATCH:
            return
        after = batch[-1][0]


def _run_info(store: Store, run_id: str, viewer: str | None) -> RunInfo | None:
    from arbiter.service.browse import find_run

    try:
        info = find_run(store, run_id, viewer=viewer)
    except StoreError:
        return None
    return info if info.id == run_id else None


def queue_page(
    store: Store,
    dimension_of: Callable[[str], str | None],
    *,
    cursor: QueueCursor | None = None,
    judge: str | None = None,
    done: Collection[tuple[str, str]] = (),
    viewer: str | None = None,
    size: int = PAGE_RULINGS,
    budget: int = SCAN_BUDGET,
) -> QueuePage:
    """One page of judge rulings to label, from ``cursor`` on (None: the newest).

    Args:
        store: The store.
        dimension_of: The dimension a judge (by name) measures; None: its name.
        cursor: Where the page starts.
        judge: Only this judge's rulings.
        done: (item, dimension) pairs to leave out (what the annotator labelled).
        viewer: Whose runs and trajectories may be seen; None: all.
        size: Rulings the page holds (a result judged twice may add one more).
        budget: Results and trajectories the page reads at the most.
    """
    at = cursor or QueueCursor()
    rulings: list[Ruling] = []
    scanned = 0
    runs = _judged_runs(store, viewer, judge, at.run)
    info = None if at.runs_done else _next_info(store, runs, viewer)
    offset = at.offset if info is not None and info.id == at.run else 0
    pending: list[StoredTrajectory] = []
    stored, stored_done = at.stored, at.stored_done
    while len(rulings) < size and scanned < budget:
        if not pending and not stored_done:
            pending, total = list_trajectories(store, viewer=viewer, offset=stored, limit=50)
            stored_done = not pending and stored >= total
        traj_at = _utc(pending[0].created_at) if pending else None
        run_at = _utc(info.created_at) if info is not None else None
        if run_at is None and traj_at is None:
            break
        if run_at is not None and (traj_at is None or run_at >= traj_at):
            assert info is not None
            found, scanned, offset = _from_run(
                store, info, judge, dimension_of, offset, size - len(rulings), scanned, budget
            )
            rulings += [r for r in found if (r.item_id, r.dimension) not in done]
            if offset < 0:  # the run is read to its end
                info, offset = _next_info(store, runs, viewer), 0
            continue
        record = pending.pop(0)
        stored += 1
        scanned += 1
        judges = [j for j in _stored_judges(record) if judge is None or j == judge]
        rulings += [
            r
            for r in _stored_rulings(record, judges, dimension_of)
            if (r.item_id, r.dimension) not in done
        ]
    if not pending and not stored_done:
        _, total = list_trajectories(store, viewer=viewer, offset=stored, limit=0)
        stored_done = stored >= total
    end = info is None and stored_done
    next_cursor = (
        None
        if end
        else QueueCursor(
            run=info.id if info is not None else None,
            offset=offset,
            runs_done=info is None,
            stored=stored,
            stored_done=stored_done,
        )
    )
    return QueuePage(rulings, next_cursor, scanned, len(rulings) < size and not end)


def _utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _next_info(store: Store, runs: Iterator[str], viewer: str | None) -> RunInfo | None:
    for run_id in runs:
        info = _run_info(store, run_id, viewer)
        if info is not None:
            return info
    return None


def _from_run(
    store: Store,
    info: RunInfo,
    judge: str | None,
    dimension_of: Callable[[str], str | None],
    offset: int,
    wanted: int,
    scanned: int,
    budget: int,
) -> tuple[list[Ruling], int, int]:
    """Rulings of ``info``'s results from ``offset`` on, until ``wanted`` are found or
    the budget is spent: (rulings, scanned, the next offset or -1 at the run's end)."""
    judges = [j for j in judge_labels(info) if judge is None or j == judge]
    found: list[Ruling] = []
    while len(found) < wanted and scanned < budget:
        limit = min(_RESULT_BATCH, budget - scanned)
        results, total = page_results(store, info.id, ResultFilter(), offset=offset, limit=limit)
        examples = examples_by_id(store, info.dataset_hash, [r.example_id for r in results])
        for result in results:
            scanned += 1
            offset += 1
            example = examples.get(result.example_id)
            found += [
                replace(r, example=example) for r in _rulings(info, result, judges, dimension_of)
            ]
            if len(found) >= wanted:
                break
        if offset >= total or not results:
            return found, scanned, -1
    return found, scanned, offset


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
