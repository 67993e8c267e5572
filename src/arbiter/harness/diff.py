"""Compare two runs example by example: what flipped, how each pass rate moved, and
whether the change is more than chance.

A diff has one *view* per thing a run decides: the outcome (a repetition passes when no
gating scorer failed and one passed: the report's headline) and each scorer present in
both runs, matched by name. In a view an example *passed* when it passed on every
repetition, *failed* when a repetition failed (a failed call fails every view), and
*abstained* otherwise (a repetition abstained or errored and none failed). Examples
decided in both runs are *paired*; a paired example that passed in A and failed in B is
*broken*, the other way round *fixed*. An example that abstained in either run is
counted apart, never as a flip. Over the paired examples a view gives the change of its
pass rate with a paired bootstrap 95% interval, and an exact McNemar test on the flips
(the discordant pairs).

Every figure follows from a few counts per example and view (:class:`RunTallies`: its
repetitions, failed calls, passes and failures, and the mean of its values), so a diff
is made in two steps: :func:`diff_tallied` computes the figures and lists the flips by
example id from the tallies, which the store can count in SQL without reading a run
whole; :func:`with_flip_texts` then reads what the flips show from the results of those
examples alone (all of them, or the first N of each list). :func:`diff_runs` does both
from results in memory.

Texts of a flip (answers, reference, reason) are clipped here; they are escaped where
they are shown.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from pydantic import BaseModel, Field

from arbiter import escape
from arbiter.contract import Example, Output, PairResult, ScorerSpec
from arbiter.harness.comparability import comparability_notes  # re-exported: older import path
from arbiter.harness.pairs import expected_text, reason_of
from arbiter.stats import mcnemar_exact, paired_bootstrap_diff

__all__ = [
    "FLIP_TEXT_CHARS",
    "Flip",
    "MetricDelta",
    "PairedDiff",
    "RunDiff",
    "RunTallies",
    "ScorerDiff",
    "ScorerMap",
    "ScorerTally",
    "Tally",
    "comparability_notes",
    "dataset_positions",
    "diff_runs",
    "diff_tallied",
    "flips_to_show",
    "scorers_by_name",
    "tally_results",
    "with_flip_texts",
]

FLIP_TEXT_CHARS = 500
"""Characters kept of each answer, reference and reason of a flip."""


class Flip(BaseModel):
    """A paired example that passed in one run and not in the other."""

    example_id: str
    """The example."""
    expected: str | None = None
    """Its reference as text (the expected label, else the reference as JSON); None when
    it has none."""
    answer_a: str | None = None
    """What run A answered on the repetition shown (the first that did not pass, else the
    first): its label, else its text, for the outcome and ``label``; its text, else its
    label, for other scorers; else its raw JSON. None when the call failed."""
    answer_b: str | None = None
    """What run B answered, chosen the same way."""
    reason: str = ""
    """Why the side that did not pass failed: the call's error, else the scorer's reason."""


class MetricDelta(BaseModel):
    """How one figure moved from run A to run B, over the paired examples."""

    name: str
    """Figure name: ``accuracy`` / ``pass rate`` (mean share of passed repetitions per
    example), ``pass^k`` (share of examples passed on every repetition), ``mean value``."""
    n: int
    """Examples the figure is computed over."""
    a: float
    """Value in run A."""
    b: float
    """Value in run B."""
    delta: float
    """b − a."""
    low: float
    """Lower end of the paired-bootstrap 95% interval of the change."""
    high: float
    """Upper end of the interval."""


class PairedDiff(BaseModel):
    """One view of two runs, compared over the examples it decided in both."""

    n_paired: int = 0
    """Examples in common decided (passed or failed) in both runs."""
    both_passed: int = 0
    """Paired examples that passed in both."""
    both_failed: int = 0
    """Paired examples that failed in both."""
    broken: list[Flip] = Field(default_factory=list)
    """Passed in A, failed in B; in dataset order."""
    fixed: list[Flip] = Field(default_factory=list)
    """Failed in A, passed in B; in dataset order."""
    abstained: list[str] = Field(default_factory=list)
    """Examples in common abstained (undecided) in A, in B or in both: counted apart,
    neither paired nor flipped."""
    deltas: list[MetricDelta] = Field(default_factory=list)
    """The view's figures in A and B with the change and its interval; empty when no
    example is paired."""
    mcnemar_p: float = 1.0
    """Exact two-sided McNemar p-value of the flips (``len(broken)`` against
    ``len(fixed)``): how likely flips this lopsided are if neither run is better; 1.0
    when nothing flipped."""


class ScorerDiff(PairedDiff):
    """One scorer present in both runs, compared."""

    name: str
    """The scorer's name in the runs (its alias, else its registered name)."""
    spec_a: ScorerSpec | None = None
    """Its spec in run A, when known."""
    spec_b: ScorerSpec | None = None
    """Its spec in run B, when known."""


