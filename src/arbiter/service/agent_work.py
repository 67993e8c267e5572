"""Imported agent runs as an engine's work (``arbiter agent score --engine``).

On a cluster, what a run costs to send and to send back is set beside what it costs to
score (about a millisecond with every trajectory scorer). So the work ships little:

- to a worker, each run goes as one ``bytes`` value: only what scoring reads of it (its
  case id, assertions, trajectory and flow), pickled by the driver and read back by the
  worker with the collector paused (every object read is alive until the batch ends,
  and the collector's passes over that growing heap cost more than the reading itself);
  the run's imported scores and repairs stay with the driver;
- back, each run's scores only (the driver makes the case again from the run, as the
  worker did), with alike scores of one batch made one object, so a batch's results
  travel as a few distinct scores and, per run, references to them.
"""

from __future__ import annotations

import gc
import pickle
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from arbiter.contract import AgentCase, Score, ScorerSpec
from arbiter.engines.base import CallGate, Engine
from arbiter.errors import EngineError
from arbiter.scoring.base import BuiltScorer
from arbiter.trajectories.loader import ImportedRun

if TYPE_CHECKING:
    from arbiter.service.agents import AgentScoreReport, GateOn, ScoredRun
    from arbiter.store import Store
    from arbiter.telemetry import Telemetry

__all__ = ["AgentScoreWork", "SentRun", "run_key", "score_agent_runs_on", "sent_run"]


SentRun = tuple[int, str, bytes]
"""An agent run as it travels to a worker: its position among the runs given, its
stable id (:func:`run_key`), and what scoring reads of it, pickled (:func:`sent_run`)."""

Scored = tuple[int, list[Score]]
"""An agent run's position among the runs given and its scores, in scorer order: the
run and its case stay with the driver (they are not sent back)."""


def run_key(run: ImportedRun) -> str:
    """The run's trace id and first span, else its case id and repetition."""
    subject = run.trajectory or run.flow
    source = subject.source if subject is not None else None
    if source is not None and source.trace_id:
        return f"{source.trace_id}/{source.span_ids[0] if source.span_ids else ''}"
    return f"{run.case_id}/{run.repetition}"


def sent_run(index: int, run: ImportedRun) -> SentRun:
    """The run at ``index`` as it travels to a worker (see :data:`SentRun`).

    Pickled rather than dumped as JSON: JSON would turn a NaN of a tool's result into
    null, and reading a trajectory from JSON validates it again, which costs more than
    unpickling it.
    """
    read = (run.case_id, run.repetition, run.assertions, run.trajectory, run.flow)
    return index, run_key(run), pickle.dumps(read, protocol=pickle.HIGHEST_PROTOCOL)


def _received(items: Iterable[SentRun]) -> list[tuple[int, ImportedRun]]:
    """The runs of a batch as a worker reads them back: what scoring needs of each.

    Read with the collector paused, then set aside from it (:func:`gc.freeze`) until
    :func:`_released`: they are all alive until the batch ends, and its passes over
    them would cost as much as reading them.
    """
    with _collector_paused():
        received = []
        for index, _, payload in items:
            case_id, repetition, assertions, trajectory, flow = pickle.loads(payload)
            run = ImportedRun(
                trajectory=trajectory,
                flow=flow,
                case_id=case_id,
                repetition=repetition,
                assertions=assertions,
            )
            received.append((index, run))
        gc.freeze()
    return received


def _released() -> None:
    """The objects :func:`_received` set aside, given back to the collector."""
    gc.unfreeze()


