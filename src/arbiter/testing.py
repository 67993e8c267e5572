"""Evaluations as tests: run a dataset through a target and assert on honest figures.

What the pytest plugin (:mod:`arbiter.pytest_plugin`) and :func:`assert_output` are made
of, usable from any test runner::

    result = evaluate(answer, dataset="cases.jsonl", scorers=["normalized"], k=3)
    assert result.pass_rate.low >= 0.8          # the interval's lower end, not the estimate
    result.assert_no_regression(baseline="main")

Every figure is an :class:`Figure` with its 95% interval and n. A failed assertion names
the figure and the failing examples (their reasons from the scorers), escaped for the
terminal. A run is stored like any other (tagged with the test's node id and the label
it is stored under), so ``arbiter report``, the UI and signing work on it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import math
import warnings
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from arbiter import escape

if TYPE_CHECKING:
    from arbiter.contract import Example, Interval, PairResult, Report, Score
    from arbiter.harness.diff import RunDiff
    from arbiter.store import Store

__all__ = [
    "LABEL_TAG",
    "NODE_TAG",
    "EvalResult",
    "Figure",
    "assert_output",
    "evaluate",
    "run_sync",
]

NODE_TAG = "pytest_node"
"""The tag holding the node id of the test a run was made by."""

LABEL_TAG = "pytest_label"
"""The tag holding the label a run was stored under (``--arbiter-label``: ``main``, ...)."""

_SHOWN_FAILURES = 10
"""Failing examples a message names."""

T = TypeVar("T")


def run_sync(work: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to its end from sync code, also inside a running event loop (an
    async test): there it runs on a loop of its own in a worker thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(work)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, work).result()


@dataclass(frozen=True)
class Figure:
    """A rate with its 95% interval: compare ``low`` with a floor, not the estimate."""

    name: str
    """What it measures (``pass rate``, ``pass^3``, ``normalized pass rate``)."""
    estimate: float
    """The point estimate."""
    low: float
    """Lower end of the 95% interval."""
    high: float
    """Upper end of the 95% interval."""
    n: int
    """What it is over: decided pairs (Wilson) or examples (bootstrap)."""
    method: str
    """``wilson`` or ``bootstrap``."""

    @classmethod
    def of(cls, name: str, interval: Interval) -> Figure:
        """A figure from a report's interval."""
        return cls(
            name, interval.estimate, interval.low, interval.high, interval.n, interval.method
        )

    def __repr__(self) -> str:
        return (
            f"<{self.name} {_pct(self.estimate)} [{_pct(self.low)}, {_pct(self.high)}] n={self.n}>"
        )


def _pct(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.1%}"


