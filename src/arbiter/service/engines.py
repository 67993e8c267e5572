"""Which engine a command runs on, and what its work needs to travel to a cluster.

``--engine local`` (the default) runs everything in this process, as Arbiter always
has; ``--engine ray`` runs the same code on a Ray cluster (:mod:`arbiter.engines`)::

    choice = EngineChoice("ray", ray_address="auto")
    with opened_engine(choice) as engine:
        parts = run_parts(plan.system, plan.headers, plan.scorers, use_cache=False)
        report = await start_run(system, dataset, config=config, store=store,
                                 engine=engine, parts=parts)

A worker rebuilds what cannot travel from what can: the system from its stored
description (and the header values, which are sent to the workers, never stored), the
scorers from their specs, with the registry every command uses (plugins included).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from arbiter.contract import AgentCase, OnlineResult, ScorerSpec
from arbiter.engines.base import ENGINE_NAMES, Engine, EngineName
from arbiter.engines.local import LocalEngine
from arbiter.errors import EngineError, InputError
from arbiter.harness.runner import RunParts
from arbiter.scoring.base import BuiltScorer, Scorer, ScoringContext
from arbiter.systems.base import SystemUnderTest
from arbiter.trajectories.loader import ImportedRun

if TYPE_CHECKING:
    from arbiter.config import Settings
    from arbiter.online.config import OnlineConfig
    from arbiter.online.pipeline import OnlinePipeline
    from arbiter.service.agents import AgentScoreReport, GateOn, ScoredRun
    from arbiter.store import Store
    from arbiter.telemetry import Telemetry

__all__ = [
    "AgentScoreWork",
    "EngineChoice",
    "LineWork",
    "agent_run_parts",
    "opened_engine",
    "run_parts",
    "score_agent_runs_on",
]


@dataclass(frozen=True)
class EngineChoice:
    """The engine a command was told to use."""

    name: EngineName = "local"
    """``local`` (this process) or ``ray``."""
    ray_address: str = "auto"
    """With ``ray``: ``auto`` (the cluster this machine knows, else a local one started
    for the command), ``local``, or a cluster's address."""

    @classmethod
    def of(
        cls, name: str | None, ray_address: str | None, *, where: str = "--engine"
    ) -> EngineChoice:
        """A choice from options; ``--ray-address`` without ``--engine ray`` is refused.

        Raises:
            InputError: An unknown engine, or a Ray address for the local engine.
        """
        chosen = name or "local"
        if chosen not in ENGINE_NAMES:
            raise InputError(f"{where} {chosen!r}: expected one of {', '.join(ENGINE_NAMES)}")
        if ray_address is not None and chosen != "ray":
            raise InputError("--ray-address is for --engine ray")
        engine: EngineName = "ray" if chosen == "ray" else "local"
        return cls(engine, ray_address or "auto")


@contextlib.contextmanager
def opened_engine(choice: EngineChoice | None = None) -> Iterator[Engine]:
    """The chosen engine, opened (connected to its cluster, or a local cluster started)
    for the block and closed after.

    Raises:
        EngineError: Ray is not installed, or the cluster cannot be reached or started.
    """
    if choice is None or choice.name == "local":
        yield LocalEngine()
        return
    from arbiter.engines.ray import RayEngine

    with RayEngine(choice.ray_address) as engine:
        yield engine


def run_parts(
    system: Mapping[str, Any],
    headers: Mapping[str, str] | None,
    scorers: Sequence[ScorerSpec],
    *,
    use_cache: bool,
) -> RunParts:
    """How a worker builds a run's system and scorers: from the system's description,
    the header values and the scorers' specs (a picklable callable)."""
    return functools.partial(
        _build_run_parts, dict(system), dict(headers or {}), list(scorers), use_cache
    )


def agent_run_parts(
    system: Mapping[str, Any], scorers: Sequence[ScorerSpec], *, use_cache: bool
) -> RunParts:
    """How a worker builds an agent run's executor and scorers (a picklable callable)."""
    return functools.partial(_build_agent_parts, dict(system), list(scorers), use_cache)


