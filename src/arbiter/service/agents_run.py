"""Agent cases run k times through an executor, as an offline run of the harness.

An agent executor is a system under test (:class:`~arbiter.trajectories.executors.AgentSystem`)
and a case file a dataset (:func:`~arbiter.trajectories.cases.cases_dataset`), so an
agent run is an ordinary stored run: started by :func:`~arbiter.service.runs.start_run`,
each result committed as it completes, resumed after any interruption with only its
missing (case, repetition) pairs, gated (:func:`~arbiter.service.runs.gate_run`:
per-cohort floors, a baseline's significant regressions) and diffed like any other.

::

    report = await run_agent_cases(
        "golden.jsonl", executor="http:agent.toml", k=3, store=Store(url)
    )
    report = await run_agent_cases(store=Store(url), resume=report.run_id)  # after a kill

Nothing here prints or starts an event loop.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from arbiter.contract import Example, Report, RunConfig, RunGate, ScorerSpec
from arbiter.engines.base import CallGate, Engine
from arbiter.errors import InputError
from arbiter.harness.gate import GateResult
from arbiter.harness.runner import ProgressCallback, RunParts, resume_eval_async, stored_scorers
from arbiter.scoring.base import ScoringContext
from arbiter.scoring.registry import ScorerRegistry
from arbiter.service.attestation import CONFIGURED, attest_run, resolve_signer
from arbiter.service.runs import (
    GateFloors,
    check_resume_options,
    gate_run,
    load_run,
    start_run,
)
from arbiter.service.scoring import build_scorers, scorer_registry, scorer_specs
from arbiter.store import Store
from arbiter.telemetry import Telemetry
from arbiter.trajectories.cases import cases_dataset, load_cases
from arbiter.trajectories.executors import (
    AgentExecutor,
    AgentSystem,
    build_executor,
    parse_executor_spec,
)

__all__ = [
    "DEFAULT_AGENT_TIMEOUT",
    "AgentScorerChoice",
    "agent_gate",
    "agent_scorers",
    "agent_system_name",
    "run_agent_cases",
]

DEFAULT_AGENT_TIMEOUT = 300.0
"""Seconds one case may take when neither the caller nor the executor says."""


@dataclass(frozen=True)
class AgentScorerChoice:
    """The trajectory scorers a run of agent cases uses by default, and those left out."""

    names: list[str]
    """Scorers that load and apply to the agent class of at least one case."""
    unavailable: list[str]
    """Scorers of the catalog whose factory does not load (not installed, or broken)."""
    not_applicable: list[str]
    """Scorers that apply to no case's class (flow scorers for turn agents, ...)."""


def agent_scorers(
    examples: Sequence[Example],
    *,
    registry: ScorerRegistry | None = None,
    catalog: Collection[str] | None = None,
) -> AgentScorerChoice:
    """Every trajectory scorer whose factory loads and that applies to some case.

    A case's class is its ``agent_class`` (None: unclassed, which every scorer but the
    flow-only ones applies to).

    Args:
        examples: The cases, as examples.
        registry: Where scorers are looked up; None: :func:`scorer_registry`.
        catalog: The scorer names to consider; None: every trajectory scorer
            (:data:`~arbiter.trajectories.scorers.TRAJECTORY_SCORERS`).
    """
    from arbiter.trajectories.scorers import TRAJECTORY_SCORERS

    registry = registry or scorer_registry()
    classes = {_agent_class(example) for example in examples}
    names: list[str] = []
    unavailable: list[str] = []
    not_applicable: list[str] = []
    for name in catalog if catalog is not None else TRAJECTORY_SCORERS:
        try:
            factory = registry.factory_of(name)
        except InputError:
            unavailable.append(name)
            continue
        if any(factory.applies_to_class(agent_class) for agent_class in classes):
            names.append(name)
        else:
            not_applicable.append(name)
    return AgentScorerChoice(names, unavailable, not_applicable)


def _agent_class(example: Example) -> str | None:
    declared = example.metadata.get("agent_class")
    return declared if isinstance(declared, str) else None


