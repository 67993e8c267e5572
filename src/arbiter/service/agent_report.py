"""The report of ``arbiter agent score``, built one scored run at a time.

:class:`ReportBuilder` takes each scored run as it comes and keeps only what the report
needs: counts per scorer, per task and per gate, the repairs, and the runs' verdicts (all
of them, or the first few that did not pass), so scoring a file of any size holds one run
at a time. What gates a repetition (``gate_on``) may be known only at the end (the
default is the reward when some run carries one), so each run's outcome is kept under
each gate until then.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from arbiter.contract import Band, Example, Score
from arbiter.errors import InputError
from arbiter.scoring.base import BuiltScorer, repetition_passed
from arbiter.scoring.registry import ScorerRegistry
from arbiter.stats import bootstrap_cis, pass_hat_k, wilson_interval
from arbiter.trajectories.formats import ImportedRun
from arbiter.trajectories.verdict import rule_scorers_of, turn_failed

__all__ = [
    "MAX_PASS_HAT_K",
    "MAX_REPAIRS_SHOWN",
    "AgentScoreReport",
    "GateOn",
    "ImportRepairs",
    "PassHatK",
    "ReportBuilder",
    "RunVerdict",
    "ScoredRun",
    "ScorerTally",
    "pass_hat_k_by_k",
    "pass_hat_k_of_counts",
]


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


_BANDS: tuple[Band, ...] = ("healthy", "review", "danger")
_GATES: tuple[GateOn, ...] = ("reward", "scorers", "both")

GateOn = Literal["reward", "scorers", "both"]
"""What decides whether a repetition passed: the imported reward, the gating scorers,
or both (either failing fails it)."""


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
class _Row:
    """What a run's verdict needs, kept compact until the gate is known."""

    case_id: str
    repetition: int
    trajectory_id: str | None
    source: str | None
    status: str
    reward: float | None
    failed: tuple[str, ...]
    review: tuple[str, ...]
    errors: tuple[str, ...]
    turn_failed: bool
    outcomes: dict[GateOn, bool | None]

    def verdict(self, gate: GateOn) -> RunVerdict:
        return RunVerdict(
            case_id=self.case_id,
            repetition=self.repetition,
            trajectory_id=self.trajectory_id,
            source=self.source,
            status=self.status,
            passed=self.outcomes[gate],
            reward=self.reward,
            failed=list(self.failed),
            review=list(self.review),
            errors=list(self.errors),
            turn_failed=self.turn_failed,
        )


@dataclass
class _Tally:
    tally: ScorerTally
    gating: bool  # the spec gates (whether it gates the report depends on gate_on)
    scored: int = 0  # runs it scored (the others were not of a class it measures)


@dataclass
class _Gate:
    """Counts of one gate: decided and passed runs, and per task its trials and passes.

    A task is a number (its place in :class:`_Tasks`): its counts are two machine
    integers in arrays, and ``order`` holds the tasks in the order first decided under
    this gate (the order the bootstrap of pass^k draws from), so what one more task
    costs is a few bytes, not a dictionary entry and a list per gate.
    """

    decided: int = 0
    passed: int = 0
    trials: array[int] = field(default_factory=lambda: array("q"))
    passes: array[int] = field(default_factory=lambda: array("q"))
    order: array[int] = field(default_factory=lambda: array("q"))
    kept: int = 0  # rows kept that did not pass under this gate

    def add(self, task: int, outcome: bool | None) -> None:
        if outcome is None:
            return
        self.decided += 1
        self.passed += outcome
        if task >= len(self.trials):
            grow = task + 1 - len(self.trials)
            self.trials.extend(repeat(0, grow))
            self.passes.extend(repeat(0, grow))
        if not self.trials[task]:
            self.order.append(task)
        self.trials[task] += 1
        self.passes[task] += outcome

    def counts(self) -> tuple[np.ndarray, np.ndarray]:
        """Per task decided at least once (first decided first): trials and passes."""
        order = np.array(self.order, dtype=np.int64)
        trials = np.array(self.trials, dtype=np.int64)
        passes = np.array(self.passes, dtype=np.int64)
        return trials[order], passes[order]


class _Tasks:
    """Each distinct case id's number, in the order first seen."""

    def __init__(self) -> None:
        self._numbers: dict[str, int] = {}

    def number(self, case_id: str) -> int:
        found = self._numbers.get(case_id)
        if found is None:
            found = self._numbers[case_id] = len(self._numbers)
        return found

    def __len__(self) -> int:
        return len(self._numbers)


