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
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from arbiter.contract import (
    AGENT_CLASS_KEY,
    AgentCase,
    Band,
    Example,
    Output,
    Score,
    StoredTrajectory,
    run_hash,
)
from arbiter.errors import InputError
from arbiter.scoring.base import BuiltScorer, repetition_passed
from arbiter.scoring.registry import ScorerRegistry
from arbiter.service.scoring import build_scorers, scorer_registry
from arbiter.stats import bootstrap_cis, pass_hat_k, wilson_interval
from arbiter.store import Store
from arbiter.telemetry import Telemetry
from arbiter.trajectories.loader import ImportedRun
from arbiter.trajectories.verdict import rule_scorers_of, turn_failed

__all__ = [
    "AgentScoreReport",
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

_BANDS: tuple[Band, ...] = ("healthy", "review", "danger")

GateOn = Literal["reward", "scorers", "both"]
"""What decides whether a repetition passed (see the module docstring)."""


class PassHatK(BaseModel):
    """pass^k over tasks: the mean of ``C(c, k) / C(n, k)``, with a bootstrap 95% interval."""

    model_config = ConfigDict(extra="forbid")

    estimate: float
    """The mean over tasks of ``C(c, k) / C(n, k)`` (τ-bench's formula)."""
    low: float
    """Lower end of the 95% interval (bootstrap over tasks)."""
    high: float
    """Upper end of the 95% interval."""
    n: int
    """Tasks it is over (those with at least k decided repetitions)."""


class ScorerTally(BaseModel):
    """One scorer's verdicts over every run."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    passed: int = Field(0, serialization_alias="pass")
    """Runs it passed."""
    failed: int = Field(0, serialization_alias="fail")
    """Runs it failed."""
    abstained: int = Field(0, serialization_alias="abstain")
    """Runs it abstained on (nothing to grade, or not its agent class)."""
    errored: int = Field(0, serialization_alias="error")
    """Runs on which it raised."""
    bands: dict[Band, int] = Field(default_factory=lambda: dict.fromkeys(_BANDS, 0))
    """Runs per band, for banded metrics."""
    dimension: str | None = None
    """The dimension it measures."""
    moment: str | None = None
    """When in a run what it measures happens."""
    gating: bool = False
    """Whether it decided repetitions' verdicts in this report."""


class RunVerdict(BaseModel):
    """What ``agent score`` says of one run."""

    model_config = ConfigDict(extra="forbid")

    case_id: str
    """The task it is a repetition of."""
    repetition: int
    """Its repetition of the task."""
    trajectory_id: str | None
    """The run's own id, if it has one."""
    source: str | None
    """Where it was read (``file:line``)."""
    status: str
    """How the run ended."""
    passed: bool | None
    """Its verdict under ``gate_on``; None: nothing decided it."""
    reward: float | None = None
    """The benchmark's reward, when imported with one."""
    failed: list[str] = Field(default_factory=list)
    """Scorers that failed it."""
    review: list[str] = Field(default_factory=list)
    """Banded scorers that put it in review."""
    errors: list[str] = Field(default_factory=list)
    """Scorers that raised on it."""
    turn_failed: bool = False
    """Whether a rule (a deterministic scorer) put it in the danger band or failed it
    (:func:`~arbiter.trajectories.verdict.turn_failed`); review never convicts."""


MAX_REPAIRS_SHOWN = 20
"""Repairs a report lists word for word (all of them are counted)."""


class ImportRepairs(BaseModel):
    """What the importers repaired to read the runs: counted, the first few listed."""

    model_config = ConfigDict(extra="forbid")

    count: int = 0
    """Repairs over every run."""
    runs: int = 0
    """Runs with at least one repair."""
    first: list[str] = Field(default_factory=list)
    """The first :data:`MAX_REPAIRS_SHOWN` repairs, each ``file:line: field: what``."""

    def add(self, warnings: Sequence[str]) -> None:
        """Count one run's repairs."""
        if not warnings:
            return
        self.count += len(warnings)
        self.runs += 1
        room = MAX_REPAIRS_SHOWN - len(self.first)
        if room > 0:
            self.first.extend(warnings[:room])


class AgentScoreReport(BaseModel):
    """What ``arbiter agent score`` reports (its ``--json`` output)."""

    model_config = ConfigDict(extra="forbid")

    n_trajectories: int
    """Runs scored."""
    n_tasks: int
    """Distinct case ids among them."""
    gate_on: GateOn
    """What decided each repetition's verdict."""
    pass_rate: PassHatK | None
    """Share of decided repetitions that passed, with a Wilson 95% interval."""
    pass_hat_k: dict[str, PassHatK] | None = None
    """pass^k by k (``"1"``, ``"2"``, ...) when some task has repetitions; the
    benchmark's own when runs carry a reward."""
    pass_hat_k_scorers: dict[str, PassHatK] | None = None
    """pass^k under ``gate_on`` when runs carry a reward and ``gate_on`` is not
    ``reward``."""
    scorers: dict[str, ScorerTally]
    """Per scorer, its verdicts over every run."""
    turn_failed: int = 0
    """Runs a rule convicted (:attr:`RunVerdict.turn_failed`), whatever gates."""
    runs: list[RunVerdict]
    """Per run, its verdict and the scorers that failed it."""
    repairs: ImportRepairs = Field(default_factory=lambda: ImportRepairs())
    """What the importers repaired to read the runs (a tool call id used twice, ...)."""

    def to_json(self) -> dict[str, Any]:
        """The report as ``agent score --json`` prints it: ``pass`` / ``fail`` /
        ``abstain`` / ``error`` counts, and the pass^k keys only when they apply."""
        document = self.model_dump(mode="json", by_alias=True)
        for key in ("pass_hat_k", "pass_hat_k_scorers"):
            if document[key] is None:
                del document[key]
        return document


@dataclass
class ScoredRun:
    """One run with every score it got: the imported ones first, then the scorers'."""

    run: ImportedRun
    """The :class:`ImportedRun` scored."""
    example: Example
    """The case it was scored against."""
    imported: list[Score]
    """Scores the importer carried (a benchmark's reward)."""
    scores: list[Score]
    """The trajectory scorers' scores, in scorer order."""


def trajectory_scorers(
    options: Sequence[str],
    *,
    runs: Sequence[ImportedRun] = (),
    cases: Mapping[str, AgentCase] | None = None,
    registry: ScorerRegistry | None = None,
) -> list[BuiltScorer]:
    """Scorers from ``--scorer`` options; none: every trajectory scorer that loads and
    applies to the agent class of some run
    (:func:`~arbiter.service.agents_run.agent_scorers`).

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
    return build_scorers(specs, registry=registry)


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
    scored: Sequence[ScoredRun],
    scorers: Sequence[BuiltScorer],
    *,
    gate_on: GateOn | None = None,
    seed: int = 0,
    registry: ScorerRegistry | None = None,
) -> AgentScoreReport:
    """The report of scored runs: verdicts, pass rate, pass^k, per-scorer tallies.

    Args:
        scored: The runs with their scores (:func:`score_runs`).
        scorers: The scorers they were scored with, in order.
        gate_on: What decides a repetition; None: ``reward`` when a run carries an
            imported score, else ``scorers``.
        seed: Seed of the bootstrap intervals.
        registry: Where the scorers' metadata (dimension, moment) is looked up; None:
            :func:`~arbiter.service.scoring.scorer_registry`.

    Raises:
        InputError: ``gate_on`` is ``reward`` or ``both`` and no run carries a reward.
    """
    has_reward = any(s.imported for s in scored)
    gate: GateOn = gate_on or ("reward" if has_reward else "scorers")
    if gate != "scorers" and not has_reward:
        raise InputError(f"--gate-on {gate}: no imported run carries a reward to gate on")
    gating = {s.name for s in scorers if s.spec.gating}
    rules = rule_scorers_of(s.spec for s in scorers)
    verdicts = [_verdict(s, gating, gate, rules) for s in scored]
    report = AgentScoreReport(
        n_trajectories=len(scored),
        n_tasks=len({s.run.case_id for s in scored}),
        gate_on=gate,
        pass_rate=_pass_rate([v.passed for v in verdicts]),
        scorers=_tallies(scored, scorers, gate, registry or scorer_registry()),
        turn_failed=sum(v.turn_failed for v in verdicts),
        runs=verdicts,
    )
    for each in scored:
        report.repairs.add(each.run.warnings)
    if has_reward and gate != "reward":
        rewarded = [_verdict(s, gating, "reward", rules).passed for s in scored]
        report.pass_hat_k = pass_hat_k_by_k(scored, rewarded, seed=seed)
        report.pass_hat_k_scorers = pass_hat_k_by_k(scored, [v.passed for v in verdicts], seed=seed)
    else:
        report.pass_hat_k = pass_hat_k_by_k(scored, [v.passed for v in verdicts], seed=seed)
    return report


async def score_agent_runs(
    runs: Sequence[ImportedRun],
    scorers: Sequence[BuiltScorer],
    *,
    cases: Mapping[str, AgentCase] | None = None,
    gate_on: GateOn | None = None,
    seed: int = 0,
    registry: ScorerRegistry | None = None,
    telemetry: Telemetry | None = None,
    store: Store | None = None,
    owner: str | None = None,
) -> AgentScoreReport:
    """:func:`score_runs` then :func:`summarize`: what ``arbiter agent score`` reports.

    Args:
        store: Where to store every scored run as the server stores the runs it is sent
            (:func:`store_scored_runs`), so they appear in the agents' pages; None: not
            stored.
        owner: The key the stored runs belong to; None: nobody.
    """
    scored = await score_runs(runs, scorers, cases=cases, telemetry=telemetry)
    if store is not None:
        store_scored_runs(store, scored, scorers, owner=owner)
    return summarize(scored, scorers, gate_on=gate_on, seed=seed, registry=registry)


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
    from arbiter.service.attestation import CONFIGURED, attest_trajectories, resolve_signer
    from arbiter.service.trajectories import stored_from_scores
    from arbiter.store.trajectory_repository import save_trajectories

    specs = {s.name: s.spec for s in scorers}
    rules = rule_scorers_of(s.spec for s in scorers)
    key = resolve_signer(CONFIGURED)  # a key that cannot be read fails before any write
    batch: list[StoredTrajectory] = []
    stored = 0

    def flush() -> None:
        save_trajectories(store, batch, owner=owner)
        attest_trajectories(store, batch, signer=key)

    for each in scored:
        batch.append(
            stored_from_scores(
                each.run, each.scores, specs=specs, rules=rules, run_id=_stored_id(each, owner)
            )
        )
        if len(batch) >= STORE_BATCH:
            flush()
            stored += len(batch)
            batch = []
    if batch:
        flush()
        stored += len(batch)
    return stored


def _stored_id(scored: ScoredRun, owner: str | None) -> str:
    """A run's stored id: the same run of the same case stored again gets the same id."""
    subject = scored.run.trajectory or scored.run.flow
    assert subject is not None  # an ImportedRun always carries one
    key = "\x00".join(
        (owner or "", scored.run.case_id, str(scored.run.repetition), run_hash(subject))
    )
    return "tr-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]


def _verdict(
    scored: ScoredRun, gating: set[str], gate: GateOn, rules: frozenset[str]
) -> RunVerdict:
    run, scores = scored.run, scored.scores
    imported_gate = {s.name for s in scored.imported}
    chosen: list[Score] = []
    names: set[str] = set()
    if gate in ("reward", "both"):
        chosen += scored.imported
        names |= imported_gate
    if gate in ("scorers", "both"):
        chosen += scores
        names |= gating
    reward = next((s.value for s in scored.imported if s.name == "reward"), None)
    trajectory = run.trajectory
    source = trajectory.source if trajectory is not None else None
    where = None
    if source is not None and source.file is not None:
        where = f"{source.file}:{source.line}" if source.line is not None else source.file
    return RunVerdict(
        case_id=run.case_id,
        repetition=run.repetition,
        trajectory_id=trajectory.id if trajectory is not None else None,
        source=where,
        status=_status(run),
        passed=repetition_passed(chosen, names),
        reward=reward,
        failed=[s.name for s in [*scored.imported, *scores] if s.passed is False],
        review=[s.name for s in scores if s.band == "review"],
        errors=[s.name for s in scores if s.error is not None],
        turn_failed=turn_failed(scores, rule_scorers=rules).failed,
    )


def _status(run: ImportedRun) -> str:
    if run.trajectory is not None:
        return run.trajectory.status
    return run.flow.status if run.flow is not None else "unknown"


def _pass_rate(outcomes: Sequence[bool | None]) -> PassHatK | None:
    decided = [o for o in outcomes if o is not None]
    if not decided:
        return None
    passed = sum(decided)
    low, high = wilson_interval(passed, len(decided))
    return PassHatK(estimate=passed / len(decided), low=low, high=high, n=len(decided))


def pass_hat_k_by_k(
    scored: Sequence[ScoredRun], outcomes: Sequence[bool | None], *, seed: int = 0
) -> dict[str, PassHatK] | None:
    """pass^k for k = 1 .. the fewest decided repetitions of a task; None without repeats.

    Each task's decided repetitions count (an undecided one is neither a pass nor a
    fail); tasks with none are left out. The interval is a bootstrap over tasks of
    their ``C(c, k) / C(n, k)``, as the harness bootstraps pass^k over examples.
    """
    counts: dict[str, list[int]] = {}
    for run, outcome in zip(scored, outcomes, strict=True):
        if outcome is not None:
            n_c = counts.setdefault(run.run.case_id, [0, 0])
            n_c[0] += 1
            n_c[1] += outcome
    if not counts or max(n for n, _ in counts.values()) < 2:
        return None
    trials = np.array([n for n, _ in counts.values()], dtype=np.int64)
    correct = np.array([c for _, c in counts.values()], dtype=np.int64)
    result: dict[str, PassHatK] = {}
    for k in range(1, int(trials.min()) + 1):
        per_task = np.ones(len(trials))
        for i in range(k):
            per_task *= np.maximum(correct - i, 0) / (trials - i)
        ((low, high),) = bootstrap_cis([per_task], seed=seed)
        result[str(k)] = PassHatK(
            estimate=pass_hat_k(trials, correct, k), low=low, high=high, n=len(trials)
        )
    return result


def _tallies(
    scored: Sequence[ScoredRun],
    scorers: Sequence[BuiltScorer],
    gate: GateOn,
    registry: ScorerRegistry,
) -> dict[str, ScorerTally]:
    tallies: dict[str, ScorerTally] = {}
    for name in dict.fromkeys(s.name for run in scored for s in run.imported):
        # An imported verdict (a benchmark's reward) grades the run as a whole.
        tallies[name] = ScorerTally(dimension="outcome", moment="run", gating=gate != "scorers")
    for built in scorers:
        factory = registry.factory_of(built.spec.name) if built.spec.name in registry else None
        tallies[built.name] = ScorerTally(
            dimension=factory.dimension if factory else None,
            moment=factory.moment if factory else None,
            gating=built.spec.gating and gate != "reward",
        )
    for run in scored:
        for score in [*run.imported, *run.scores]:
            tally = tallies[score.name]
            if score.error is not None:
                tally.errored += 1
            elif score.passed is None:
                tally.abstained += 1
            elif score.passed:
                tally.passed += 1
            else:
                tally.failed += 1
            if score.band is not None:
                tally.bands[score.band] += 1
    return tallies
