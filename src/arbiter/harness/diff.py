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

Texts of a flip (answers, reference, reason) are clipped here; they are escaped where
they are shown.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from pydantic import BaseModel, Field

from arbiter import escape
from arbiter.contract import Example, Output, PairResult, ScorerSpec
from arbiter.harness.comparability import comparability_notes  # re-exported: older import path
from arbiter.harness.pairs import expected_text, reason_of
from arbiter.harness.report import example_outcomes
from arbiter.stats import mcnemar_exact, paired_bootstrap_diff

__all__ = [
    "FLIP_TEXT_CHARS",
    "Flip",
    "MetricDelta",
    "PairedDiff",
    "RunDiff",
    "ScorerDiff",
    "comparability_notes",
    "diff_runs",
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


class _View(Protocol):
    """How one view reads a repetition: its outcome cheaply, its texts only for a flip."""

    @property
    def measures(self) -> bool:
        """Whether its repetitions may carry a value (a mean value delta is then computed)."""

    def outcome(self, result: PairResult) -> bool | None:
        """Passed, failed, or None: abstained."""

    def value(self, result: PairResult) -> float | None:
        """The value measured, if any."""

    def answer(self, result: PairResult) -> str | None:
        """What the system answered, as a flip shows it (clipped)."""

    def reason(self, result: PairResult) -> str:
        """Why it did not pass (clipped); empty when it passed."""


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
    references: dict[str, str | None] = {}
    for example in examples:
        references.setdefault(example.id, expected_text(example))
    common = _in_order([i for i in grouped_a if i in grouped_b], examples)
    pairs = _Pairs(grouped_a, grouped_b, common, references, seed)
    specs_a = _specs(scorers_a, results_a)
    specs_b = _specs(scorers_b, results_b)
    outcome = pairs.compare(
        _outcome_view(specs_a), _outcome_view(specs_b), rate="accuracy", always_pass_k=True
    )
    scorers = []
    for name, spec_a in specs_a.items():
        if name not in specs_b:
            continue
        spec_b = specs_b[name]
        label_first = (spec_a or spec_b or ScorerSpec(name=name)).name == "label"
        view = _ScorerView(name, label_first)
        compared = pairs.compare(view, view)
        scorers.append(ScorerDiff(name=name, spec_a=spec_a, spec_b=spec_b, **dict(compared)))
    return RunDiff(
        run_a=run_a,
        run_b=run_b,
        n_common=len(common),
        only_in_a=sorted(set(grouped_a) - set(grouped_b)),
        only_in_b=sorted(set(grouped_b) - set(grouped_a)),
        scorers=scorers,
        scorers_only_in_a=[n for n in specs_a if n not in specs_b],
        scorers_only_in_b=[n for n in specs_b if n not in specs_a],
        **dict(outcome),
    )


@dataclass(frozen=True)
class _Pairs:
    """Two runs' results grouped by example, and what every view compares them over."""

    a: Mapping[str, Sequence[PairResult]]
    b: Mapping[str, Sequence[PairResult]]
    common: Sequence[str]
    references: Mapping[str, str | None]
    seed: int

    def compare(
        self, view_a: _View, view_b: _View, *, rate: str = "pass rate", always_pass_k: bool = False
    ) -> PairedDiff:
        """One view compared: flips, abstentions, deltas and McNemar's test."""
        reps_a = {i: [view_a.outcome(r) for r in self.a[i]] for i in self.common}
        reps_b = {i: [view_b.outcome(r) for r in self.b[i]] for i in self.common}
        settled_a, settled_b = example_outcomes(reps_a), example_outcomes(reps_b)
        diff = PairedDiff()
        paired = []
        for i in self.common:
            outcome_a, outcome_b = settled_a[i], settled_b[i]
            if outcome_a is None or outcome_b is None:
                diff.abstained.append(i)
                continue
            paired.append(i)
            if outcome_a == outcome_b:
                if outcome_a:
                    diff.both_passed += 1
                else:
                    diff.both_failed += 1
                continue
            flip = self._flip(i, view_a, view_b, fixed=outcome_b)
            (diff.fixed if outcome_b else diff.broken).append(flip)
        diff.n_paired = len(paired)
        diff.mcnemar_p = mcnemar_exact(len(diff.broken), len(diff.fixed))
        if paired:
            shares = [(_share(reps_a[i]), _share(reps_b[i])) for i in paired]
            diff.deltas.append(self._delta(rate, shares))
            repeated = any(len(reps_a[i]) > 1 or len(reps_b[i]) > 1 for i in paired)
            if always_pass_k or repeated:
                passed = [
                    (float(settled_a[i] is True), float(settled_b[i] is True)) for i in paired
                ]
                diff.deltas.append(self._delta("pass^k", passed))
        if view_a.measures and view_b.measures:
            values = [
                (mean_a, mean_b)
                for i in self.common
                if (mean_a := _mean([view_a.value(r) for r in self.a[i]])) is not None
                and (mean_b := _mean([view_b.value(r) for r in self.b[i]])) is not None
            ]
            if values and not {v for pair in values for v in pair} <= {0.0, 1.0}:
                diff.deltas.append(self._delta("mean value", values))
        return diff

    def _flip(self, example_id: str, view_a: _View, view_b: _View, *, fixed: bool) -> Flip:
        shown_a = _shown(view_a, self.a[example_id])
        shown_b = _shown(view_b, self.b[example_id])
        failing_view, failing = (view_a, shown_a) if fixed else (view_b, shown_b)
        reference = self.references.get(example_id)
        return Flip(
            example_id=example_id,
            expected=None if reference is None else _clip(reference),
            answer_a=view_a.answer(shown_a),
            answer_b=view_b.answer(shown_b),
            reason=failing_view.reason(failing),
        )

    def _delta(self, name: str, pairs: Sequence[tuple[float, float]]) -> MetricDelta:
        a = np.array([first for first, _ in pairs], dtype=np.float64)
        b = np.array([second for _, second in pairs], dtype=np.float64)
        delta, low, high = paired_bootstrap_diff(a, b, seed=self.seed)
        return MetricDelta(
            name=name,
            n=len(pairs),
            a=float(a.mean()),
            b=float(b.mean()),
            delta=delta,
            low=low,
            high=high,
        )


def _shown(view: _View, results: Sequence[PairResult]) -> PairResult:
    """The repetition a flip shows: the first that failed, else the first."""
    return next((r for r in results if view.outcome(r) is False), results[0])


@dataclass(frozen=True)
class _OutcomeView:
    """The repetition's outcome over the run's gating scorers."""

    gating: frozenset[str]
    measures: bool = False

    def outcome(self, result: PairResult) -> bool | None:
        return False if result.output is None else result.passed

    def value(self, result: PairResult) -> float | None:
        return None

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
    measures: bool = True

    def outcome(self, result: PairResult) -> bool | None:
        if result.output is None:
            return False
        score = result.score(self.name)
        return None if score is None else score.passed  # None: stored before the scorer

    def value(self, result: PairResult) -> float | None:
        score = result.score(self.name)
        return None if score is None else score.value

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


def _share(outcomes: Sequence[bool | None]) -> float:
    decided = [outcome for outcome in outcomes if outcome is not None]
    return sum(decided) / len(decided)


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


def _in_order(ids: Sequence[str], examples: Sequence[Example]) -> list[str]:
    """``ids`` in dataset order (first listing wins); ids of no example last, as given."""
    position: dict[str, int] = {}
    for example in examples:
        position.setdefault(example.id, len(position))
    last = len(position)
    return sorted(ids, key=lambda i: position.get(i, last))