def _scorers(specs: Sequence[ScorerSpec], use_cache: bool) -> list[Scorer]:
    from arbiter.service.scoring import scorer_registry

    context = ScoringContext(use_cache=use_cache)
    return list(scorer_registry().build_all(specs, context=context))


def _build_run_parts(
    system: dict[str, Any], headers: dict[str, str], specs: list[ScorerSpec], use_cache: bool
) -> tuple[SystemUnderTest, list[Scorer]]:
    from arbiter.systems.factory import build_system

    return build_system(system, headers=headers), _scorers(specs, use_cache)


def _build_agent_parts(
    system: dict[str, Any], specs: list[ScorerSpec], use_cache: bool
) -> tuple[SystemUnderTest, list[Scorer]]:
    from arbiter.trajectories.executors import AgentSystem, build_executor

    return AgentSystem(build_executor(system)), _scorers(specs, use_cache)


Line = tuple[int, bytes, int]
"""One line of an online batch: its number, its bytes, the bytes read up to it."""


class LineWork:
    """The lines of an online batch as an engine's work: each line scored by the pipeline
    (:func:`~arbiter.online.stream.score_stream`, the code ``online score`` always ran),
    a bounded number in flight. A line's stable id is its number in the file."""

    def __init__(
        self,
        pipeline: OnlinePipeline | None,
        *,
        max_in_flight: int,
        source: str,
        config: OnlineConfig | None = None,
        settings: Settings | None = None,
    ) -> None:
        self.pipeline, self.config, self.settings = pipeline, config, settings
        self.max_in_flight, self.source = max_in_flight, source

    @property
    def concurrency(self) -> int:
        """Evaluations in flight at once."""
        return self.max_in_flight

    @property
    def limit_key(self) -> str | None:
        """Online layers keep their own limits per worker: no shared pool."""
        return None

    def key(self, item: Line) -> str:
        """The line's number."""
        return str(item[0])

    def portable(self) -> LineWork:
        """The work without its pipeline, rebuilt in the worker from the configuration
        and settings (keys included: they travel to the workers, never to the store)."""
        return LineWork(
            None,
            max_in_flight=self.max_in_flight,
            source=self.source,
            config=self.config,
            settings=self.settings,
        )

    def limited(self, concurrency: int) -> LineWork:
        """The same work with at most ``concurrency`` evaluations in flight."""
        work = self.portable() if self.pipeline is None else self
        return LineWork(
            work.pipeline,
            max_in_flight=max(1, concurrency),
            source=self.source,
            config=self.config,
            settings=self.settings,
        )

    async def run(
        self, items: Iterable[Line], emit: Callable[[OnlineResult], Awaitable[None]]
    ) -> None:
        """Score every line, awaiting ``emit`` with each result as it completes."""
        from arbiter.online.stream import score_stream

        if self.pipeline is not None:
            await score_stream(
                self.pipeline,
                iter(items),
                emit,
                max_in_flight=self.max_in_flight,
                source=self.source,
            )
            return
        from arbiter.service.online_judges import online_pipeline

        pipeline = online_pipeline(self.config, self.settings)
        try:
            await score_stream(
                pipeline, iter(items), emit, max_in_flight=self.max_in_flight, source=self.source
            )
        finally:
            await pipeline.aclose()


Scored = tuple[int, "ScoredRun"]
"""An agent run's position among the runs given, and its scores."""


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

        scorers = self.scorers
        if scorers is None:
            from arbiter.service.scoring import scorer_registry

            scorers = scorer_registry().build_all(self.specs)
        for index, run in items:
            (scored,) = await score_runs([run], scorers, cases=self.cases)
            await emit((index, scored))


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
    from arbiter.service.agents import score_agent_runs, store_scored_runs, summarize

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
        found[item[0]] = item[1]

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
