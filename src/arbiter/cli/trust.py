"""``arbiter trust``: agents' trust status, the policy, unfreezing, and policy backtests.

The work is :mod:`arbiter.service.trust` and :mod:`arbiter.service.backtest`'s; this
module parses and prints. The terminal sees every owner's agents (as an admin key
does); an agent of an API key is shown with that key's id.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from arbiter.cli.app import app
from arbiter.cli.common import echo_json, open_store, out_console

if TYPE_CHECKING:
    from arbiter.contract.trust import TrustStatus
    from arbiter.service.backtest import BacktestReport
    from arbiter.service.trust_thresholds import ThresholdsView

__all__ = ["trust_app"]

trust_app = typer.Typer(
    name="trust",
    help="Trust per agent: status, the trust policy, unfreezing, policy backtests.",
    no_args_is_help=True,
)
app.add_typer(trust_app, name="trust")
policy_app = typer.Typer(name="policy", help="Show or check a trust policy.", no_args_is_help=True)
trust_app.add_typer(policy_app, name="policy")
thresholds_app = typer.Typer(
    name="thresholds",
    help="The default band thresholds every ingested run is scored against.",
    no_args_is_help=True,
)
trust_app.add_typer(thresholds_app, name="thresholds")


def _text(value: object, limit: int = 200) -> str:
    from arbiter import escape

    return escape.terminal(value, single_line=True, limit=limit)


def _print(lines: list[str]) -> None:
    console = out_console()
    for line in lines:
        console.print(line, markup=False, highlight=False, soft_wrap=True)


def _status_line(status: TrustStatus) -> str:
    owner = f" (key {_text(status.owner, 40)})" if status.owner else ""
    conduct = (
        "conduct n/a"
        if status.conduct is None
        else (f"conduct {status.conduct:.3f} [{status.interval[0]:.3f}, {status.interval[1]:.3f}]")
    )
    frozen = ", FROZEN" if status.frozen else ""
    return (
        f"{_text(status.agent, 80)}{owner}: {status.state}{frozen}  {conduct}  "
        f"{status.runs} runs, integrity {status.integrity}"
    )


@trust_app.command("status")
def status(
    agent: Annotated[
        str | None, typer.Argument(help="Only this agent (default: every agent).")
    ] = None,
    policy: Annotated[
        Path | None, typer.Option(help="A trust policy file (default: the one in force).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """Each agent's trust state; exit 1 when a named agent is at_risk."""
    from arbiter.errors import GateFailed, InputError
    from arbiter.service.attestation import configured_signer
    from arbiter.service.trust import trust_policy, trust_statuses
    from arbiter.trust import load_policy

    chosen = load_policy(policy) if policy is not None else trust_policy()
    key = configured_signer()
    store = open_store()
    checker = None
    if key is not None:
        from arbiter.service.trust_integrity import signature_checker

        checker = signature_checker(store, key.public_key)
    statuses = trust_statuses(store, agent=agent, policy=chosen, checker=checker)
    if agent is not None and not statuses:
        raise InputError(f"trust status: no agent named {_text(agent, 80)!r} has a stored run")
    if as_json:
        echo_json([s.model_dump(mode="json") for s in statuses])
    else:
        lines: list[str] = []
        for found in statuses:
            lines.append(_status_line(found))
            lines += [f"  {_text(reason, 300)}" for reason in found.reasons]
        _print(lines or ["no agent has a stored run"])
    at_risk = [s for s in statuses if s.state == "at_risk"]
    if agent is not None and at_risk:
        raise GateFailed(f"agent {_text(agent, 80)} is at_risk")


@policy_app.command("show")
def policy_show(
    file: Annotated[
        Path | None, typer.Argument(help="A policy file (default: the one in force).")
    ] = None,
) -> None:
    """Print a policy as TOML, every key with its value."""
    from arbiter.service.trust import trust_policy
    from arbiter.trust import load_policy, policy_toml

    typer.echo(policy_toml(load_policy(file) if file is not None else trust_policy()), nl=False)