@dataclass
class EvalResult:
    """A finished evaluation: its figures, its failing examples, its stored run."""

    report: Report
    """The whole report."""
    examples: list[Example]
    """The examples in scope."""
    results: list[PairResult]
    """Every (example, repetition) result."""
    store: Store | None = None
    """Where the run is stored."""
    node_id: str | None = None
    """The test that made it."""
    tags: dict[str, str] = field(default_factory=dict)
    """The stored run's tags (its node id, its label)."""
    _failing: list[tuple[str, str]] | None = field(default=None, repr=False)

    @property
    def run_id(self) -> str | None:
        """The stored run's id; None when it was not stored."""
        return self.report.run_id

    @property
    def pass_rate(self) -> Figure:
        """Share of decided pairs that passed (every gating scorer), Wilson interval."""
        return Figure.of("pass rate", self.report.accuracy)

    @property
    def pass_hat_k(self) -> Figure:
        """Share of decided examples that passed all k repetitions, bootstrap interval."""
        return Figure.of(f"pass^{self.report.k}", self.report.pass_hat_k)

    @property
    def pass_at_1(self) -> Figure:
        """Mean over examples of the share of repetitions that passed, bootstrap interval."""
        return Figure.of("pass@1", self.report.pass_at_1)

    @property
    def error_rate(self) -> float:
        """Failed calls over pairs."""
        return self.report.error_rate

    def scorer(self, name: str) -> Figure:
        """One scorer's pass rate with its interval.

        Raises:
            KeyError: The run has no scorer of that name (the message lists them).
        """
        section = self.report.sections.get(name)
        if section is None or section.pass_rate is None:
            known = ", ".join(self.report.sections) or "none"
            raise KeyError(f"no scorer {name!r} with a pass rate in this run; its scorers: {known}")
        return Figure.of(f"{name} pass rate", section.pass_rate)

    @property
    def failing(self) -> list[str]:
        """The examples not passed on every repetition, worst first, each with why."""
        return [line for _, line in self._failures()]

    @property
    def failing_ids(self) -> list[str]:
        """The ids of the failing examples, worst first."""
        return [example_id for example_id, _ in self._failures()]

    def _failures(self) -> list[tuple[str, str]]:
        if self._failing is None:
            from arbiter.harness.failures import find_failures

            found = find_failures(self.report, self.examples, self.results, limit=None)
            lines = []
            for example in found.examples:
                reps = len(example.repetitions) + len(example.clean_repetitions)
                why = next(
                    (
                        score.reason
                        if score.reason.startswith(score.name)
                        else f"{score.name}: {score.reason}"
                        for rep in example.repetitions
                        for score in rep.scores
                        if score.verdict != "pass" and score.reason
                    ),
                    example.repetitions[0].error or example.outcome,
                )
                shown = f"{example.example_id} ({len(example.repetitions)}/{reps} reps: {why})"
                lines.append(
                    (
                        escape.terminal(example.example_id, limit=120, single_line=True),
                        escape.terminal(shown, limit=300, single_line=True),
                    )
                )
            self._failing = lines
        return self._failing

    def summary(self) -> str:
        """The figures and every failing example with why, one per line."""
        where = f"run {self.run_id}" if self.run_id else "not stored"
        lines = [
            f"{escape.terminal(self.report.dataset, limit=100)} ({where}): {self.pass_rate!r}, "
            f"{self.pass_hat_k!r}, error rate {self.error_rate:.1%}",
            f"failing {len(self.failing)}/{self.report.n_examples} examples"
            + (":" if self.failing else ": none"),
            *(f"  {line}" for line in self.failing),
        ]
        return "\n".join(lines)

    def __repr__(self) -> str:
        # Short: pytest shows it whole only up to a couple hundred characters.
        ids = ", ".join(self.failing_ids[:_SHOWN_FAILURES])
        more = ", ..." if len(self.failing) > _SHOWN_FAILURES else ""
        return (
            f"<EvalResult {escape.terminal(self.report.dataset, limit=40)}: failing "
            f"{len(self.failing)}/{self.report.n_examples}: {escape.clip(ids, 120) or 'none'}"
            f"{more}>"
        )

    def assert_no_regression(self, baseline: str, *, epsilon: float = 0.0) -> None:
        """Fail when a figure dropped against ``baseline`` by more than ``epsilon`` and the
        paired bootstrap 95% interval of the change lies below zero (the test of
        ``arbiter diff`` and ``arbiter gate --baseline``).

        Args:
            baseline: A run id (or a unique prefix), or a label: the newest completed run
                this test stored under ``--arbiter-label`` that label. A run itself stored
                under that label, with no earlier one, is the first baseline: it passes
                with a warning.
            epsilon: A drop tolerated even when significant.

        Raises:
            AssertionError: A figure regressed (the message names it, its change with the
                interval, and the examples that broke), or no baseline run is found.
        """
        __tracebackhide__ = True  # pytest shows the test's line, not these
        if self.store is None:
            raise AssertionError(
                "assert_no_regression compares with a stored baseline: this result has no store"
            )
        base = self._baseline(baseline)
        if base is None:
            return
        diff = self._diff(base)
        regressed = [d for d in diff.deltas if d.delta < -epsilon and d.high < 0]
        if not regressed:
            return
        broken = [escape.terminal(f.example_id, limit=120) for f in diff.broken]
        lines = [
            f"{d.name} regressed against baseline {base} ({escape.terminal(baseline)}): "
            f"{_pct(d.a)} -> {_pct(d.b)} (change {d.delta:+.3f}, paired 95% CI "
            f"{d.low:+.3f} to {d.high:+.3f}, n={d.n} examples)"
            for d in regressed
        ]
        shown = ", ".join(broken[:_SHOWN_FAILURES])
        more = f" and {len(broken) - _SHOWN_FAILURES} more" if len(broken) > _SHOWN_FAILURES else ""
        lines.append(f"broken ({len(broken)}): {shown or 'none'}{more}")
        raise AssertionError("\n".join(lines))

    def _baseline(self, baseline: str) -> str | None:
        __tracebackhide__ = True  # pytest shows the test's line, not these
        from arbiter.errors import StoreError
        from arbiter.service.browse import RunFilter, list_runs

        assert self.store is not None
        try:
            found = self.store.get_run(baseline).id
        except StoreError:
            found = None
        if found is not None and found != self.run_id:
            return found
        tags = {LABEL_TAG: baseline, **({NODE_TAG: self.node_id} if self.node_id else {})}
        listing = list_runs(self.store, RunFilter(tags=tags, status="completed"), limit=2)
        runs = [info.id for info in listing.items if info.id != self.run_id]
        if not runs and self.tags.get(LABEL_TAG) == baseline:
            warnings.warn(
                f"no earlier run labelled {escape.terminal(baseline)!r} for this test: this "
                "run is the first baseline, nothing to compare with yet",
                stacklevel=3,
            )
            return None
        if not runs:
            raise AssertionError(
                f"no baseline run {escape.terminal(baseline)!r} for this test in "
                f"{self.store.describe()}: store one with `pytest --arbiter-label "
                f"{escape.terminal(baseline)}` on the baseline's code, or give a run id"
            )
        return runs[0]

    def _diff(self, base: str) -> RunDiff:
        __tracebackhide__ = True  # pytest shows the test's line, not these
        from arbiter.service.compare import compare_runs

        assert self.store is not None
        if self.run_id is None:
            raise AssertionError("assert_no_regression compares stored runs: this run has no id")
        return compare_runs(self.store, base, self.run_id).diff


