"""``arbiter redteam``: measure the safety detectors on red-team corpora.

``arbiter redteam selftest`` runs a corpus (the shipped one by default, ``--heldout``
the held-out one, ``--corpus PATH`` a file or folder of your own) through the
detectors and prints each attack category's recall and the benign false-positive rate
with their 95% Wilson intervals, then every miss. Exit code 0 when the targets hold
(recall at least 0.90 in every category, false-positive rate at most 0.05), 1 when
they do not, 3 when the corpus cannot be read.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from arbiter.cli.app import app
from arbiter.cli.common import echo_json

if TYPE_CHECKING:
    from arbiter.contract.safety import SafetyFinding, SelfTestReport

__all__ = ["redteam_app"]

redteam_app = typer.Typer(
    name="redteam",
    help="Red-team the safety detectors: recall per attack category, benign false positives.",
    no_args_is_help=True,
)
app.add_typer(redteam_app, name="redteam")

_SHOWN_FINDINGS = 3


@redteam_app.command("selftest")
def selftest_command(
    corpus: Annotated[
        Path | None,
        typer.Option(
            "--corpus",
            help="A .jsonl corpus, or a folder of them (default: the shipped corpus).",
        ),
    ] = None,
    heldout: Annotated[
        bool,
        typer.Option("--heldout", help="Run the held-out corpus instead of the shipped one."),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Run a red-team corpus through the detectors; exit 1 when a target is missed."""
    from arbiter.errors import InputError
    from arbiter.safety.selftest import selftest

    if heldout and corpus is not None:
        raise InputError("--corpus and --heldout name two corpora; give one of them")
    report = selftest(corpus, heldout=heldout)
    if as_json:
        echo_json(report.model_dump(mode="json"))
    else:
        for line in render_report(report):
            typer.echo(line)
    raise typer.Exit(0 if report.passed else 1)


def _interval(low: float, high: float) -> str:
    return f"[{low:.3f}, {high:.3f}]"


def _finding(finding: SafetyFinding) -> str:
    from arbiter import escape

    where = f" at {finding.where}" if finding.where else ""
    preview = escape.terminal(finding.preview, single_line=True)
    return f"{finding.detector}/{finding.category} ({finding.severity}){where}: {preview}"


def render_report(report: SelfTestReport) -> list[str]:
    """The report as the terminal shows it: one line per category, then the misses.

    Every text that came from the corpus (ids, previews, notes) is escaped.
    """
    from arbiter import escape

    def inert(text: object) -> str:
        return escape.terminal(text, single_line=True, limit=200)

    lines = [
        f"red-team self-test: {inert(report.corpus)} corpus, {report.n_cases} cases "
        f"(sha256 {report.corpus_sha256[:12]})",
        f"{'category':<14}{'cases':>6}{'found':>7}{'recall':>8}  {'95% interval':<16} target",
    ]
    for row in report.categories:
        mark = "ok" if row.passed else "MISSED"
        lines.append(
            f"{row.category:<14}{row.n:>6}{row.detected:>7}{row.recall.estimate:>8.3f}  "
            f"{_interval(row.recall.low, row.recall.high):<16} >= {row.target:.2f} {mark}"
        )
    rate = report.false_positive_rate
    mark = "ok" if rate.estimate <= report.max_false_positive_rate else "MISSED"
    lines.append(
        f"{'benign':<14}{report.benign_n:>6}{report.benign_flagged:>7}{rate.estimate:>8.3f}  "
        f"{_interval(rate.low, rate.high):<16} <= {report.max_false_positive_rate:.2f} {mark}"
        "  (false-positive rate)"
    )
    lines.append("targets hold" if report.passed else "targets missed")
    if not report.misses:
        lines.append("misses: none")
        return lines
    lines.append(f"misses: {len(report.misses)}")
    for miss in report.misses:
        if miss.kind == "missed" and miss.expected is not None:
            wanted = miss.expected.detector + (
                f"/{miss.expected.category}" if miss.expected.category else ""
            )
            head = f"  missed {inert(miss.id)} ({miss.category}): expected {wanted}"
        else:
            head = f"  false positive {inert(miss.id)}"
        if miss.note:
            head += f" - {inert(miss.note)}"
        lines.append(head)
        shown = miss.found[:_SHOWN_FINDINGS]
        lines.extend(f"    found {_finding(finding)}" for finding in shown)
        if not miss.found:
            lines.append("    found nothing")
        elif len(miss.found) > len(shown):
            lines.append(f"    and {len(miss.found) - len(shown)} more findings")
    return lines
