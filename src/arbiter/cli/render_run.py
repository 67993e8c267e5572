"""How a run's report, diff and gate print in the terminal (Rich).

Labels, ids, cohorts and messages come from datasets and systems under test: they are
made inert with :func:`arbiter.escape.terminal` and never parsed as Rich markup.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from arbiter import escape
from arbiter.contract import ClassificationMetrics, PairResult, Report
from arbiter.harness.diff import Flip, MetricDelta, PairedDiff, RunDiff
from arbiter.harness.figures import binary_valued, headline, label_only, scorer_figures
from arbiter.harness.gate import GateResult

__all__ = ["DIFF_TEXT_CHARS", "render_diff", "render_gate", "report_renderable"]


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def _t(value: object) -> Text:
    """Untrusted text as a Rich Text: controls shown, never markup."""
    return Text(escape.terminal(value, single_line=True))


def _label_table(title: str, metrics: ClassificationMetrics) -> Table:
    table = Table(title=title, title_justify="left")
    for column in ("label", "precision", "recall", "f1", "support"):
        table.add_column(column, justify="left" if column == "label" else "right")
    rows = [
        *metrics.per_label.items(),
        ("macro avg", metrics.macro),
        ("micro avg", metrics.micro),
        ("weighted avg", metrics.weighted),
    ]
    for name, m in rows:
        table.add_row(
            _t(name), f"{m.precision:.3f}", f"{m.recall:.3f}", f"{m.f1:.3f}", str(m.support)
        )
    return table


def _confusion_table(metrics: ClassificationMetrics, title: str = "confusion") -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("expected \\ predicted")
    for label in metrics.labels:
        table.add_column(_t(label), justify="right")
    for label, row in zip(metrics.labels, metrics.confusion, strict=True):
        table.add_row(_t(label), *(str(v) for v in row))
    return table


def _scorer_table(report: Report, binary: set[str] | None) -> Table:
    """One row per scorer, narrow enough for an 80-column terminal.

    The pass rate shares a cell with its interval, the counts share one too; ``n`` is
    left out (it is pass + fail); the gates column appears only when a scorer does not
    gate, and the error, mean value and pass^k columns appear only when they say something: a
    scorer raised, a scorer measures more than 0 / 1, k > 1. Model calls have a table of
    their own (:func:`_model_table`).
    """
    figures = scorer_figures(report, binary=binary)
    table = Table(title="per scorer", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    show_error = any(f.errored for f in figures)
    show_value = any(f.value for f in figures)
    show_pass_k = report.k > 1
    show_gates = not all(f.gating for f in figures)
    table.add_column("scorer", no_wrap=True)
    if show_gates:
        table.add_column("gates")
    table.add_column("pass rate [95% CI]", justify="right", no_wrap=True)
    table.add_column("pass/fail/abstain", justify="right", no_wrap=True)
    if show_error:
        table.add_column("error", justify="right")
    if show_value:
        table.add_column("mean [95% CI]", justify="right", no_wrap=True)
    if show_pass_k:
        table.add_column(f"pass^{report.k}", justify="right")
    for f in figures:
        cells: list[RenderableType] = [_t(f.name)]
        cells += ["yes" if f.gating else "no"] if show_gates else []
        cells += [
            f"{f.pass_rate} {f.interval}".strip(),
            Text.assemble(
                str(f.passed),
                " / ",
                (str(f.failed), "red" if f.failed else ""),
                " / ",
                (str(f.abstained), "yellow" if f.abstained else ""),
            ),
        ]
        cells += [Text(str(f.errored), style="red" if f.errored else "")] if show_error else []
        cells += [f.value] if show_value else []
        cells += [f.pass_k] if show_pass_k else []
        table.add_row(*cells)
    return table


def _model_table(report: Report) -> Table | None:
    """The model calls of each scorer that made any: calls, cache hits, tokens, cost."""
    rows = [(f.name, f.model) for f in scorer_figures(report) if f.model]
    if not rows:
        return None
    table = Table(title="model calls", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("scorer")
    table.add_column("calls, cache hits, tokens, latency, cost")
    for name, calls in rows:
        table.add_row(_t(name), calls)
    return table


def _label_sections(report: Report) -> list[RenderableType]:
    """Per-label and confusion tables of each scorer that reads categories."""
    parts: list[RenderableType] = []
    only = label_only(report)
    for name, section in report.sections.items():
        metrics = section.mapped or section.classification
        if metrics is None:
            continue
        prefix = "" if only else f"{escape.terminal(name, single_line=True)}: "
        mapped = " (mapped)" if section.mapped is not None else ""
        parts.append(_label_table(f"{prefix}per label{mapped}", metrics))
        parts.append(_confusion_table(metrics, f"{prefix}confusion"))
    if not report.sections and report.primary is not None:  # a report made before sections
        title = "per label (mapped)" if report.mapped else "per label"
        parts += [_label_table(title, report.primary), _confusion_table(report.primary)]
    return parts


def report_renderable(
    report: Report, results: Sequence[PairResult] | None = None
) -> RenderableType:
    """A rich renderable of the whole report, for the terminal.

    Args:
        report: The report.
        results: The run's pair results, when at hand: a scorer whose values are all
            0 / 1 then shows no mean value (it is its pass rate).
    """
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    head.add_row("run", _t(report.run_id or "(not stored)"))
    if report.status != "completed" or (
        report.completeness is not None and not report.completeness.complete
    ):
        done = report.completeness
        shown = f" with {done.done}/{done.expected} pairs" if done is not None else ""
        head.add_row("status", Text(f"{report.status}{shown}", style="yellow"))
    head.add_row("system", _t(report.system))
    head.add_row(
        "dataset",
        _t(
            f"{report.dataset} ({report.dataset_hash[:12]}) · "
            f"{report.n_examples} examples × k={report.k}"
        ),
    )
    for name, value in headline(report):
        head.add_row(name, _t(value))
    parts: list[RenderableType] = [head, Text("")]
    if not label_only(report) and report.sections:
        parts.append(_scorer_table(report, binary_valued(results) if results else None))
        model = _model_table(report)
        parts += [model] if model is not None else []
    parts += _label_sections(report)
    if report.cohorts:
        cohorts = Table(title="per cohort", title_justify="left")
        rate = "accuracy" if label_only(report) else "pass rate"
        for column in ("cohort", "n", rate, "95% CI", f"pass^{report.k}"):
            cohorts.add_column(column, justify="left" if column == "cohort" else "right")
        for name, c in report.cohorts.items():
            cohorts.add_row(
                _t(name),
                str(c.n),
                _pct(c.accuracy.estimate),
                Text(f"[{_pct(c.accuracy.low)}, {_pct(c.accuracy.high)}]"),
                _pct(c.pass_k),
            )
        parts.append(cohorts)
    footnote = (
        "Intervals are 95%: Wilson for accuracy, a bootstrap over examples "
        f"(seed {report.seed}) for pass^k and pass@1."
        if label_only(report)
        else "Intervals are 95%: Wilson for pass rates, a bootstrap over examples "
        f"(seed {report.seed}) for pass^k, pass@1 and mean values."
    )
    parts.append(Text(footnote, style="dim"))
    return Group(*parts)


DIFF_TEXT_CHARS = 120
"""Characters of an answer, reference or reason a flip table shows (``--json``: 500)."""


def render_diff(diff: RunDiff, console: Console, *, max_flips: int | None = 20) -> None:
    """Print a diff of two runs: the figures of every view, then each view's flips.

    Args:
        diff: The diff.
        console: Where to print.
        max_flips: Rows per flip table; None: every flip.
    """
    console.print(
        Text.assemble(
            (escape.terminal(diff.run_a, single_line=True), "bold"),
            " → ",
            (escape.terminal(diff.run_b, single_line=True), "bold"),
            f": {diff.n_common} examples in common, {len(diff.fixed)} fixed, "
            f"{len(diff.broken)} broken",
        )
    )
    if diff.only_in_a or diff.only_in_b:
        console.print(f"only in A: {len(diff.only_in_a)} · only in B: {len(diff.only_in_b)}")
    scorers = [] if _scorer_is_outcome(diff) else diff.scorers
    views: list[tuple[str, PairedDiff]] = [("outcome", diff), *((s.name, s) for s in scorers)]
    console.print(_delta_table(views))
    console.print(_flip_table(views))
    for name, view in views:
        prefix = "" if view is diff else f"{escape.terminal(name, single_line=True)}: "
        for title, flips in (
            (f"{prefix}broken (right in A, wrong in B)", view.broken),
            (f"{prefix}fixed (wrong in A, right in B)", view.fixed),
        ):
            if flips:
                _print_flips(console, title, flips, max_flips)
    console.print(
        Text(
            "A view (the outcome over the gating scorers, or one scorer) passes an example "
            "when it passed on every repetition; examples it abstained on in either run "
            "are counted apart, never as flips. Intervals: paired bootstrap over the "
            "examples decided in both runs; p: exact two-sided McNemar test of broken "
            "against fixed.",
            style="dim",
        )
    )


def _scorer_is_outcome(diff: RunDiff) -> bool:
    """Whether the runs' one scorer gates both: its view is the outcome's, not shown twice."""
    if len(diff.scorers) != 1 or diff.scorers_only_in_a or diff.scorers_only_in_b:
        return False
    only = diff.scorers[0]
    return all(spec is None or spec.gating for spec in (only.spec_a, only.spec_b))


def _delta_table(views: Sequence[tuple[str, PairedDiff]]) -> Table:
    table = Table(
        title="B − A over the examples decided in both runs (paired bootstrap 95% CI)",
        title_justify="left",
    )
    for column in ("view", "metric", "n", "A", "B", "delta", "95% CI"):
        left = column in ("view", "metric")
        table.add_column(column, justify="left" if left else "right", no_wrap=column != "view")
    for name, view in views:
        for position, d in enumerate(view.deltas):
            table.add_row(_t(name) if position == 0 else "", d.name, str(d.n), *_change(d))
        if not view.deltas:
            table.add_row(_t(name), Text("nothing decided in both runs", style="dim"))
    return table


def _change(d: MetricDelta) -> tuple[str, str, str, Text]:
    """A, B, the change and its interval: points for rates, plain numbers for mean values."""
    if d.name == "mean value":
        interval = f"[{d.low:+.3f}, {d.high:+.3f}]"
        return f"{d.a:.3f}", f"{d.b:.3f}", f"{d.delta:+.3f}", Text(interval)
    interval = f"[{100 * d.low:+.1f}, {100 * d.high:+.1f}]"
    return _pct(d.a), _pct(d.b), f"{100 * d.delta:+.1f} pts", Text(interval)


def _flip_table(views: Sequence[tuple[str, PairedDiff]]) -> Table:
    table = Table(
        title="flips per view (p: exact McNemar test of broken against fixed)",
        title_justify="left",
    )
    columns = ("view", "broken", "fixed", "both passed", "both failed", "abstained", "p")
    for column in columns:
        table.add_column(column, justify="left" if column == "view" else "right")
    for name, view in views:
        table.add_row(
            _t(name),
            Text(str(len(view.broken)), style="red" if view.broken else ""),
            Text(str(len(view.fixed)), style="green" if view.fixed else ""),
            str(view.both_passed),
            str(view.both_failed),
            Text(str(len(view.abstained)), style="yellow" if view.abstained else ""),
            f"{view.mcnemar_p:.2g}",
        )
    return table


def _print_flips(
    console: Console, title: str, flips: Sequence[Flip], max_flips: int | None
) -> None:
    table = Table(title=Text(title), title_justify="left")  # a scorer's name: never markup
    for column in ("example", "expected", "A", "B", "why"):
        table.add_column(column)
    shown = flips if max_flips is None else flips[:max_flips]
    for f in shown:
        table.add_row(
            _t(f.example_id),
            _clipped(f.expected),
            _clipped(f.answer_a),
            _clipped(f.answer_b),
            _clipped(f.reason),
        )
    console.print(table)
    if len(flips) > len(shown):
        console.print(f"… and {len(flips) - len(shown)} more (--limit 0 or --json for all)")


def _clipped(value: str | None) -> Text:
    """A flip's untrusted text, clipped for a table cell; ``-`` where there is none (no
    reference, or the call failed)."""
    if value is None:
        return Text("-", style="dim")
    return Text(escape.terminal(value, limit=DIFF_TEXT_CHARS, single_line=True))


def render_gate(result: GateResult, console: Console, floors: Mapping[str, object]) -> None:
    """Print the gate's decision with every reason."""
    for warning in result.warnings:
        console.print(Text.assemble(("warning: ", "yellow"), escape.terminal(warning)))
    if result.passed:
        checked = ", ".join(f"{k}={v}" for k, v in floors.items() if v not in (None, {}, []))
        shown = escape.terminal(checked or "no floors set")
        console.print(Text.assemble(("gate passed", "green"), f" ({shown})"))
    else:
        console.print(Text.assemble(("gate failed", "red"), f": {len(result.failures)} reason(s)"))
        for failure in result.failures:
            console.print(Text(f"  - {escape.terminal(failure)}"))