class RunDiff(PairedDiff):
    """Everything that changed between two runs.

    The fields it shares with :class:`ScorerDiff` are the outcome's: ``accuracy`` and
    ``pass^k`` as the report's headline, over the gating scorers of each run.
    """

    run_a: str
    """Id of run A (the reference)."""
    run_b: str
    """Id of run B."""
    n_common: int
    """Examples present in both runs."""
    only_in_a: list[str] = Field(default_factory=list)
    """Examples run only in A."""
    only_in_b: list[str] = Field(default_factory=list)
    """Examples run only in B."""
    scorers: list[ScorerDiff] = Field(default_factory=list)
    """One comparison per scorer present in both runs, in run A's order."""
    scorers_only_in_a: list[str] = Field(default_factory=list)
    """Scorers run only in A: not compared."""
    scorers_only_in_b: list[str] = Field(default_factory=list)
    """Scorers run only in B: not compared."""


class _TextView(Protocol):
    """How one view reads a repetition for a flip: its outcome and its texts."""

    def outcome(self, result: PairResult) -> bool | None:
        """Passed, failed, or None: abstained."""

    def answer(self, result: PairResult) -> str | None:
        """What the system answered, as a flip shows it (clipped)."""

    def reason(self, result: PairResult) -> str:
        """Why it did not pass (clipped); empty when it passed."""


Tally = tuple[int, int, int, int]
"""One example in a run's outcome: its repetitions, those whose call failed, those passed
and those failed (a failed call included)."""

ScorerTally = tuple[int, int, float | None]
"""One example under one scorer, over its repetitions whose call did not fail: those the
scorer passed, those it failed; and the mean of its values over every repetition (None:
it gave none)."""


@dataclass(frozen=True)
class RunTallies:
    """A run as a diff reads it: per example, how its repetitions fared.

    Built from the results here (:func:`tally_results`) or counted by the store's SQL
    (:mod:`arbiter.store.compare_repository`): the same figures either way.
    """

    outcome: Mapping[str, Tally]
    """Each example that has a result, in the order its results were read (by first
    repetition, then by example id): its outcome tally."""
    scorers: Mapping[str, Mapping[str, ScorerTally]]
    """Scorer name -> example -> its tally; an example the scorer never scored has none."""


def tally_results(
    grouped: Mapping[str, Sequence[PairResult]], scorers: Sequence[str]
) -> RunTallies:
    """The tallies of results grouped by example (repetitions in order) for ``scorers``."""
    outcome: dict[str, Tally] = {}
    by_scorer: dict[str, dict[str, ScorerTally]] = {name: {} for name in scorers}
    for example_id, results in grouped.items():
        dead = sum(r.output is None for r in results)
        passed = sum(r.output is not None and r.passed is True for r in results)
        failed = dead + sum(r.output is not None and r.passed is False for r in results)
        outcome[example_id] = (len(results), dead, passed, failed)
        for name in scorers:
            scores = [r.score(name) for r in results]
            if all(s is None for s in scores):
                continue
            alive = [s for r, s in zip(results, scores, strict=True) if r.output is not None]
            by_scorer[name][example_id] = (
                sum(s is not None and s.passed is True for s in alive),
                sum(s is not None and s.passed is False for s in alive),
                _mean([None if s is None else s.value for s in scores]),
            )
    return RunTallies(outcome, by_scorer)