async def run_agent_cases(
    cases_path: str | os.PathLike[str] | None = None,
    *,
    executor: str | AgentExecutor | None = None,
    store: Store | None = None,
    k: int | None = None,
    scorers: Sequence[str] | None = None,
    gate_on: Sequence[str] = (),
    gate: RunGate | None = None,
    resume: str | None = None,
    concurrency: int = 4,
    timeout: float | None = None,  # noqa: ASYNC109 - a per-case limit, stored with the run
    retries: int = 2,
    seed: int = 0,
    limit: int | None = None,
    name: str | None = None,
    tags: Mapping[str, str] | None = None,
    agent_classes: Collection[str] | None = None,
    registry: ScorerRegistry | None = None,
    progress: ProgressCallback | None = None,
    on_start: Callable[[str], None] | None = None,
    telemetry: Telemetry | None = None,
    engine: Engine | None = None,
    call_gate: CallGate | None = None,
) -> Report:
    """Run every case of a case file ``k`` times through an executor, or resume such a run.

    Everything that can fail on user input (the case file, the executor, the scorers,
    each case's input) is checked before the store is written or the agent called.

    Args:
        cases_path: The case file (JSONL); on a resume, optional: given, it must be the
            run's own.
        executor: ``python:MOD:FN``, ``http:agent.toml``, ``precomputed:FILE`` or an
            executor; on a resume, None rebuilds the run's own from its description.
        store: Where results go as they complete (required to resume).
        k: Repetitions per case (default 1); on a resume, given, it must be the run's.
        scorers: ``NAME[:ARG=VALUE,...]`` options; None: every trajectory scorer that
            loads and applies to a case's class (:func:`agent_scorers`).
        gate_on: Names of the scorers that decide pass / fail; none: each scorer's own
            default.
        gate: Floors the run must reach, stored with it (apply them with
            :func:`agent_gate` once it completes, on a start or a resume).
        resume: Id of a stored run to continue: only its missing pairs run, with its
            own options and scorers.
        concurrency: Cases in flight at once.
        timeout: Seconds one case may take; None: the executor's own bound (an HTTP
            agent's ``timeout``), else :data:`DEFAULT_AGENT_TIMEOUT`.
        retries: Extra attempts of a case after a retryable failure (unreachable,
            timeout, 429, 5xx).
        seed: Seed of the bootstrap intervals and retry jitter.
        limit: Only the first ``limit`` cases.
        name: A name for the stored run.
        tags: Tags for the stored run.
        agent_classes: The agent classes a case may name; None: the defaults.
        registry: Where scorers are looked up; None: :func:`scorer_registry`.
        progress: Called with ``(done, total)``.
        on_start: Called with the run id once it is stored.
        telemetry: Where the run's span and figures go.
        engine: Where the cases run (:mod:`arbiter.service.engines`); None: here. On
            Ray, each worker builds the executor again from its description. Its limits
            (``--rate-limit``) hold every call to the executor, under
            :func:`agent_system_name`.
        call_gate: On the local engine, the engine's gate, which the scorers' model
            calls then pass too (on Ray each worker's scorers are built with its own).

    Returns:
        The harness's report (``run_id`` set when stored).

    Raises:
        InputError: A bad case file, executor spec, scorer or option; on a resume, an
            option that contradicts the run's.
        StoreError: The run to resume does not exist.
        RunBusy: Another live process is executing it.
    """
    registry = registry or scorer_registry()
    if resume is not None:
        if store is None:
            raise InputError("resuming a run needs the store that holds it")
        if scorers is not None or gate_on or gate is not None:
            raise InputError("a resume repeats the run's own scorers and gate; give neither")
        return await _resume(
            store,
            resume,
            cases_path=cases_path,
            executor=executor,
            k=k,
            agent_classes=agent_classes,
            registry=registry,
            progress=progress,
            telemetry=telemetry,
            engine=engine,
            call_gate=call_gate,
        )
    if cases_path is None or executor is None:
        raise InputError("an agent run needs a case file and an executor (or a run to resume)")
    dataset = cases_dataset(
        load_cases(cases_path, agent_classes=agent_classes), name=Path(cases_path).stem
    )
    system = AgentSystem(_executor(executor))
    in_scope = dataset.examples[:limit] if limit else dataset.examples
    specs = _scorer_specs(in_scope, scorers, gate_on, registry)
    bounded = getattr(system, "call_timeout", None)
    config = RunConfig(
        k=k or 1,
        concurrency=concurrency,
        timeout=timeout or (bounded if bounded else DEFAULT_AGENT_TIMEOUT),
        retries=retries,
        limit=limit,
        seed=seed,
        gate=gate,
    )
    context = ScoringContext(use_cache=False, gate=call_gate)
    built = build_scorers(specs, registry=registry, context=context)
    parts = _parts(engine, system, [s.spec for s in built], use_cache=False)
    return await start_run(
        system,
        dataset,
        config=config,
        store=store,
        source=str(cases_path),
        progress=progress,
        on_start=on_start,
        telemetry=telemetry,
        scorers=built,
        name=name,
        tags=tags,
        engine=engine,
        parts=parts,
    )