@contextmanager
def _collector_paused() -> Iterator[None]:
    """No garbage collection while a batch is read: everything it makes stays alive,
    and the collector's passes over the growing heap cost four times the reading."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


_SCORE_JSON = Score.__pydantic_serializer__


class _Alike:
    """The scores of one batch, alike ones made one object, so that they travel once
    (pickle sends an object met again as a reference to the first).

    Alike is exact: the same JSON (which tells ``1`` from ``1.0`` and ``True``, ``-0.0``
    from ``0.0``, and keeps the order of keys), the same fields set by the scorer, and
    equal as objects (which tells a NaN from None, a tuple from a list). A score that
    has no JSON travels alone.
    """

    def __init__(self) -> None:
        self.seen: dict[tuple[bytes, frozenset[str]], Score] = {}

    def shared(self, scores: list[Score]) -> list[Score]:
        """``scores``, each replaced by the first alike score of the batch, if any."""
        seen, to_json = self.seen, _SCORE_JSON.to_json
        kept = []
        for score in scores:
            if type(score) is Score:
                try:
                    key = (to_json(score, warnings=False), frozenset(score.model_fields_set))
                except Exception:  # a value with no JSON: never alike another
                    kept.append(score)
                    continue
                first = seen.setdefault(key, score)
                # Scores of one class with the same fields set: their values decide.
                if first is not score and first.__dict__ == score.__dict__:
                    score = first
            kept.append(score)
        return kept


class AgentScoreWork:
    """Imported agent runs as an engine's work: each run (a :data:`SentRun`) scored by
    every trajectory scorer, as :func:`~arbiter.service.agents.score_runs` scores it (the
    code ``agent score`` always ran), its scores emitted with its position. A run's
    stable id is its trace id and first span, else its case and repetition."""

    def __init__(
        self,
        scorers: Sequence[BuiltScorer] | None,
        *,
        specs: Sequence[ScorerSpec],
        cases: Mapping[str, AgentCase] | None = None,
        gate: CallGate | None = None,
    ) -> None:
        self.scorers, self.specs, self.cases = scorers, list(specs), dict(cases or {})
        self.gate = gate

    @property
    def concurrency(self) -> int:
        """Scoring is computation: one run at a time per worker."""
        return 1

    @property
    def limit_key(self) -> str | None:
        """No system is called: no shared pool."""
        return None

    def key(self, item: SentRun) -> str:
        """The run's stable id, as :func:`sent_run` took it."""
        return item[1]

    def portable(self) -> AgentScoreWork:
        """The work without its built scorers, rebuilt in the worker from their specs."""
        return AgentScoreWork(None, specs=self.specs, cases=self.cases)

    def limited(self, concurrency: int) -> AgentScoreWork:
        """The same work (it scores one run at a time whatever the limit)."""
        return self

    def gated(self, gate: CallGate) -> AgentScoreWork:
        """The work with its scorers' model calls (a judge named with ``--scorer``)
        passing ``gate``, a cluster's shared limits: the worker builds them with it."""
        return AgentScoreWork(None, specs=self.specs, cases=self.cases, gate=gate)

    async def run(
        self, items: Iterable[SentRun], emit: Callable[[Scored], Awaitable[None]]
    ) -> None:
        """Score every run, awaiting ``emit`` with its position and scores (alike scores
        of these runs are one object)."""
        from arbiter.service.agents import score_runs

        context = None
        if self.scorers is not None:
            scorers = self.scorers
        elif self.gate is None:
            scorers = _built(self.specs)
        else:  # built for this batch: its gate holds this batch's slots
            from arbiter.scoring.base import ScoringContext
            from arbiter.service.scoring import build_scorers

            context = ScoringContext(gate=self.gate)
            scorers = build_scorers(self.specs, context=context)
        alike = _Alike()
        received = _received(items)
        try:
            for index, run in received:
                (scored,) = await score_runs([run], scorers, cases=self.cases)
                await emit((index, alike.shared(scored.scores)))
        finally:
            _released()
            if context is not None:
                await context.aclose()


async def score_agent_runs_on(
    engine: Engine,
    runs: Sequence[ImportedRun],
    scorers: Sequence[BuiltScorer],
    *,
    cases: Mapping[str, AgentCase] | None = None,
    gate_on: GateOn | None = None,
    seed: int = 0,
    telemetry: Telemetry | None = None,
    store: Store | None = None,
) -> AgentScoreReport:
    """:func:`~arbiter.service.agents.score_agent_runs` with the runs scored on
    ``engine``: the same scores and the same report, whichever engine scored them.

    The report lists runs in the order given, however the engine ordered their scoring;
    with a ``store``, the driver stores them (the workers never write). Alike scores of
    runs scored in one batch may be one object.
    """
    from arbiter.service.agents import (
        ScoredRun,
        example_of,
        score_agent_runs,
        store_scored_runs,
        summarize,
    )

    if engine.name == "local":
        return await score_agent_runs(
            runs,
            scorers,
            cases=cases,
            gate_on=gate_on,
            seed=seed,
            telemetry=telemetry,
            store=store,
        )
    work = AgentScoreWork(scorers, specs=[s.spec for s in scorers], cases=cases)
    found: list[ScoredRun | None] = [None] * len(runs)
    by_id = dict(cases or {})

    async def keep(item: Scored) -> None:
        index, scores = item
        run = runs[index]
        example = example_of(run, by_id.get(run.case_id))
        found[index] = ScoredRun(run=run, example=example, imported=list(run.scores), scores=scores)

    # A generator, not a list: each run is pickled as its bucket takes it, so the first
    # batches leave while the rest are made, and the engine grows its batches as a
    # stream's (the first ones small, so the workers start at once).
    sent = (sent_run(index, run) for index, run in enumerate(runs))
    await engine.run(work, sent, keep)
    scored = [s for s in found if s is not None]
    if len(scored) != len(runs):  # an engine emits every result once: a bug, not input
        raise EngineError(f"the engine returned {len(scored)} of {len(runs)} scored runs")
    if telemetry is not None and telemetry.enabled:
        from arbiter.service.agents import _emit

        for each in scored:
            _emit(each.run, [*each.imported, *each.scores], telemetry)
    if store is not None:
        store_scored_runs(store, scored, scorers)
    return summarize(scored, scorers, gate_on=gate_on, seed=seed)


_BUILT: dict[str, list[BuiltScorer]] = {}
"""Scorers a worker process built, by their specs: built once, used for every batch (the
trajectory scorers hold no connection, so one set serves every batch of the process)."""


def _built(specs: Sequence[ScorerSpec]) -> list[BuiltScorer]:
    import json

    key = json.dumps([spec.model_dump(mode="json") for spec in specs], sort_keys=True)
    if key not in _BUILT:
        from arbiter.service.scoring import scorer_registry

        _BUILT[key] = scorer_registry().build_all(specs)
    return _BUILT[key]