class ReportBuilder:
    """Builds an :class:`AgentScoreReport` from scored runs added one at a time.

    Args:
        gate_on: What decides a repetition; None: ``reward`` when some run carries an
            imported score, else ``scorers``.
        registry: Where the scorers' metadata (dimension, moment) is looked up.
        keep_runs: How many run verdicts to keep: None, every run's; a number, only
            the first that many runs that did not pass (what a terminal shows).
        order: Scorer names in the order the report lists them (a catalog's); scorers
            not in it follow, in the order they were first seen.
    """

    def __init__(
        self,
        *,
        gate_on: GateOn | None,
        registry: ScorerRegistry,
        keep_runs: int | None = None,
        order: Sequence[str] = (),
    ) -> None:
        self.gate_on, self.registry, self.keep_runs = gate_on, registry, keep_runs
        self._order = {name: index for index, name in enumerate(order)}
        self.n = 0
        self._tasks = _Tasks()
        self._imported: dict[str, _Tally] = {}
        self._tallies: dict[str, _Tally] = {}
        self._gates = {gate: _Gate() for gate in _GATES}
        self._rows: list[_Row] = []
        self._turn_failed = 0
        self.repairs = ImportRepairs()

    def add(self, scored: ScoredRun, scorers: Sequence[BuiltScorer]) -> None:
        """Count one run, scored by ``scorers`` (its ``scores`` are theirs, in order)."""
        run = scored.run
        self.n += 1
        task = self._tasks.number(run.case_id)
        self.repairs.add(run.warnings)
        for score in scored.imported:
            entry = self._imported.get(score.name)
            if entry is None:
                # An imported verdict (a benchmark's reward) grades the run as a whole.
                entry = _Tally(ScorerTally(dimension="outcome", moment="run"), gating=True)
                self._imported[score.name] = entry
            _count(entry, score)
        for built, score in zip(scorers, scored.scores, strict=True):
            entry = self._tallies.get(built.name)
            if entry is None:
                entry = self._tallies[built.name] = self._tally(built)
            _count(entry, score)
        gating = {s.name for s in scorers if s.spec.gating}
        imported = {s.name for s in scored.imported}
        outcomes: dict[GateOn, bool | None] = {
            "reward": repetition_passed(scored.imported, imported),
            "scorers": repetition_passed(scored.scores, gating),
            "both": repetition_passed([*scored.imported, *scored.scores], imported | gating),
        }
        for gate, outcome in outcomes.items():
            self._gates[gate].add(task, outcome)
        failed = turn_failed(scored.scores, rule_scorers=rule_scorers_of(s.spec for s in scorers))
        self._turn_failed += failed.failed
        if self._keeps(outcomes):
            self._rows.append(_row(scored, outcomes, failed.failed))

    def _tally(self, built: BuiltScorer) -> _Tally:
        name = built.spec.name
        factory = self.registry.factory_of(name) if name in self.registry else None
        tally = ScorerTally(
            dimension=factory.dimension if factory else None,
            moment=factory.moment if factory else None,
        )
        return _Tally(tally, gating=built.spec.gating)

    def _keeps(self, outcomes: dict[GateOn, bool | None]) -> bool:
        if self.keep_runs is None:
            return True
        keep = False
        for gate, outcome in outcomes.items():
            counted = self._gates[gate]
            if outcome is not True and counted.kept < self.keep_runs:
                counted.kept += 1
                keep = True
        return keep

    def report(self, *, seed: int = 0) -> AgentScoreReport:
        """The report of every run added.

        Raises:
            InputError: ``gate_on`` is ``reward`` or ``both`` and no run carries a reward.
        """
        has_reward = bool(self._imported)
        gate: GateOn = self.gate_on or ("reward" if has_reward else "scorers")
        if gate != "scorers" and not has_reward:
            raise InputError(f"--gate-on {gate}: no imported run carries a reward to gate on")
        counts = self._gates[gate]
        rows = [row.verdict(gate) for row in self._rows]
        if self.keep_runs is not None:
            rows = [row for row in rows if row.passed is not True][: self.keep_runs]
        report = AgentScoreReport(
            n_trajectories=self.n,
            n_tasks=len(self._tasks),
            gate_on=gate,
            pass_rate=_pass_rate(counts.passed, counts.decided),
            scorers=self._tallied(gate),
            turn_failed=self._turn_failed,
            runs=rows,
            repairs=self.repairs,
        )
        if has_reward and gate != "reward":
            report.pass_hat_k = _pass_hat_k(*self._gates["reward"].counts(), seed=seed)
            report.pass_hat_k_scorers = _pass_hat_k(*counts.counts(), seed=seed)
        else:
            report.pass_hat_k = _pass_hat_k(*counts.counts(), seed=seed)
        return report

    def _tallied(self, gate: GateOn) -> dict[str, ScorerTally]:
        tallies: dict[str, ScorerTally] = {}
        for name, entry in self._imported.items():
            tallies[name] = entry.tally.model_copy(update={"gating": gate != "scorers"})
        last = len(self._order)
        names = sorted(self._tallies, key=lambda name: self._order.get(name, last))
        for name in names:
            entry = self._tallies[name]
            # A run of a class the scorer does not measure was not scored by it: abstained.
            abstained = entry.tally.abstained + self.n - entry.scored
            tallies[name] = entry.tally.model_copy(
                update={"gating": entry.gating and gate != "reward", "abstained": abstained}
            )
        return tallies