@policy_app.command("check")
def policy_check(file: Annotated[Path, typer.Argument(help="The policy file to check.")]) -> None:
    """Check a policy file: exit 3 naming the key when it is not valid."""
    from arbiter.trust import load_policy

    load_policy(file)
    typer.echo(f"{_text(file, 300)}: a valid trust policy")


@trust_app.command("unfreeze")
def unfreeze(
    agent: Annotated[str, typer.Argument(help="The frozen agent.")],
    reason: Annotated[str, typer.Option("--reason", help="Why it may act unattended again.")],
    owner: Annotated[
        str | None, typer.Option(help="The API key id owning the agent (default: nobody).")
    ] = None,
    by: Annotated[str | None, typer.Option(help="Who lifts it (default: your login name).")] = None,
) -> None:
    """Lift an agent's freeze (recorded with who and why)."""
    from arbiter.cli.annotate import _default_annotator
    from arbiter.service.trust import unfreeze_agent

    lifted = unfreeze_agent(
        open_store(), agent, owner=owner, by=by or _default_annotator(), reason=reason
    )
    typer.echo(f"unfrozen {_text(lifted.agent, 80)} by {_text(lifted.by, 80)}")


@trust_app.command("judges")
def judges(
    agent: Annotated[str, typer.Argument(help="The agent.")],
    switch: Annotated[
        str | None,
        typer.Option("--judges", help="inherit (the default), on or off for this agent."),
    ] = None,
    sample_rate: Annotated[
        float | None,
        typer.Option(help="Share of its clean runs judged too, in [0, 1] (clamped)."),
    ] = None,
    owner: Annotated[
        str | None, typer.Option(help="The API key id owning the agent (default: nobody).")
    ] = None,
    by: Annotated[str | None, typer.Option(help="Who sets it (default: your login name).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """Show, or set, whether the judge panels run on the agent's ingested runs."""
    from arbiter.cli.annotate import _default_annotator
    from arbiter.config import Settings
    from arbiter.service.trust_judging import agent_judges, set_agent_judges

    settings = Settings()
    store = open_store()
    if switch is None and sample_rate is None:
        found = agent_judges(store, agent, owner=owner, settings=settings)
    else:
        found = set_agent_judges(
            store,
            agent,
            owner=owner,
            judges=switch or "inherit",
            sample_rate=sample_rate,
            by=by or _default_annotator(),
            settings=settings,
        )
    if as_json:
        echo_json(found.model_dump(mode="json"))
        return
    state = "on" if found.enabled else "off"
    rate = f", sample rate {found.effective_rate:g}" if found.enabled else ""
    lines = [f"{_text(found.agent, 80)}: judges {state} ({found.judges}){rate}"]
    if not found.panel:
        lines.append("  no judge panel is configured (ARBITER_TRUST_JUDGE_PANEL): none runs")
    lines += [f"  {_text(w, 300)}" for w in found.warnings]
    _print(lines)


def _line(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def _print_thresholds(view: ThresholdsView, as_json: bool) -> None:
    if as_json:
        echo_json(view.model_dump(mode="json"))
        return
    head = "default band thresholds: the shipped ones (preset balanced)"
    if view.source != "shipped":
        own = " with lines of its own" if view.source == "custom" else ""
        head = f"default band thresholds: preset {view.preset}{own}"
        head += f", set by {_text(view.set_by or '?', 80)}"
    lines = [head, f"{'metric':<26} {'healthy':>10} {'danger':>10}   shipped"]
    for m in view.metrics:
        shipped = f"{_line(m.shipped_healthy)} / {_line(m.shipped_danger)}"
        if m.off:
            lines.append(f"{m.key:<26} {'off':>10} {'off':>10}   {shipped}")
            continue
        lines.append(f"{m.key:<26} {_line(m.healthy):>10} {_line(m.danger):>10}   {shipped}")
    _print(lines)


@thresholds_app.command("show")
def thresholds_show(
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """The lines in force, metric by metric, beside the shipped ones."""
    from arbiter.service.trust_thresholds import thresholds_view

    _print_thresholds(thresholds_view(open_store()), as_json)


@thresholds_app.command("set")
def thresholds_set(
    file: Annotated[
        Path | None,
        typer.Argument(
            help='Lines of your own, JSON: {metric: {healthy, danger} | number | "off"}.'
        ),
    ] = None,
    preset: Annotated[
        str, typer.Option(help="The preset underneath: strict, balanced (shipped) or lenient.")
    ] = "balanced",
    by: Annotated[
        str | None, typer.Option(help="Who sets them (default: your login name).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """Set the default band thresholds: in force from the next ingested run."""
    from arbiter.cli.annotate import _default_annotator
    from arbiter.datasets.jsonio import parse_json, read_text
    from arbiter.errors import InputError
    from arbiter.service.trust_thresholds import set_thresholds

    document = None
    if file is not None:
        document = parse_json(read_text(file, what="thresholds file"), source=str(file))
        if not isinstance(document, dict):
            raise InputError(f"{file}: expected an object of metric thresholds")
    view = set_thresholds(
        open_store(),
        preset=preset,
        thresholds=document,
        by=by or _default_annotator(),
        where=str(file) if file is not None else "thresholds",
    )
    _print_thresholds(view, as_json)


def _since(value: str | None) -> datetime | None:
    from arbiter.errors import InputError

    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise InputError(f"--since: expected a date (YYYY-MM-DD), got {value!r}") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


@trust_app.command("backtest")
def backtest(
    policy: Annotated[Path, typer.Argument(help="The proposed trust policy file.")],
    agent: Annotated[str | None, typer.Option(help="Only this agent's runs.")] = None,
    since: Annotated[str | None, typer.Option(help="Only runs stored since this date.")] = None,
    thresholds: Annotated[
        Path | None,
        typer.Option(help="Proposed band thresholds: a JSON file {metric: {healthy, danger}}."),
    ] = None,
    gate_mode: Annotated[
        str | None, typer.Option(help="A proposed gate mode to replay the stored decisions in.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """What a proposed policy would have changed over stored history (read-only)."""
    from arbiter.datasets.jsonio import parse_json, read_text
    from arbiter.errors import InputError
    from arbiter.service.backtest import parse_thresholds, run_backtest
    from arbiter.service.trust import trust_policy
    from arbiter.trust import load_policy

    proposed = load_policy(policy)
    lines = None
    if thresholds is not None:
        document = parse_json(read_text(thresholds, what="thresholds file"), source=str(thresholds))
        if not isinstance(document, dict):
            raise InputError(f"{thresholds}: expected an object of metric thresholds")
        lines = parse_thresholds(document, where=str(thresholds))
    report = run_backtest(
        open_store(),
        proposed,
        current=trust_policy(),
        thresholds=lines,
        gate_mode=gate_mode,
        agent=agent,
        since=_since(since),
    )
    if as_json:
        echo_json(report.model_dump(mode="json"))
        return
    _print(_report_lines(report))


def _report_lines(report: BacktestReport) -> list[str]:
    lines = [
        f"{report.runs:,} stored runs replayed"
        + (" (the newest; more match)" if report.truncated else "")
    ]
    lines.append(f"runs changing band: {report.runs_changing_band:,}")
    lines += [
        f"  {e['run_id']} ({_text(e['agent'], 60)}): {e['from']} -> {e['to']}"
        for e in report.band_examples
    ]
    if report.scores_for_a_judge:
        lines.append(f"scores that would go to a judge: {report.scores_for_a_judge:,}")
    lines.append(f"agents changing state: {report.agents_changing_state} of {report.agents}")
    lines += [f"  {_text(e['agent'], 60)}: {e['from']} -> {e['to']}" for e in report.state_examples]
    lines.append(f"breaker trips: {report.trips_now} now, {report.trips_proposed} proposed")
    lines += [f"  {_text(e['agent'], 60)} at run {e['run_id']}" for e in report.trip_examples]
    if report.gate_mode is not None:
        counts = ", ".join(f"{k} {v}" for k, v in report.gate_outcomes.items()) or "none"
        lines.append(f"gate in {report.gate_mode}: {report.gate_decisions} decisions: {counts}")
    return lines
