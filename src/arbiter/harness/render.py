"""Render a report for people (text, markdown) and for machines (JSON, JUnit XML)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from xml.etree import ElementTree as ET

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from arbiter.contract import ClassificationMetrics, Example, Interval, Report
from arbiter.harness.diff import RunDiff
from arbiter.harness.gate import GateResult
from arbiter.store.repository import PairResult

__all__ = ["render_diff", "render_gate", "report_junit", "report_markdown", "report_renderable"]


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def _ci(interval: Interval) -> str:
    return f"{_pct(interval.estimate)}  [{_pct(interval.low)}, {_pct(interval.high)}]"


def _headline(report: Report) -> list[tuple[str, str]]:
    rows = [("accuracy (strict)", f"{_ci(report.strict.accuracy)}  n={report.strict.n}")]
    if report.mapped is not None:
        rows.append(("accuracy (mapped)", f"{_ci(report.mapped.accuracy)}  n={report.mapped.n}"))
    rows += [
        (f"pass^{report.k}", f"{_ci(report.pass_hat_k)}  over {report.pass_hat_k.n} examples"),
        ("mean pass@1", f"{_ci(report.pass_at_1)}"),
        (
            "errors",
            f"{_pct(report.error_rate)}"
            + (
                "  " + ", ".join(f"{k}={v}" for k, v in report.errors_by_type.items())
                if report.errors_by_type
                else ""
            ),
        ),
    ]
    if report.latency is not None:
        lat = report.latency
        rows.append(
            (
                "latency",
                f"p50 {lat.p50_ms:.1f} ms · p95 {lat.p95_ms:.1f} ms · p99 {lat.p99_ms:.1f} ms",
            )
        )
    if report.examples_per_second is not None:
        rows.append(("throughput", f"{report.examples_per_second:,.1f} pairs/s"))
    return rows


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
        table.add_row(name, f"{m.precision:.3f}", f"{m.recall:.3f}", f"{m.f1:.3f}", str(m.support))
    return table


def _confusion_table(metrics: ClassificationMetrics) -> Table:
    table = Table(title="confusion", title_justify="left")
    table.add_column("expected \\ predicted")
    for label in metrics.labels:
        table.add_column(label, justify="right")
    for label, row in zip(metrics.labels, metrics.confusion, strict=True):
        table.add_row(label, *(str(v) for v in row))
    return table


def report_renderable(report: Report) -> RenderableType:
    """A rich renderable of the whole report, for the terminal."""
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    head.add_row("run", report.run_id or "(not stored)")
    head.add_row("system", report.system)
    head.add_row(
        "dataset",
        f"{report.dataset} ({report.dataset_hash[:12]}) · "
        f"{report.n_examples} examples × k={report.k}",
    )
    for name, value in _headline(report):
        head.add_row(name, value)
    parts: list[RenderableType] = [head, Text("")]
    primary = report.primary
    parts.append(_label_table("per label (mapped)" if report.mapped else "per label", primary))
    parts.append(_confusion_table(primary))
    if report.cohorts:
        cohorts = Table(title="per cohort", title_justify="left")
        for column in ("cohort", "n", "accuracy", "95% CI", f"pass^{report.k}"):
            cohorts.add_column(column, justify="left" if column == "cohort" else "right")
        for name, c in report.cohorts.items():
            cohorts.add_row(
                name,
                str(c.n),
                _pct(c.accuracy.estimate),
                f"[{_pct(c.accuracy.low)}, {_pct(c.accuracy.high)}]",
                _pct(c.pass_k),
            )
        parts.append(cohorts)
    parts.append(
        Text(
            "Intervals are 95%: Wilson for accuracy, a bootstrap over examples "
            f"(seed {report.seed}) for pass^k and pass@1.",
            style="dim",
        )
    )
    return Group(*parts)


def report_markdown(report: Report) -> str:
    """The report as GitHub-flavoured markdown, for a CI step summary."""
    lines = [
        f"## Arbiter report — {report.dataset}",
        "",
        f"`{report.system}` · {report.n_examples} examples × k={report.k} · run "
        f"`{report.run_id or '-'}`",
        "",
        "| figure | value |",
        "|---|---|",
    ]
    lines += [f"| {name} | {value} |" for name, value in _headline(report)]
    primary = report.primary
    lines += ["", "| label | precision | recall | f1 | support |", "|---|---:|---:|---:|---:|"]
    for name, m in [
        *primary.per_label.items(),
        ("macro avg", primary.macro),
        ("micro avg", primary.micro),
        ("weighted avg", primary.weighted),
    ]:
        lines.append(f"| {name} | {m.precision:.3f} | {m.recall:.3f} | {m.f1:.3f} | {m.support} |")
    if report.cohorts:
        lines += [
            "",
            f"| cohort | n | accuracy | 95% CI | pass^{report.k} |",
            "|---|---:|---:|---:|---:|",
        ]
        for name, c in report.cohorts.items():
            lines.append(
                f"| {name} | {c.n} | {_pct(c.accuracy.estimate)} | "
                f"{_pct(c.accuracy.low)}–{_pct(c.accuracy.high)} | {_pct(c.pass_k)} |"
            )
    lines += [
        "",
        f"_95% intervals: Wilson (accuracy), bootstrap over examples, seed "
        f"{report.seed} (pass^k, pass@1)._",
        "",
    ]
    return "\n".join(lines)


def report_junit(report: Report, examples: Sequence[Example], results: Sequence[PairResult]) -> str:
    """JUnit XML: one test case per example, failed unless right on every repetition."""
    by_example: dict[str, list[PairResult]] = {}
    for r in results:
        by_example.setdefault(r.example_id, []).append(r)
    suite = ET.Element("testsuite", name=f"arbiter.{report.dataset}")
    failures = errors = tests = 0
    total_ms = 0.0
    for example in examples:
        reps = sorted(by_example.get(example.id, []), key=lambda r: r.repetition)
        if not reps:
            continue
        tests += 1
        seconds = sum(r.latency_ms for r in reps) / 1000
        total_ms += seconds * 1000
        case = ET.SubElement(
            suite,
            "testcase",
            classname=example.cohort or report.dataset,
            name=example.id,
            time=f"{seconds:.3f}",
        )
        crashed = [r for r in reps if r.error_type]
        wrong = [r for r in reps if not r.correct and not r.error_type]
        if crashed:
            errors += 1
            first = crashed[0]
            node = ET.SubElement(
                case, "error", type=first.error_type or "error", message=first.error_message or ""
            )
            node.text = "\n".join(f"rep {r.repetition}: {r.error_message}" for r in crashed)
        elif wrong:
            failures += 1
            node = ET.SubElement(
                case,
                "failure",
                type="WrongLabel",
                message=f"expected {example.expected_label!r}, got "
                f"{wrong[0].label!r} on {len(wrong)}/{len(reps)} reps",
            )
            node.text = "\n".join(f"rep {r.repetition}: {r.label!r}" for r in wrong)
    suite.set("tests", str(tests))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("time", f"{total_ms / 1000:.3f}")
    properties = ET.Element("properties")
    for name, value in (
        ("run_id", report.run_id or ""),
        ("accuracy", f"{report.primary.accuracy.estimate:.6f}"),
        (f"pass^{report.k}", f"{report.pass_hat_k.estimate:.6f}"),
    ):
        ET.SubElement(properties, "property", name=name, value=value)
    suite.insert(0, properties)
    ET.indent(suite)
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"


def render_diff(diff: RunDiff, console: Console, *, max_flips: int = 20) -> None:
    """Print a diff of two runs."""
    console.print(
        f"[bold]{diff.run_a}[/] → [bold]{diff.run_b}[/]: {diff.n_common} examples "
        f"in common, {len(diff.fixed)} fixed, {len(diff.broken)} broken"
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
            f"[{100 * d.low:+.1f}, {100 * d.high:+.1f}]",
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
            flip_table.add_row(f.example_id, f.expected, str(f.label_a), str(f.label_b))
        console.print(flip_table)
        if len(flips) > max_flips:
            console.print(f"… and {len(flips) - max_flips} more (use --json for all)")


def render_gate(result: GateResult, console: Console, floors: Mapping[str, object]) -> None:
    """Print the gate's decision with every reason."""
    for warning in result.warnings:
        console.print(f"[yellow]warning:[/] {warning}")
    if result.passed:
        checked = ", ".join(f"{k}={v}" for k, v in floors.items() if v not in (None, {}, []))
        console.print(f"[green]gate passed[/] ({checked or 'no floors set'})")
    else:
        console.print(f"[red]gate failed[/]: {len(result.failures)} reason(s)")
        for failure in result.failures:
            console.print(f"  - {failure}")