def evaluate(
    target: Callable[..., Any] | str,
    *,
    dataset: str | Path,
    scorers: Sequence[str] = (),
    k: int = 1,
    system: str = "python",
    limit: int | None = None,
    seed: int = 0,
    concurrency: int | None = None,
    timeout: float | None = None,
    name: str | None = None,
    tags: Mapping[str, str] | None = None,
    store: Store,
    node_id: str | None = None,
) -> EvalResult:
    """Run ``dataset`` through ``target`` ``k`` times, score it, and keep the results.

    Args:
        target: A Python callable taking the input dict (sync or async), a
            ``"pkg.module:function"`` / ``"path/file.py:function"`` string, or the target
            of another ``system`` kind (a URL for ``http``).
        dataset: The dataset file (``.json``, ``.jsonl``, ``.csv``).
        scorers: ``NAME[:ARG=VALUE,...]`` each; none: ``label``.
        k: Repetitions per example.
        system: The system kind, for a string target.
        limit: Only the first examples.
        seed: Seed of the intervals' resampling.
        concurrency: Calls in flight; None: the configured default.
        timeout: Seconds per call; None: the configured default.
        name: The stored run's name.
        tags: The stored run's tags.
        store: Where the run is stored (the plugin's ``--arbiter-no-store`` hands in a
            temporary one).
        node_id: The test that runs it (kept as a tag).

    Raises:
        InputError: The dataset, target or a scorer is invalid (one line naming where).
    """
    from arbiter.config import Settings
    from arbiter.contract import RunConfig
    from arbiter.service.eval_file import EvalPlan
    from arbiter.service.run_plans import prepare_run, run_prepared
    from arbiter.service.runs import system_description
    from arbiter.service.scoring import scorer_specs
    from arbiter.systems.python import PythonSystem

    settings = Settings()
    live = None if isinstance(target, str) else PythonSystem(target)
    description = (
        live.describe()
        if live is not None
        else system_description(system, str(target), timeout=timeout or settings.timeout)
    )
    config = RunConfig(
        k=k,
        concurrency=concurrency or settings.concurrency,
        timeout=timeout or settings.timeout,
        retries=settings.retries,
        limit=limit,
        seed=seed,
    )
    run_tags = {**(tags or {}), **({NODE_TAG: node_id} if node_id else {})}
    plan = EvalPlan(
        source=None,
        file_hash=None,
        dataset_path=Path(dataset),
        output_field="output",
        system=description,
        headers={},
        config=config,
        scorers=scorer_specs(list(scorers)),
        name=name,
        tags=run_tags,
        floors=None,
        baseline=None,
    )
    prepared = prepare_run(plan, system=live)
    report = run_sync(run_prepared(prepared, store))
    assert report.run_id is not None  # a stored run has an id
    examples = prepared.dataset.examples[: config.limit or None]
    results = store.results(report.run_id)
    return EvalResult(report, examples, results, store=store, node_id=node_id, tags=run_tags)


def assert_output(
    output: Any,
    *,
    scorer: str,
    expected: Any = None,
    expected_label: str | None = None,
    input: Mapping[str, Any] | None = None,
    **args: Any,
) -> Score:
    """Assert that one output passes one registered scorer.

    Args:
        output: What the system produced: a string, an output or prediction (or a dict
            in either shape), or any JSON.
        scorer: A registered scorer's name (``arbiter scorers``), optionally with
            arguments (``f1_tokens:threshold=0.5``).
        expected: The reference, for scorers that compare with one.
        expected_label: The right label, for label scorers.
        input: The input the output answers, for scorers that read it.
        **args: The scorer's arguments.

    Returns:
        The score, when the output passed.

    Raises:
        AssertionError: The scorer failed the output or abstained (an abstention is not
            a pass); the message gives the scorer's explanation, the output and the
            reference, escaped for the terminal.
        InputError: An unknown scorer or argument, or a reference it needs is missing.

    Examples:
        >>> assert_output("Paris", scorer="normalized", expected=" paris ").passed
        True
    """
    __tracebackhide__ = True  # pytest shows the test's line, not these
    from arbiter.service.output_scoring import score_output

    score = run_sync(
        score_output(
            output,
            scorer=scorer,
            args=args,
            expected=expected,
            expected_label=expected_label,
            input=input,
        )
    )
    if score.passed is True:
        return score
    what = "abstained" if score.passed is None else "failed"
    why = score.error or score.explanation or "no explanation"
    lines = [
        f"scorer {escape.terminal(score.name)!r} {what} the output: "
        + escape.terminal(why, limit=500, single_line=True),
        f"output: {escape.terminal(repr(output), limit=300, single_line=True)}",
    ]
    reference = expected if expected is not None else expected_label
    if reference is not None:
        lines.append(f"expected: {escape.terminal(repr(reference), limit=300, single_line=True)}")
    raise AssertionError("\n".join(lines))
