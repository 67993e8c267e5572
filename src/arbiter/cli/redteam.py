"""``arbiter redteam``: measure the safety detectors, and red-team a live agent.

``arbiter redteam selftest`` runs a corpus (the shipped one by default, ``--heldout``
the held-out one, ``--corpus PATH`` a file or folder of your own) through the
detectors and prints each attack category's recall and the benign false-positive rate
with their 95% Wilson intervals, then every miss. Exit code 0 when the targets hold
(recall at least 0.90 in every category, false-positive rate at most 0.05), 1 when
they do not, 3 when the corpus cannot be read.

``arbiter redteam run --agent CONFIG`` drives the adversarial cases built from the
shipped corpus through a live agent (``python:MODULE:FN`` or an HTTP agent file) k
times each, capped in calls, tokens and cost, and prints pass^k per category with its
Wilson interval and every breached or failed run; each breach is recorded in the
assurance inbox. Exit code 0 when every guard held on every planned run, 1 when one
broke, a run failed or a cap stopped the red-team early, 3 for bad input. The work is
:mod:`arbiter.service.redteam_live`'s.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from arbiter.cli.app import app
from arbiter.cli.common import echo_json

if TYPE_CHECKING:
    from arbiter.contract.redteam import LiveRedTeamReport, LiveRun
    from arbiter.contract.safety import SafetyFinding, SelfTestReport

__all__ = ["redteam_app"]

redteam_app = typer.Typer(
    name="redteam",
    help="Red-team the safety detectors (selftest) and a live agent (run).",
    no_args_is_help=True,
)
app.add_typer(redteam_app, name="redteam")

_SHOWN_FINDINGS = 3
_SHOWN_MISSES = 20


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


@redteam_app.command("run")
def run_command(
    agent: Annotated[
        str,
        typer.Option(
            "--agent",
            help="The agent: python:MODULE:FN, http:agent.toml (or a bare .toml file).",
        ),
    ],
    k: Annotated[int, typer.Option("--k", "-k", min=1, max=20, help="Runs per case.")] = 3,
    per_category: Annotated[
        int, typer.Option(min=1, max=50, help="Cases per attack category.")
    ] = 4,
    max_calls: Annotated[
        int | None, typer.Option(min=1, help="Stop after this many agent calls.")
    ] = None,
    max_tokens: Annotated[
        int | None, typer.Option(min=1, help="Stop once the runs reported this many tokens.")
    ] = None,
    max_cost: Annotated[
        float | None,
        typer.Option(min=0.0, help="Stop once the runs reported this much cost (USD)."),
    ] = None,
    timeout: Annotated[
        float | None, typer.Option(min=0.001, help="Seconds one run may take.")
    ] = None,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            help="Database URL whose assurance inbox records the failures "
            "(default: ARBITER_DB_URL, else the default SQLite file).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Red-team a live agent: pass^k per attack category; exit 1 when a guard broke."""
    import asyncio

    from arbiter.cli.common import open_store, progress_bar
    from arbiter.errors import InputError
    from arbiter.service.redteam_live import run_live_redteam
    from arbiter.store import Store

    if max_cost is not None and max_cost <= 0:
        raise InputError("--max-cost must be a positive amount (USD)")
    opened = Store(store) if store is not None else open_store()
    try:
        with progress_bar("red-team", enabled=not quiet) as progress:
            report = asyncio.run(
                run_live_redteam(
                    agent,
                    k=k,
                    per_category=per_category,
                    max_calls=max_calls,
                    max_tokens=max_tokens,
                    max_cost_usd=max_cost,
                    run_timeout=timeout,
                    store=opened,
                    progress=progress,
                )
            )
        where = opened.describe()
    finally:
        opened.close()
    if as_json:
        echo_json(report.model_dump(mode="json"))
    else:
        for line in render_live_report(report, where=where):
            typer.echo(line)
    raise typer.Exit(0 if report.passed else 1)


def _breaches(run: LiveRun) -> str:
    from arbiter import escape

    if run.status == "error":
        return "failed: " + escape.terminal(run.error or "", single_line=True, limit=200)
    return "; ".join(
        f"{breach.check} ({escape.terminal(breach.detail, single_line=True, limit=160)}"
        + (
            f" at {escape.terminal(breach.where, single_line=True, limit=60)}"
            if breach.where
            else ""
        )
        + ")"
        for breach in run.breaches
    )


def render_live_report(report: LiveRedTeamReport, *, where: str | None = None) -> list[str]:
    """The live red-team's report as the terminal shows it: pass^k per category, what
    was spent, the misses (at most 20 listed). Every text from the agent is escaped."""
    from arbiter import escape

    spent = report.spent
    lines = [
        f"live red-team: {escape.terminal(report.agent, single_line=True, limit=200)}, "
        f"{report.n_cases} cases x k={report.k} (suite sha256 {report.suite_sha256[:12]})",
        f"{'category':<14}{'cases':>6}{'complete':>10}{'held':>6}{'pass^k':>8}  95% interval",
    ]
    for row in report.categories:
        if row.pass_k is None:
            figure = f"{'n/a':>8}  no complete case"
        else:
            rate = row.pass_k
            figure = f"{rate.estimate:>8.3f}  {_interval(rate.low, rate.high)}"
        lines.append(f"{row.category:<14}{row.cases:>6}{row.complete:>10}{row.held:>6}{figure}")
    made = sum(row.runs for row in report.categories)
    cost = f"${spent.cost_usd:.4f}" + (
        f" (+{spent.cost_unknown} runs of unknown cost)" if spent.cost_unknown else ""
    )
    lines.append(
        f"runs: {made} of {report.runs_planned} made; {spent.calls} agent calls, "
        f"{spent.tokens} tokens, {cost}"
    )
    if report.stopped:
        lines.append(f"stopped early: {report.stopped}")
    lines.append("guards held on every run" if report.passed else "guards did not hold")
    if not report.misses:
        lines.append("misses: none")
    else:
        lines.append(f"misses: {len(report.misses)}")
        for run in report.misses[:_SHOWN_MISSES]:
            lines.append(
                f"  {escape.terminal(run.case_id, single_line=True, limit=80)} "
                f"run {run.repetition + 1}: {_breaches(run)}"
            )
        if len(report.misses) > _SHOWN_MISSES:
            lines.append(f"  and {len(report.misses) - _SHOWN_MISSES} more (--json lists all)")
    events = [run.event_id for run in report.misses if run.event_id is not None]
    if events:
        place = f" of {escape.terminal(where, single_line=True)}" if where else ""
        lines.append(
            f"inbox: {len(events)} redteam_failure events{place} "
            f"(red-team run {report.run_id}); arbiter inbox lists them"
        )
    return lines
