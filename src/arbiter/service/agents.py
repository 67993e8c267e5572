"""Agent runs as library functions: score imported trajectories, mine cases, diff two files.

The CLI's ``arbiter agent score | mine | diff`` are thin over these; nothing here prints
or starts an event loop. Runs come from the importers
(:func:`~arbiter.trajectories.loader.load_runs`); runs that share a case id are
repetitions of one task.

A repetition passes when its gating verdicts pass
(:func:`~arbiter.scoring.base.repetition_passed`). What gates is ``gate_on``:

- ``reward``: the scores the importer carried (a benchmark's ``reward``), so pass^k is
  the benchmark's own; the default whenever a run carries one;
- ``scorers``: the gating deterministic trajectory scorers; the default otherwise;
- ``both``: either failing fails the repetition.

With rewards and ``gate_on`` other than ``reward``, ``pass_hat_k`` stays the benchmark's
and ``pass_hat_k_scorers`` is the pass^k under ``gate_on``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from arbiter.contract import (
    AGENT_CLASS_KEY,
    AgentCase,
    Example,
    Output,
    Score,
    StoredTrajectory,
    run_hash,
)
from arbiter.errors import InputError
from arbiter.scoring.base import BuiltScorer, ScoringContext
from arbiter.scoring.registry import ScorerRegistry
from arbiter.service.agent_report import (
    MAX_REPAIRS_SHOWN,
    AgentScoreReport,
    GateOn,
    ImportRepairs,
    PassHatK,
    ReportBuilder,
    RunVerdict,
    ScoredRun,
    ScorerTally,
    pass_hat_k_by_k,
)
from arbiter.service.scoring import build_scorers, scorer_registry
from arbiter.store import Store
from arbiter.telemetry import Telemetry
from arbiter.trajectories.loader import ImportedRun
from arbiter.trajectories.verdict import rule_scorers_of

__all__ = [
    "MAX_REPAIRS_SHOWN",
    "AgentScoreReport",
    "DefaultScorers",
    "GateOn",
    "ImportRepairs",
    "PassHatK",
    "RunVerdict",
    "ScoredRun",
    "ScorerTally",
    "pass_hat_k_by_k",
    "score_agent_runs",
    "score_runs",
    "store_scored_runs",
    "summarize",
    "trajectory_scorers",
]


def trajectory_scorers(
    options: Sequence[str],
    *,
    runs: Sequence[ImportedRun] = (),
    cases: Mapping[str, AgentCase] | None = None,
    registry: ScorerRegistry | None = None,
    context: ScoringContext | None = None,
) -> list[BuiltScorer]:
    """Scorers from ``--scorer`` options; none: every trajectory scorer that loads and
    applies to the agent class of some run
    (:func:`~arbiter.service.agents_run.agent_scorers`). A judge among them calls its
    model through ``context`` (its gate: ``agent score --rate-limit``); None: a default one.

    Raises:
        InputError: A malformed option, an unknown scorer or argument, a duplicate name.
    """
    from arbiter.service.agents_run import agent_scorers

    registry = registry or scorer_registry()
    if not options:
        examples = [example_of(run, (cases or {}).get(run.case_id)) for run in runs]
        options = agent_scorers(examples, registry=registry).names
    specs = [registry.spec_of(option) for option in options]
    names = [spec.label for spec in specs]
    for name in names:
        if names.count(name) > 1:
            raise InputError(f"two scorers are named {name!r}; tell them apart with as=NAME")
    return build_scorers(specs, registry=registry, context=context)


def example_of(run: ImportedRun, case: AgentCase | None = None) -> Example:
    """The case a run is scored against: the case file's, else one from the import.

    An imported run's case carries the importer's assertions (τ-bench's gold actions)
    and the trajectory's agent class.
    """
    if case is not None:
        return case.to_example()
    metadata: dict[str, Any] = {}
    if run.trajectory is not None and run.trajectory.agent.agent_class is not None:
        metadata[AGENT_CLASS_KEY] = run.trajectory.agent.agent_class
    return Example(
        id=run.case_id,
        input={},
        expected=dict(run.assertions) if run.assertions else None,
        metadata=metadata,
    )


async def score_runs(
    runs: Sequence[ImportedRun],
    scorers: Sequence[BuiltScorer],
    *,
    cases: Mapping[str, AgentCase] | None = None,
    telemetry: Telemetry | None = None,
) -> list[ScoredRun]:
    """Score every run with every scorer, against its case's assertions.

    Args:
        runs: The imported runs.
        scorers: The scorers (built).
        cases: Agent cases by id (a case file's): a run whose case id is there is scored
            against that case; the others keep the importer's assertions.
        telemetry: When enabled, each run's scores are emitted as
            ``gen_ai.evaluation.result`` events linked to the run's own span (a run
            imported from a trace knows it: ``source.trace_id`` and its first span id).
    """
    scored = []
    for run in runs:
        example = example_of(run, (cases or {}).get(run.case_id))
        output = Output(trajectory=run.trajectory, flow=run.flow)
        scores = [await scorer(example, output) for scorer in scorers]
        scored.append(ScoredRun(run=run, example=example, imported=list(run.scores), scores=scores))
        if telemetry is not None and telemetry.enabled:
            _emit(run, [*run.scores, *scores], telemetry)
    return scored


def _emit(run: ImportedRun, scores: Sequence[Score], telemetry: Telemetry) -> None:
    """The run's verdicts as evaluation events, linked to the span it was imported from."""
    from arbiter.telemetry_eval import emit_evaluation_results

    subject = run.trajectory or run.flow
    source = subject.source if subject is not None else None
    emit_evaluation_results(
        scores,
        trace_id=source.trace_id if source is not None else None,
        span_id=source.span_ids[0] if source is not None and source.span_ids else None,
        telemetry=telemetry,
        attributes={"arbiter.case.id": run.case_id[:200], "arbiter.repetition": run.repetition},
    )


def summarize(
    scored: Iterable[ScoredRun],
    scorers: Sequence[BuiltScorer],
    *,
    gate_on: GateOn | None = None,
    seed: int = 0,
    registry: ScorerRegistry | None = None,
) -> AgentScoreReport:
    """The report of scored runs: verdicts, pass rate, pass^k, per-scorer tallies.

    Args:
        scored: The runs with their scores (:func:`score_runs`), every one by ``scorers``.
        scorers: The scorers they were scored with, in order.
        gate_on: What decides a repetition; None: ``reward`` when a run carries an
            imported score, else ``scorers``.
        seed: Seed of the bootstrap intervals.
        registry: Where the scorers' metadata (dimension, moment) is looked up; None:
            :func:`~arbiter.service.scoring.scorer_registry`.

    Raises:
        InputError: ``gate_on`` is ``reward`` or ``both`` and no run carries a reward.
    """
    builder = ReportBuilder(
        gate_on=gate_on,
        registry=registry or scorer_registry(),
        order=[s.name for s in scorers],
    )
    for each in scored:
        builder.add(each, scorers)
    return builder.report(seed=seed)


class DefaultScorers:
    """The trajectory scorers a run gets when none are named: every one that loads and
    measures runs of the run's agent class (as the server scores what it is sent), built
    once per class. The report lists them in the catalog's order; a scorer that does
    not measure a run's class counts that run as abstained.

    Args:
        registry: Where the scorers are looked up; None: :func:`scorer_registry`.
    """

    def __init__(self, registry: ScorerRegistry | None = None) -> None:
        from arbiter.trajectories.scorers import TRAJECTORY_SCORERS

        self.registry = registry or scorer_registry()
        self.order: list[str] = list(TRAJECTORY_SCORERS)
        self._by_class: dict[str | None, list[BuiltScorer]] = {}

    def for_example(self, example: Example) -> list[BuiltScorer]:
        """The scorers of a run scored against ``example`` (its agent class's)."""
        from arbiter.service.agents_run import agent_scorers

        declared = example.metadata.get(AGENT_CLASS_KEY)
        agent_class = declared if isinstance(declared, str) else None
        found = self._by_class.get(agent_class)
        if found is None:
            names = agent_scorers([example], registry=self.registry).names
            specs = [self.registry.spec_of(name) for name in names]
            found = self._by_class[agent_class] = build_scorers(specs, registry=self.registry)
        return found


async def score_agent_runs(
    runs: Iterable[ImportedRun],
    scorers: Sequence[BuiltScorer] | DefaultScorers,
    *,
    cases: Mapping[str, AgentCase] | None = None,
    gate_on: GateOn | None = None,
    seed: int = 0,
    registry: ScorerRegistry | None = None,
    telemetry: Telemetry | None = None,
    store: Store | None = None,
    owner: str | None = None,
    keep_runs: int | None = None,
) -> AgentScoreReport:
    """What ``arbiter agent score`` reports: every run scored, one at a time, and summed up.

    The runs are read, scored, counted (and stored) one at a time, so an iterator of
    runs (:func:`~arbiter.trajectories.loader.iter_runs`) is never held whole: memory
    stays flat whatever the number of runs, save the run verdicts kept (``keep_runs``).

    Args:
        runs: The imported runs.
        scorers: The scorers of every run, or :class:`DefaultScorers` (each run's own
            class's).
        cases: Agent cases by id (a case file's).
        gate_on: What decides a repetition (see :func:`summarize`).
        seed: Seed of the bootstrap intervals.
        registry: Where the scorers' metadata is looked up.
        telemetry: When enabled, each run's verdicts are emitted as evaluation events.
        store: Where to store every scored run as the server stores the runs it is sent
            (:func:`store_scored_runs`), so they appear in the agents' pages; None: not
            stored.
        owner: The key the stored runs belong to; None: nobody.
        keep_runs: Run verdicts the report lists: None, every run's; a number, the first
            that many runs that did not pass.

    Raises:
        InputError: No run at all, or ``gate_on`` needs a reward no run carries.
    """
    registry = registry or (
        scorers.registry if isinstance(scorers, DefaultScorers) else scorer_registry()
    )
    order = scorers.order if isinstance(scorers, DefaultScorers) else [s.name for s in scorers]
    builder = ReportBuilder(gate_on=gate_on, registry=registry, keep_runs=keep_runs, order=order)
    writer = _BatchWriter(store, owner) if store is not None else None
    for run in runs:
        example = example_of(run, (cases or {}).get(run.case_id))
        used = scorers.for_example(example) if isinstance(scorers, DefaultScorers) else scorers
        output = Output(trajectory=run.trajectory, flow=run.flow)
        scores = [await scorer(example, output) for scorer in used]
        scored = ScoredRun(run=run, example=example, imported=list(run.scores), scores=scores)
        if telemetry is not None and telemetry.enabled:
            _emit(run, [*run.scores, *scores], telemetry)
        if writer is not None:
            writer.add(scored, used)
        builder.add(scored, used)
    if writer is not None:
        writer.flush()
    if builder.n == 0:
        raise InputError("no trajectory found")
    return builder.report(seed=seed)


STORE_BATCH = 500
"""Runs written in one transaction by :func:`store_scored_runs`."""


def store_scored_runs(
    store: Store,
    scored: Iterable[ScoredRun],
    scorers: Sequence[BuiltScorer],
    *,
    owner: str | None = None,
) -> int:
    """Store scored runs as the server stores the runs it is sent: each with its scores,
    its verdict and band (a rule failing convicts it) and what the import repaired;
    signed when a signing key is configured. Written :data:`STORE_BATCH` at a time.

    A run's id follows from its content, case and repetition (and the owner), so storing
    the same file again replaces its runs instead of adding copies.

    Returns:
        The number of runs stored.

    Raises:
        StoreUnavailable: The database refused a write.
    """
    writer = _BatchWriter(store, owner)
    for each in scored:
        writer.add(each, scorers)
    writer.flush()
    return writer.stored


class _BatchWriter:
    """Scored runs stored :data:`STORE_BATCH` at a time, as the server stores them."""

    def __init__(self, store: Store, owner: str | None) -> None:
        from arbiter.service.attestation import CONFIGURED, resolve_signer

        self.store, self.owner = store, owner
        self.key = resolve_signer(CONFIGURED)  # a key that cannot be read fails first
        self.batch: list[StoredTrajectory] = []
        self.stored = 0

    def add(self, scored: ScoredRun, scorers: Sequence[BuiltScorer]) -> None:
        from arbiter.service.trajectories import stored_from_scores

        specs = {s.name: s.spec for s in scorers}
        rules = rule_scorers_of(s.spec for s in scorers)
        run_id = _stored_id(scored, self.owner)
        self.batch.append(
            stored_from_scores(scored.run, scored.scores, specs=specs, rules=rules, run_id=run_id)
        )
        if len(self.batch) >= STORE_BATCH:
            self.flush()

    def flush(self) -> None:
        from arbiter.service.attestation import attest_trajectories
        from arbiter.service.safety_events import record_firewall_events
        from arbiter.store.trajectory_repository import save_trajectories

        if not self.batch:
            return
        save_trajectories(self.store, self.batch, owner=self.owner)
        attest_trajectories(self.store, self.batch, signer=self.key)
        record_firewall_events(self.store, self.batch, owner=self.owner)  # observe only
        self.stored += len(self.batch)
        self.batch = []


def _stored_id(scored: ScoredRun, owner: str | None) -> str:
    """A run's stored id: the same run of the same case stored again gets the same id."""
    subject = scored.run.trajectory or scored.run.flow
    assert subject is not None  # an ImportedRun always carries one
    key = "\x00".join(
        (owner or "", scored.run.case_id, str(scored.run.repetition), run_hash(subject))
    )
    return "tr-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]