ScorerMap = Mapping[str, ScorerSpec | None]
"""A run's scorers by name (alias, else registered name), in order; None: known only by
the name its scores carry, gating."""


def scorers_by_name(specs: Sequence[ScorerSpec]) -> dict[str, ScorerSpec | None]:
    """A run's scorer specs as a :data:`ScorerMap`."""
    return {spec.label: spec for spec in specs}


def dataset_positions(examples: Sequence[Example]) -> dict[str, int]:
    """Each example's place in ``examples`` (the first listing of an id wins)."""
    position: dict[str, int] = {}
    for example in examples:
        position.setdefault(example.id, len(position))
    return position


def diff_runs(
    run_a: str,
    results_a: Sequence[PairResult],
    run_b: str,
    results_b: Sequence[PairResult],
    *,
    examples: Sequence[Example] = (),
    scorers_a: Sequence[ScorerSpec] | None = None,
    scorers_b: Sequence[ScorerSpec] | None = None,
    seed: int = 0,
) -> RunDiff:
    """Pair two runs' results by example id; compare the outcome and each common scorer.

    Args:
        run_a: Id of the reference run.
        results_a: Its results.
        run_b: Id of the other run.
        results_b: Its results.
        examples: The runs' examples (A's first): the references shown in flips and the
            order flips are listed in. An example of neither list sorts last.
        scorers_a: Run A's scorers; None: the names its scores carry, every one gating.
        scorers_b: Run B's scorers, likewise.
        seed: Seed of the paired bootstraps.
    """
    grouped_a, grouped_b = _group(results_a), _group(results_b)
    specs_a = _specs(scorers_a, results_a)
    specs_b = _specs(scorers_b, results_b)
    common = [name for name in specs_a if name in specs_b]
    diff = diff_tallied(
        run_a,
        tally_results(grouped_a, common),
        run_b,
        tally_results(grouped_b, common),
        position=dataset_positions(examples),
        scorers_a=specs_a,
        scorers_b=specs_b,
        seed=seed,
    )
    references: dict[str, str | None] = {}
    for example in examples:
        references.setdefault(example.id, expected_text(example))
    return with_flip_texts(diff, grouped_a, grouped_b, references, specs_a, specs_b)


def diff_tallied(
    run_a: str,
    tallies_a: RunTallies,
    run_b: str,
    tallies_b: RunTallies,
    *,
    position: Mapping[str, int],
    scorers_a: ScorerMap,
    scorers_b: ScorerMap,
    seed: int = 0,
    only: Collection[str] | None = None,
    outcome_only: bool = False,
) -> RunDiff:
    """:func:`diff_runs` from the runs' tallies: every figure, and the flips by example id
    alone (:func:`with_flip_texts` adds what they show).

    Args:
        run_a: Id of the reference run.
        tallies_a: Its tallies.
        run_b: Id of the other run.
        tallies_b: Its tallies.
        position: Each example's place in the runs' datasets (A's first): the order
            flips are listed in; an example without one sorts last.
        scorers_a: Run A's scorers by name.
        scorers_b: Run B's scorers by name.
        seed: Seed of the paired bootstraps.
        only: Compare only these examples (a cohort); None: every one.
        outcome_only: Compare the outcome alone (``scorers`` is then empty).
    """
    in_a = [i for i in tallies_a.outcome if only is None or i in only]
    in_b = {i for i in tallies_b.outcome if only is None or i in only}
    last = len(position)
    common = sorted((i for i in in_a if i in in_b), key=lambda i: position.get(i, last))
    pairs = _Pairs(tallies_a, tallies_b, common, seed)
    outcome = pairs.compare(None, rate="accuracy", always_pass_k=True)
    scorers = []
    for name, spec_a in scorers_a.items():
        if name not in scorers_b or outcome_only:
            continue
        compared = pairs.compare(name)
        scorers.append(
            ScorerDiff(name=name, spec_a=spec_a, spec_b=scorers_b[name], **dict(compared))
        )
    set_a = set(in_a)
    return RunDiff(
        run_a=run_a,
        run_b=run_b,
        n_common=len(common),
        only_in_a=sorted(set_a - in_b),
        only_in_b=sorted(in_b - set_a),
        scorers=scorers,
        scorers_only_in_a=[n for n in scorers_a if n not in scorers_b],
        scorers_only_in_b=[n for n in scorers_b if n not in scorers_a],
        **dict(outcome),
    )


