"""A report as text for machines and CI pages: Markdown (a step summary) and JUnit XML.

Everything that came from a dataset or a system (labels, ids, cohorts, error messages)
is escaped for the format it lands in (:mod:`arbiter.escape`): a label cannot break a
Markdown table or inject a link, and an error message cannot make the XML invalid.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from urllib.parse import quote
from xml.etree import ElementTree as ET

from arbiter import escape
from arbiter.contract import ClassificationMetrics, Example, Interval, PairResult, Report, Score
from arbiter.harness.failures import FailingExample, Failures, find_failures
from arbiter.harness.figures import binary_valued, headline, label_only, pct, scorer_figures
from arbiter.harness.pairs import reason_of, shown_outcome

__all__ = ["failures_markdown", "report_junit", "report_markdown"]


def _ci(interval: Interval) -> str:
    return f"{pct(interval.estimate)}  [{pct(interval.low)}, {pct(interval.high)}]"


WORST_EXAMPLES = 10
"""Examples the markdown report's "worst examples" section lists."""


def _label_rows(metrics: ClassificationMetrics) -> list[str]:
    md = escape.markdown
    lines = ["| label | precision | recall | f1 | support |", "|---|---:|---:|---:|---:|"]
    for name, m in [
        *metrics.per_label.items(),
        ("macro avg", metrics.macro),
        ("micro avg", metrics.micro),
        ("weighted avg", metrics.weighted),
    ]:
        lines.append(
            f"| {md(name, limit=200)} | {m.precision:.3f} | {m.recall:.3f} | {m.f1:.3f} "
            f"| {m.support} |"
        )
    return lines


def _scorer_rows(report: Report, results: Sequence[PairResult]) -> list[str]:
    md = escape.markdown
    figures = scorer_figures(report, binary=binary_valued(results) if results else None)
    show_value = any(f.value for f in figures)
    value_head, value_rule = (" mean value [95% CI] |", "---:|") if show_value else ("", "")
    lines = [
        "",
        "### Per scorer",
        "",
        f"| scorer | gates | pass rate | 95% CI | n | fail | abstain | error |{value_head} "
        f"pass^{report.k} |",
        f"|---|---|---:|---:|---:|---:|---:|---:|{value_rule}---:|",
    ]
    for f in figures:
        value = f" {md(f.value)} |" if show_value else ""
        lines.append(
            f"| {md(f.name, limit=100)} | {'yes' if f.gating else 'no'} | {f.pass_rate} | "
            f"{md(f.interval)} | {f.n} | {f.failed} | {f.abstained} | {f.errored} |{value} "
            f"{f.pass_k} |"
        )
    return lines


_COMPLAINT_CHARS = 200
"""Characters of one scorer's complaint in the worst-examples table (before escaping)."""
_CHECKED = {True: "verified", False: "not found", None: "unchecked"}


def _complaints(example: FailingExample) -> list[str]:
    """Why each scorer did not pass, from its first such repetition, with its first quote;
    a failed call first. An abstention is named as one, never as a failure."""
    found: dict[str, str] = {}
    for rep in example.repetitions:
        if rep.error is not None:
            found.setdefault("", f"call failed (rep {rep.repetition}): {rep.error}")
        for v in rep.scores:
            if v.verdict == "pass" or v.name in found:
                continue
            shown = v.name if v.verdict == "fail" else f"{v.name} ({v.verdict})"
            shown += "" if v.gating else " (reported only)"
            why = escape.clip(v.reason or v.verdict, _COMPLAINT_CHARS)
            if v.evidence:
                quote = v.evidence[0]
                why += f" — “{escape.clip(quote.quote, 80)}” {_CHECKED[quote.verified]}"
            found[v.name] = f"{shown}: {why}"
    return list(found.values())


def failures_markdown(failures: Failures) -> str:
    """The "worst examples" section: one table row per listed example, worst first.

    Every cell is escaped with :func:`arbiter.escape.markdown` (pipes, backticks, links,
    HTML and newlines cannot change the table) and clipped.
    """
    md = escape.markdown
    lines = ["### Worst examples", ""]
    if not failures.listed_total:
        return "\n".join([*lines, "Every scorer passed every repetition of every example.", ""])
    lines += [
        f"{failures.listed_total} of {failures.examples_total} examples were not passed by "
        "every scorer on every repetition; the worst first.",
        "",
        "| example | outcome | reps not passed | what went wrong | output |",
        "|---|---|---:|---|---|",
    ]
    for example in failures.examples:
        total = len(example.repetitions) + len(example.clean_repetitions)
        why = "; ".join(_complaints(example))
        first = example.repetitions[0]
        output = first.output if first.output is not None else ""
        lines.append(
            f"| {md(example.example_id, limit=120)} | {shown_outcome(example.outcome)} | "
            f"{len(example.repetitions)}/{total} | {md(why, limit=600)} | "
            f"{md(output, limit=120)} |"
        )
    if failures.left_out:
        run = failures.run_id or "RUN"  # a run id is ours: digits, letters and dashes
        lines += ["", f"_… and {failures.left_out} more (`arbiter report {run} --failures`)._"]
    return "\n".join([*lines, ""])


