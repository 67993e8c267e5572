"""Imported agent runs as an engine's work (``arbiter agent score --engine``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from arbiter.contract import AgentCase, ScorerSpec
from arbiter.engines.base import Engine
from arbiter.errors import EngineError
from arbiter.scoring.base import BuiltScorer
from arbiter.trajectories.loader import ImportedRun

if TYPE_CHECKING:
    from arbiter.contract import Example, Score
    from arbiter.service.agents import AgentScoreReport, GateOn, ScoredRun
    from arbiter.store import Store
    from arbiter.telemetry import Telemetry

__all__ = ["AgentScoreWork", "score_agent_runs_on"]


Scored = tuple[int, "Example", list["Score"]]
"""An agent run's position among the runs given, the case it was scored against, and
its scores: the run itself stays with the driver (it is not sent back)."""


class AgentScoreWork:
    """Imported agent runs as an engine's work: each run scored by every trajectory
    scorer (:func:`~arbiter.service.agents.score_runs`, the code ``agent score`` always
    ran). A run's stable id is its trace id and first span, else its case and repetition."""

    def __init__(
        self,
        scorers: Sequence[BuiltScorer] | None,
        *,
        specs: Sequence[ScorerSpec],
        cases: Mapping[str, AgentCase] | None = None,
    ) -> None:
        self.scorers, self.specs, self.cases = scorers, list(specs), dict(cases or {})

    @property
    def concurrency(self) -> int:
        """Scoring is computation: one run at a time per worker."""
        return 1

    @property
    def limit_key(self) -> str | None:
        """No system is called: no shared pool."""
        return None

    def key(self, item: tuple[int, ImportedRun]) -> str:
        """The run's trace id and first span, else its case id and repetition."""
        run = item[1]
        subject = run.trajectory or run.flow
        source = subject.source if subject is not None else None
        if source is not None and source.trace_id:
            return f"{source.trace_id}/{source.span_ids[0] if source.span_ids else ''}"
        return f"{run.case_id}/{run.repetition}"

    def portable(self) -> AgentScoreWork:
        """The work without its built scorers, rebuilt in the worker from their specs."""
        return AgentScoreWork(None, specs=self.specs, cases=self.cases)

    def limited(self, concurrency: int) -> AgentScoreWork:
        """The same work (it scores one run at a time whatever the limit)."""
        return self

    async def run(
        self,
        items: Iterable[tuple[int, ImportedRun]],
        emit: Callable[[Scored], Awaitable[None]],
    ) -> None:
        """Score every run, awaiting ``emit`` with its position and scores."""
        from arbiter.service.agents import score_runs

        scorers = self.scorers if self.scorers is not None else _built(self.specs)
        for index, run in items:
            (scored,) = await score_runs([run], scorers, cases=self.cases)
            await emit((index, scored.example, scored.scores))


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
    with a ``store``, the driver stores them (the workers never write).
    """
    from arbiter.service.agents import ScoredRun, score_agent_runs, store_scored_runs, summarize

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

    async def keep(item: Scored) -> None:
        index, example, scores = item
        run = runs[index]
        found[index] = ScoredRun(run=run, example=example, imported=list(run.scores), scores=scores)

    await engine.run(work, enumerate(runs), keep)
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