def flips_to_show(diff: RunDiff, limit: int | None = None) -> list[str]:
    """The examples whose flips :func:`with_flip_texts` fills in, the first ``limit`` of
    each list (None: all), each once."""
    chosen: dict[str, None] = {}
    for view in (diff, *diff.scorers):
        for flips in (view.broken, view.fixed):
            chosen.update((f.example_id, None) for f in flips[:limit])
    return list(chosen)


def with_flip_texts(
    diff: RunDiff,
    results_a: Mapping[str, Sequence[PairResult]],
    results_b: Mapping[str, Sequence[PairResult]],
    references: Mapping[str, str | None],
    scorers_a: ScorerMap,
    scorers_b: ScorerMap,
    *,
    limit: int | None = None,
) -> RunDiff:
    """``diff`` with its flips' texts (answers, reference, reason) filled in.

    Args:
        diff: A diff whose flips name their examples (:func:`diff_tallied`).
        results_a: Run A's results of the flipped examples, by example, repetitions in
            order (at least those of :func:`flips_to_show`).
        results_b: Run B's, likewise.
        references: Each example's reference as text (A's dataset first).
        scorers_a: Run A's scorers by name (its gating ones make the outcome).
        scorers_b: Run B's, likewise.
        limit: Fill the first ``limit`` flips of each list; the rest keep their example
            id alone. None: every flip.
    """

    def filled(
        flips: list[Flip], view_a: _TextView, view_b: _TextView, *, fixed: bool
    ) -> list[Flip]:
        shown = [
            _flip(f.example_id, results_a, results_b, references, view_a, view_b, fixed=fixed)
            for f in flips[:limit]
        ]
        return shown + flips[len(shown) :]

    def view(paired: PairedDiff, view_a: _TextView, view_b: _TextView) -> dict[str, list[Flip]]:
        return {
            "broken": filled(paired.broken, view_a, view_b, fixed=False),
            "fixed": filled(paired.fixed, view_a, view_b, fixed=True),
        }

    scorers = []
    for s in diff.scorers:
        label_first = (s.spec_a or s.spec_b or ScorerSpec(name=s.name)).name == "label"
        each = _ScorerView(s.name, label_first)
        scorers.append(s.model_copy(update=view(s, each, each)))
    outcome = view(diff, _outcome_view(scorers_a), _outcome_view(scorers_b))
    return diff.model_copy(update={**outcome, "scorers": scorers})


_UNSCORED: ScorerTally = (0, 0, None)
"""The tally of an example a scorer never scored."""

_UNDECIDED, _FAILED, _PASSED = -1, 0, 1
"""An example's outcome in a view, as the arrays of :class:`_Pairs` hold it."""


@dataclass(frozen=True)
class _View:
    """One view of one run over the examples in common, one array entry per example."""

    reps: np.ndarray[Any, np.dtype[np.int64]]
    """Its repetitions."""
    passed: np.ndarray[Any, np.dtype[np.int64]]
    """Those passed."""
    failed: np.ndarray[Any, np.dtype[np.int64]]
    """Those failed."""
    means: np.ndarray[Any, np.dtype[np.float64]] | None
    """The mean of its values (nan: none); None for the outcome."""

    @property
    def settled(self) -> np.ndarray[Any, np.dtype[np.int64]]:
        """Failed if a repetition failed, passed if every one passed, else undecided (as
        :func:`arbiter.harness.report.example_outcomes`)."""
        undecided = self.reps - self.passed - self.failed
        return np.where(
            self.failed > 0, _FAILED, np.where(undecided > 0, _UNDECIDED, _PASSED)
        ).astype(np.int64)