def report_markdown(
    report: Report,
    examples: Sequence[Example] = (),
    results: Sequence[PairResult] = (),
    *,
    worst: int = WORST_EXAMPLES,
    server_url: str | None = None,
) -> str:
    """The report as GitHub-flavoured markdown, for a CI step summary.

    Args:
        report: The report.
        examples: The examples in scope; with ``results``, a "worst examples" section.
        results: The run's pair results.
        worst: Most examples the "worst examples" section lists.
        server_url: Where ``arbiter serve`` is reached (a checked setting); the report
            then links to the run's page and its failing examples. None: no link.
    """
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
        *_page_links(report, server_url),
        "| figure | value |",
        "|---|---|",
    ]
    lines += [f"| {md(name)} | {md(value)} |" for name, value in headline(report)]
    only = label_only(report)
    if not only and report.sections:
        lines += _scorer_rows(report, results)
    for name, section in report.sections.items():
        metrics = section.mapped or section.classification
        if metrics is not None:
            mapped = " (mapped)" if section.mapped is not None else ""
            lines += ["", *([] if only else [f"**{md(name)}**: per label{mapped}", ""])]
            lines += _label_rows(metrics)
    if not report.sections and report.primary is not None:  # a report made before sections
        lines += ["", *_label_rows(report.primary)]
    if report.cohorts:
        rate = "accuracy" if only else "pass rate"
        lines += [
            "",
            f"| cohort | n | {rate} | 95% CI | pass^{report.k} |",
            "|---|---:|---:|---:|---:|",
        ]
        for name, c in report.cohorts.items():
            lines.append(
                f"| {md(name, limit=200)} | {c.n} | {pct(c.accuracy.estimate)} | "
                f"{pct(c.accuracy.low)}–{pct(c.accuracy.high)} | {pct(c.pass_k)} |"
            )
    if examples and results:
        found = find_failures(report, examples, results, limit=worst, max_chars=300)
        lines += ["", failures_markdown(found).rstrip("\n")]
    lines += [
        "",
        f"_95% intervals: Wilson ({'accuracy' if only else 'pass rates'}), bootstrap over "
        f"examples, seed {report.seed} (pass^k, pass@1)._",
        "",
    ]
    return "\n".join(lines)


def _page_links(report: Report, server_url: str | None) -> list[str]:
    """A line linking the run's page and its failing examples, when a server is known."""
    if not server_url or not report.run_id:
        return []
    page = f"{server_url.rstrip('/')}/runs/{quote(report.run_id, safe='')}"
    return [f"[Open the run in Arbiter]({page}) · [its failures]({page}?show=failing)", ""]


def _why(score: Score) -> str:
    return reason_of(score) or "failed"


def _failure_message(
    reps: Sequence[PairResult], wrong: Sequence[PairResult], gating: Collection[str] | None
) -> tuple[str, str, str]:
    """(type, message, text) of a failed test case: the failing gating scorers and why."""
    failing: dict[str, list[tuple[int, Score]]] = {}
    for r in wrong:
        for score in r.scores:
            if score.passed is False and (gating is None or score.name in gating):
                failing.setdefault(score.name, []).append((r.repetition, score))
    # A run scored by ``label`` alone keeps the failure type it always had.
    kind = "WrongLabel" if set(failing) == {"label"} else "ScorerFailed"
    parts = []
    for name, found in failing.items():
        why = _why(found[0][1])
        parts.append(f"{name}: {why} on {len(found)}/{len(reps)} reps")
    lines = [
        f"rep {rep} {name}: {_why(score)}"
        for name, found in failing.items()
        for rep, score in found
    ]
    return kind, "; ".join(parts) or f"failed on {len(wrong)}/{len(reps)} reps", "\n".join(lines)


def report_junit(report: Report, examples: Sequence[Example], results: Sequence[PairResult]) -> str:
    """JUnit XML: one test case per example.

    An example is an *error* when a call failed (or, undecided, a gating scorer raised),
    a *failure* when a repetition failed (the message names each failing scorer and
    why), *skipped* when no gating scorer decided it, and passes otherwise. Text from the
    dataset, the system and the scorers is cleaned of what XML cannot hold, so the
    document always parses.
    """
    x = escape.xml
    gating = {s.label for s in report.scorers if s.gating} if report.scorers else None
    by_example: dict[str, list[PairResult]] = {}
    for r in results:
        by_example.setdefault(r.example_id, []).append(r)
    suite = ET.Element("testsuite", name=x(f"arbiter.{report.dataset}", limit=300))
    failures = errors = skipped = tests = 0
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
        wrong = [r for r in reps if r.passed is False and not r.error_type]
        unknown = [r for r in reps if r.passed is None and not r.error_type]
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
            kind, message, text = _failure_message(reps, wrong, gating)
            node = ET.SubElement(case, "failure", type=kind, message=x(message, limit=500))
            node.text = x(text, limit=10_000)
        elif unknown:
            scorer_errors = [
                (r.repetition, s) for r in unknown for s in r.scores if s.error is not None
            ]
            if scorer_errors:
                errors += 1
                _, score = scorer_errors[0]
                node = ET.SubElement(
                    case,
                    "error",
                    type="ScorerError",
                    message=x(f"{score.name}: {score.error}", limit=500),
                )
                node.text = x(
                    "\n".join(f"rep {r} {s.name}: {s.error}" for r, s in scorer_errors),
                    limit=10_000,
                )
            else:
                skipped += 1
                ET.SubElement(
                    case,
                    "skipped",
                    message=x(
                        f"undecided on {len(unknown)}/{len(reps)} reps: every gating scorer "
                        "abstained",
                        limit=500,
                    ),
                )
    suite.set("tests", str(tests))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", str(skipped))
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
