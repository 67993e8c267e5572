"""A report as text for machines and CI pages: Markdown (a step summary) and JUnit XML.

Everything that came from a dataset or a system (labels, ids, cohorts, error messages)
is escaped for the format it lands in (:mod:`arbiter.escape`): a label cannot break a
Markdown table or inject a link, and an error message cannot make the XML invalid.
"""

from __future__ import annotations

from collections.abc import Sequence
from xml.etree import ElementTree as ET

from arbiter import escape
from arbiter.contract import Example, Interval, PairResult, Report

__all__ = ["headline", "report_junit", "report_markdown"]


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def _ci(interval: Interval) -> str:
    return f"{_pct(interval.estimate)}  [{_pct(interval.low)}, {_pct(interval.high)}]"


def headline(report: Report) -> list[tuple[str, str]]:
    """The report's headline figures as (name, value) rows; escape them where they land."""
    if report.strict is not None:
        rows = [("accuracy (strict)", f"{_ci(report.strict.accuracy)}  n={report.strict.n}")]
        if report.mapped is not None:
            rows.append(
                ("accuracy (mapped)", f"{_ci(report.mapped.accuracy)}  n={report.mapped.n}")
            )
    else:
        rows = [("pass rate", f"{_ci(report.accuracy)}  n={report.accuracy.n}")]
    if report.undecided:
        rows.append(("undecided pairs", f"{report.undecided} (every gating scorer abstained)"))
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


def report_markdown(report: Report) -> str:
    """The report as GitHub-flavoured markdown, for a CI step summary."""
    md = escape.markdown
    status = "" if report.status == "completed" else f" · **{report.status}**"
    done = report.completeness
    if done is not None and not done.complete:
        status += f" ({done.done}/{done.expected} pairs)"
    lines = [
        f"## Arbiter report — {md(report.dataset, limit=200)}",
        "",
        f"{md(report.system, limit=300)} · {report.n_examples} examples × k={report.k} · run "
        f"{md(report.run_id or '-')}{status}",
        "",
        "| figure | value |",
        "|---|---|",
    ]
    lines += [f"| {md(name)} | {md(value)} |" for name, value in headline(report)]
    primary = report.primary
    if primary is not None:
        lines += ["", "| label | precision | recall | f1 | support |", "|---|---:|---:|---:|---:|"]
        for name, m in [
            *primary.per_label.items(),
            ("macro avg", primary.macro),
            ("micro avg", primary.micro),
            ("weighted avg", primary.weighted),
        ]:
            lines.append(
                f"| {md(name, limit=200)} | {m.precision:.3f} | {m.recall:.3f} | {m.f1:.3f} "
                f"| {m.support} |"
            )
    if report.cohorts:
        lines += [
            "",
            f"| cohort | n | accuracy | 95% CI | pass^{report.k} |",
            "|---|---:|---:|---:|---:|",
        ]
        for name, c in report.cohorts.items():
            lines.append(
                f"| {md(name, limit=200)} | {c.n} | {_pct(c.accuracy.estimate)} | "
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
    """JUnit XML: one test case per example, failed unless right on every repetition.

    Text from the dataset and the system is cleaned of what XML cannot hold, so the
    document always parses.
    """
    x = escape.xml
    by_example: dict[str, list[PairResult]] = {}
    for r in results:
        by_example.setdefault(r.example_id, []).append(r)
    suite = ET.Element("testsuite", name=x(f"arbiter.{report.dataset}", limit=300))
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
            classname=x(example.cohort or report.dataset, limit=300),
            name=x(example.id, limit=300),
            time=f"{seconds:.3f}",
        )
        crashed = [r for r in reps if r.error_type]
        wrong = [r for r in reps if not r.correct and not r.error_type]
        if crashed:
            errors += 1
            first = crashed[0]
            node = ET.SubElement(
                case,
                "error",
                type=x(first.error_type or "error"),
                message=x(first.error_message or "", limit=500),
            )
            node.text = x("\n".join(f"rep {r.repetition}: {r.error_message}" for r in crashed))
        elif wrong:
            failures += 1
            node = ET.SubElement(
                case,
                "failure",
                type="WrongLabel",
                message=x(
                    f"expected {example.expected_label!r}, got "
                    f"{wrong[0].label!r} on {len(wrong)}/{len(reps)} reps",
                    limit=500,
                ),
            )
            node.text = x("\n".join(f"rep {r.repetition}: {r.label!r}" for r in wrong))
    suite.set("tests", str(tests))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("time", f"{total_ms / 1000:.3f}")
    properties = ET.Element("properties")
    for name, value in (
        ("run_id", report.run_id or ""),
        ("status", report.status),
        ("accuracy", f"{report.accuracy.estimate:.6f}"),
        (f"pass^{report.k}", f"{report.pass_hat_k.estimate:.6f}"),
    ):
        ET.SubElement(properties, "property", name=name, value=value)
    suite.insert(0, properties)
    ET.indent(suite)
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"