class _Pairs:
    """Two runs' tallies over the examples in common, which every view compares."""

    def __init__(self, a: RunTallies, b: RunTallies, common: list[str], seed: int) -> None:
        self.a, self.b, self.common, self.seed = a, b, common, seed
        self._outcome_a = self._counts(a)
        self._outcome_b = self._counts(b)

    def _counts(self, tallies: RunTallies) -> np.ndarray[Any, np.dtype[np.int64]]:
        rows = [tallies.outcome[i] for i in self.common]
        return np.array(rows, dtype=np.int64).reshape(len(rows), 4)

    def _view(
        self, tallies: RunTallies, outcome: np.ndarray[Any, np.dtype[np.int64]], scorer: str | None
    ) -> _View:
        reps, dead = outcome[:, 0], outcome[:, 1]
        if scorer is None:
            return _View(reps, outcome[:, 2], outcome[:, 3], None)
        scored = tallies.scorers.get(scorer, {})
        rows = [scored.get(i, _UNSCORED) for i in self.common]
        passed = np.array([r[0] for r in rows], dtype=np.int64)
        failed = np.array([r[1] for r in rows], dtype=np.int64) + dead  # a failed call fails all
        means = np.array([np.nan if r[2] is None else r[2] for r in rows], dtype=np.float64)
        return _View(reps, passed, failed, means)

    def compare(
        self, scorer: str | None, *, rate: str = "pass rate", always_pass_k: bool = False
    ) -> PairedDiff:
        """One view compared (the outcome: ``scorer`` None): flips, abstentions, deltas
        and McNemar's test."""
        view_a = self._view(self.a, self._outcome_a, scorer)
        view_b = self._view(self.b, self._outcome_b, scorer)
        settled_a, settled_b = view_a.settled, view_b.settled
        paired = (settled_a != _UNDECIDED) & (settled_b != _UNDECIDED)
        broken = paired & (settled_a == _PASSED) & (settled_b == _FAILED)
        fixed = paired & (settled_a == _FAILED) & (settled_b == _PASSED)
        diff = PairedDiff(
            n_paired=int(paired.sum()),
            both_passed=int((paired & (settled_a == _PASSED) & (settled_b == _PASSED)).sum()),
            both_failed=int((paired & (settled_a == _FAILED) & (settled_b == _FAILED)).sum()),
            broken=self._flips(broken),
            fixed=self._flips(fixed),
            abstained=[self.common[j] for j in np.flatnonzero(~paired)],
        )
        diff.mcnemar_p = mcnemar_exact(len(diff.broken), len(diff.fixed))
        if diff.n_paired:
            share_a = view_a.passed[paired] / (view_a.passed[paired] + view_a.failed[paired])
            share_b = view_b.passed[paired] / (view_b.passed[paired] + view_b.failed[paired])
            diff.deltas.append(self._delta(rate, share_a, share_b))
            repeated = bool(((view_a.reps[paired] > 1) | (view_b.reps[paired] > 1)).any())
            if always_pass_k or repeated:
                all_a = (settled_a[paired] == _PASSED).astype(np.float64)
                all_b = (settled_b[paired] == _PASSED).astype(np.float64)
                diff.deltas.append(self._delta("pass^k", all_a, all_b))
        if view_a.means is not None and view_b.means is not None:
            known = ~np.isnan(view_a.means) & ~np.isnan(view_b.means)
            mean_a, mean_b = view_a.means[known], view_b.means[known]
            binary = np.isin(mean_a, (0.0, 1.0)).all() and np.isin(mean_b, (0.0, 1.0)).all()
            if known.any() and not binary:
                diff.deltas.append(self._delta("mean value", mean_a, mean_b))
        return diff

    def _flips(self, chosen: np.ndarray[Any, np.dtype[np.bool_]]) -> list[Flip]:
        return [Flip(example_id=self.common[j]) for j in np.flatnonzero(chosen)]

    def _delta(
        self,
        name: str,
        a: np.ndarray[Any, np.dtype[np.float64]],
        b: np.ndarray[Any, np.dtype[np.float64]],
    ) -> MetricDelta:
        delta, low, high = paired_bootstrap_diff(a, b, seed=self.seed)
        return MetricDelta(
            name=name,
            n=len(a),
            a=float(a.mean()),
            b=float(b.mean()),
            delta=delta,
            low=low,
            high=high,
        )


