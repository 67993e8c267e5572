"""How a run's report, diff and gate print in the terminal (Rich).

Labels, ids, cohorts and messages come from datasets and systems under test: they are
made inert with :func:`arbiter.escape.terminal` and never parsed as Rich markup.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from arbiter import escape
from arbiter.contract import ClassificationMetrics, PairResult, Report
from arbiter.harness.diff import RunDiff
from arbiter.harness.figures import binary_valued, headline, label_only, scorer_figures
from arbiter.harness.gate import GateResult

__all__ = ["render_diff", "render_gate", "report_renderable"]


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
    figures = scorer_figures(report, binary=binary)
    table = Table(title="per scorer", title_justify="left")
    columns = ["scorer", "gates", "pass rate", "95% CI", "n", "pass", "fail", "abstain", "error"]
    show_value = any(f.value for f in figures)
    show_model = any(f.model for f in figures)
    columns += [*(["mean value  [95% CI]"] if show_value else []), f"pass^{report.k}"]
    columns += ["model calls"] if show_model else []
    for column in columns:
        table.add_column(column, justify="left" if column in ("scorer", "gates") else "right")
    for f in figures:
        cells: list[RenderableType] = [
            _t(f.name),
            "yes" if f.gating else "no",
            f.pass_rate,
            f.interval,
            str(f.n),
            str(f.passed),
            Text(str(f.failed), style="red" if f.failed else ""),
            Text(str(f.abstained), style="yellow" if f.abstained else ""),
            Text(str(f.errored), style="red" if f.errored else ""),
        ]
        cells += [f.value] if show_value else []
        cells.append(f.pass_k)
        cells += [f.model] if show_model else []
        table.add_row(*cells)
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


def render_diff(diff: RunDiff, console: Console, *, max_flips: int = 20) -> None:
    """Print a diff of two runs."""
    console.print(
        Text.assemble(
            (escape.terminal(diff.run_a), "bold"),
            " → ",
            (escape.terminal(diff.run_b), "bold"),
            f": {diff.n_common} examples in common, {len(diff.fixed)} fixed, "
            f"{len(diff.broken)} broken",
        )
    )
    if diff.only_in_a or diff.only_in_b:
        console.print(f"only in A: {len(diff.only_in_a)} · only in B: {len(diff.only_in_b)}")
    table = Table(title="metric deltas (B − A, paired bootstrap 95% CI)", title_justify="left")
    for column in ("metric", "A", "B", "delta", "95% CI"):
        table.add_column(column, justify="left" if column == "metric" else "right")
    for d in diff.deltas:
        table.add_row(
            d.name,
            _pct(d.a),
            _pct(d.b),
            f"{100 * d.delta:+.1f} pts",
            Text(f"[{100 * d.low:+.1f}, {100 * d.high:+.1f}]"),
        )
    console.print(table)
    for title, flips in (
        ("broken (right in A, wrong in B)", diff.broken),
        ("fixed (wrong in A, right in B)", diff.fixed),
    ):
        if not flips:
            continue
        flip_table = Table(title=title, title_justify="left")
        for column in ("example", "expected", "A", "B"):
            flip_table.add_column(column)
        for f in flips[:max_flips]:
            flip_table.add_row(_t(f.example_id), _t(f.expected), _t(f.label_a), _t(f.label_b))
        console.print(flip_table)
        if len(flips) > max_flips:
            console.print(f"… and {len(flips) - max_flips} more (use --json for all)")


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