def _count(entry: _Tally, score: Score) -> None:
    tally = entry.tally
    entry.scored += 1
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


def _row(scored: ScoredRun, outcomes: dict[GateOn, bool | None], failed: bool) -> _Row:
    run, scores = scored.run, scored.scores
    trajectory = run.trajectory
    source = trajectory.source if trajectory is not None else None
    where = None
    if source is not None and source.file is not None:
        where = f"{source.file}:{source.line}" if source.line is not None else source.file
    return _Row(
        case_id=run.case_id,
        repetition=run.repetition,
        trajectory_id=trajectory.id if trajectory is not None else None,
        source=where,
        status=_status(run),
        reward=next((s.value for s in scored.imported if s.name == "reward"), None),
        failed=tuple(s.name for s in [*scored.imported, *scores] if s.passed is False),
        review=tuple(s.name for s in scores if s.band == "review"),
        errors=tuple(s.name for s in scores if s.error is not None),
        turn_failed=failed,
        outcomes=outcomes,
    )


def _status(run: ImportedRun) -> str:
    if run.trajectory is not None:
        return run.trajectory.status
    return run.flow.status if run.flow is not None else "unknown"


def _pass_rate(passed: int, decided: int) -> PassHatK | None:
    if not decided:
        return None
    low, high = wilson_interval(passed, decided)
    return PassHatK(estimate=passed / decided, low=low, high=high, n=decided)


def pass_hat_k_by_k(
    scored: Sequence[ScoredRun], outcomes: Sequence[bool | None], *, seed: int = 0
) -> dict[str, PassHatK] | None:
    """pass^k of scored runs and their outcomes (see :func:`pass_hat_k_of_counts`)."""
    tasks, counted = _Tasks(), _Gate()
    for run, outcome in zip(scored, outcomes, strict=True):
        counted.add(tasks.number(run.run.case_id), outcome)
    return _pass_hat_k(*counted.counts(), seed=seed)


MAX_PASS_HAT_K = 32
"""Largest k reported: each k costs a pass over the tasks, and past a few dozen
repetitions the figure no longer changes what a reader concludes."""


def pass_hat_k_of_counts(
    tasks: dict[str, list[int]], *, seed: int = 0
) -> dict[str, PassHatK] | None:
    """pass^k for k = 1 .. the fewest decided repetitions of a task (at most
    :data:`MAX_PASS_HAT_K`); None without repeats.

    Args:
        tasks: Per task (in the order first decided), its decided repetitions and how
            many passed (an undecided one is neither a pass nor a fail).
        seed: Seed of the bootstrap.

    The interval is a bootstrap over tasks of their ``C(c, k) / C(n, k)``, as the
    harness bootstraps pass^k over examples.
    """
    trials = np.array([n for n, _ in tasks.values()], dtype=np.int64)
    correct = np.array([c for _, c in tasks.values()], dtype=np.int64)
    return _pass_hat_k(trials, correct, seed=seed)


def _pass_hat_k(
    trials: np.ndarray, correct: np.ndarray, *, seed: int
) -> dict[str, PassHatK] | None:
    """:func:`pass_hat_k_of_counts` of per-task trials and passes (int64 arrays)."""
    if not len(trials) or int(trials.max()) < 2:
        return None
    result: dict[str, PassHatK] = {}
    for k in range(1, min(int(trials.min()), MAX_PASS_HAT_K) + 1):
        per_task = np.ones(len(trials))
        for i in range(k):
            per_task *= np.maximum(correct - i, 0) / (trials - i)
        ((low, high),) = bootstrap_cis([per_task], seed=seed)
        result[str(k)] = PassHatK(
            estimate=pass_hat_k(trials, correct, k), low=low, high=high, n=len(trials)
        )
    return result