def _parts(
    engine: Engine | None, system: AgentSystem, specs: Sequence[ScorerSpec], *, use_cache: bool
) -> RunParts | None:
    """How a worker of a cluster builds the executor and scorers; None on the local engine."""
    if engine is None or engine.name == "local":
        return None
    from arbiter.service.engines import agent_run_parts

    return agent_run_parts(system.describe(), specs, use_cache=use_cache)


def agent_system_name(
    executor: str | AgentExecutor | None,
    *,
    store: Store | None = None,
    resume: str | None = None,
) -> str:
    """The name an agent run's executor calls are limited under (a ``--rate-limit``
    without ``NAME=``): the short description of the system it runs, as the report's
    ``system`` line shows it; on a resume without an executor, the stored run's.

    Raises:
        InputError: A bad executor spec, or neither an executor nor a run to resume.
        StoreError: The run to resume does not exist.
    """
    from arbiter.harness.describe import describe_system_short

    if executor is not None:
        return describe_system_short(AgentSystem(_executor(executor)).describe())
    if store is None or resume is None:
        raise InputError("an agent run needs a case file and an executor (or a run to resume)")
    return describe_system_short(store.get_run(resume).system)


def agent_gate(store: Store, report: Report) -> GateResult | None:
    """Gate a finished agent run with the gate stored with it; None when it has none.

    Raises:
        StoreError: The run is not stored.
        InputError: Its baseline is not comparable.
    """
    if report.run_id is None:
        raise InputError("only a stored run can be gated")
    stored = store.get_run(report.run_id).run_config.gate
    if stored is None:
        return None
    return gate_run(store, report.run_id, GateFloors.of(stored), baseline=stored.baseline)


def _executor(executor: str | AgentExecutor) -> AgentExecutor:
    return parse_executor_spec(executor) if isinstance(executor, str) else executor


def _scorer_specs(
    examples: Sequence[Example],
    options: Sequence[str] | None,
    gate_on: Sequence[str],
    registry: ScorerRegistry,
) -> list[ScorerSpec]:
    if options is None:
        options = agent_scorers(examples, registry=registry).names
        if not options:
            raise InputError(
                "no trajectory scorer is installed that applies to these cases; name scorers to use"
            )
    return scorer_specs(options, gate_on=gate_on, registry=registry)


async def _resume(
    store: Store,
    run_id: str,
    *,
    cases_path: str | os.PathLike[str] | None,
    executor: str | AgentExecutor | None,
    k: int | None,
    agent_classes: Collection[str] | None,
    registry: ScorerRegistry,
    progress: ProgressCallback | None,
    telemetry: Telemetry | None,
    engine: Engine | None = None,
    call_gate: CallGate | None = None,
) -> Report:
    info = store.get_run(run_id)
    given: dict[str, object] = {}
    if k is not None:
        given["k"] = k
    if cases_path is not None:
        cases = load_cases(cases_path, agent_classes=agent_classes)
        given["dataset_hash"] = cases_dataset(cases).content_hash
    if executor is not None:
        system = AgentSystem(_executor(executor))
        given["system"] = system.describe()
    else:
        system = AgentSystem(build_executor(info.system))
    check_resume_options(info, given)
    config = info.run_config
    context = ScoringContext(use_cache=config.uses_cache, gate=call_gate)
    scorers = stored_scorers(config, registry, context=context)
    key = resolve_signer(CONFIGURED)  # a key that cannot be read fails before the resume
    report = await resume_eval_async(
        store,
        info.id,
        system,
        scorers=scorers,
        progress=progress,
        telemetry=telemetry,
        engine=engine,
        parts=_parts(engine, system, [s.spec for s in scorers], use_cache=config.uses_cache),
    )
    if key is not None:  # signed as a run of the harness is (service.runs.resume_run)
        attest_run(store, load_run(store, info.id), signer=key)
    return report