def _flip(
    example_id: str,
    results_a: Mapping[str, Sequence[PairResult]],
    results_b: Mapping[str, Sequence[PairResult]],
    references: Mapping[str, str | None],
    view_a: _TextView,
    view_b: _TextView,
    *,
    fixed: bool,
) -> Flip:
    shown_a = _shown(view_a, results_a[example_id])
    shown_b = _shown(view_b, results_b[example_id])
    failing_view, failing = (view_a, shown_a) if fixed else (view_b, shown_b)
    reference = references.get(example_id)
    return Flip(
        example_id=example_id,
        expected=None if reference is None else _clip(reference),
        answer_a=view_a.answer(shown_a),
        answer_b=view_b.answer(shown_b),
        reason=failing_view.reason(failing),
    )


def _shown(view: _TextView, results: Sequence[PairResult]) -> PairResult:
    """The repetition a flip shows: the first that failed, else the first."""
    return next((r for r in results if view.outcome(r) is False), results[0])


@dataclass(frozen=True)
class _OutcomeView:
    """The repetition's outcome over the run's gating scorers."""

    gating: frozenset[str]

    def outcome(self, result: PairResult) -> bool | None:
        return False if result.output is None else result.passed

    def answer(self, result: PairResult) -> str | None:
        return _answer(result.output, label_first=True)

    def reason(self, result: PairResult) -> str:
        if result.output is None:
            return _call_error(result)
        failed = [s for s in result.scores if s.passed is False and s.name in self.gating]
        return _clip("; ".join(f"{s.name}: {reason_of(s) or 'failed'}" for s in failed))


def _outcome_view(specs: Mapping[str, ScorerSpec | None]) -> _OutcomeView:
    return _OutcomeView(
        frozenset(name for name, spec in specs.items() if spec is None or spec.gating)
    )


@dataclass(frozen=True)
class _ScorerView:
    """One scorer's verdict; a failed call fails it, a missing score abstains."""

    name: str
    label_first: bool

    def outcome(self, result: PairResult) -> bool | None:
        if result.output is None:
            return False
        score = result.score(self.name)
        return None if score is None else score.passed  # None: stored before the scorer

    def answer(self, result: PairResult) -> str | None:
        return _answer(result.output, label_first=self.label_first)

    def reason(self, result: PairResult) -> str:
        if result.output is None:
            return _call_error(result)
        score = result.score(self.name)
        return "" if score is None or score.passed else _clip(reason_of(score))


def _answer(output: Output | None, *, label_first: bool) -> str | None:
    if output is None:
        return None
    first, second = (output.label, output.text) if label_first else (output.text, output.label)
    text = first if first is not None else second
    if text is None and output.raw is not None:
        text = json.dumps(output.raw, ensure_ascii=False, separators=(",", ":"), default=str)
    return None if text is None else _clip(text)


def _call_error(result: PairResult) -> str:
    error = f"{result.error_type or 'Error'}: {result.error_message or ''}".rstrip(": ")
    return _clip(f"the call failed: {error}")


def _clip(text: str) -> str:
    return escape.clip(text, FLIP_TEXT_CHARS)


def _mean(values: Sequence[float | None]) -> float | None:
    known = [value for value in values if value is not None]
    return sum(known) / len(known) if known else None


def _specs(
    specs: Sequence[ScorerSpec] | None, results: Sequence[PairResult]
) -> dict[str, ScorerSpec | None]:
    """The run's scorers by name, in order; without specs, the names its scores carry."""
    if specs is not None:
        return {spec.label: spec for spec in specs}
    names: dict[str, ScorerSpec | None] = {}
    for result in results:
        for score in result.scores:
            names.setdefault(score.name, None)
    return names


def _group(results: Sequence[PairResult]) -> dict[str, list[PairResult]]:
    grouped: dict[str, list[PairResult]] = {}
    for r in sorted(results, key=lambda r: r.repetition):
        grouped.setdefault(r.example_id, []).append(r)
    return grouped
