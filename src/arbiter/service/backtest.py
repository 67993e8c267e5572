"""Policy backtests: what a proposed trust policy, band thresholds or gate mode would
have changed over stored history. Read-only, bounded in records.

Deterministic parts are recomputed exactly (bands from stored values, states and the
breaker's trips from the recomputed verdicts, the gate's action where no judge is
asked); an answer whose trigger fired under a mode that asks the judge is counted as
"would go to a judge", never as withheld or delivered. Examples are capped and carry
ids, never the runs' or answers' text.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from arbiter.contract.gate import GATE_MODES
from arbiter.contract.trust import RunEvidence
from arbiter.errors import InputError
from arbiter.store import Store
from arbiter.store.gate_repository import gate_decisions
from arbiter.store.trust_repository import backtest_rows, scorer_facts
from arbiter.trust import TrustPolicy, assess, gate_outcome, reband_run, replay_breaker
from arbiter.trust.backtest import BandLine, ScoreFact

__all__ = ["BacktestReport", "parse_thresholds", "run_backtest"]

MAX_RUNS = 100_000
MAX_EXAMPLES = 10


class BacktestReport(BaseModel):
    """What the proposal would have changed."""

    model_config = ConfigDict(extra="forbid")

    runs: int
    """Stored runs replayed (the newest, at most ``max_runs``)."""
    truncated: bool = False
    """More runs matched than were replayed."""
    runs_changing_band: int = 0
    band_examples: list[dict[str, Any]] = Field(default_factory=list)
    scores_for_a_judge: int = 0
    """Scores a model gave: not recomputed, they would go to a judge."""
    agents: int = 0
    agents_changing_state: int = 0
    state_examples: list[dict[str, Any]] = Field(default_factory=list)
    trips_now: int = 0
    """Breaker trips under the policy in force, replayed over the same runs."""
    trips_proposed: int = 0
    trip_examples: list[dict[str, Any]] = Field(default_factory=list)
    gate_decisions: int = 0
    gate_mode: str | None = None
    gate_outcomes: dict[str, int] = Field(default_factory=dict)
    """Under the proposed mode: delivered, annotated, would_go_to_judge."""
    gate_examples: list[dict[str, Any]] = Field(default_factory=list)


def parse_thresholds(
    document: Mapping[str, Any], *, where: str = "thresholds"
) -> dict[str, BandLine]:
    """Band thresholds ``{metric: {healthy, danger}}`` (a bare number: the danger line).

    Raises:
        InputError: A key whose value is not a number or such a table.
    """
    lines: dict[str, BandLine] = {}
    for key, value in document.items():
        if isinstance(value, bool):
            raise InputError(f"{where}.{key}: expected a number or {{healthy, danger}}")
        if isinstance(value, int | float):
            lines[key] = BandLine(danger=float(value))
            continue
        if not isinstance(value, Mapping) or set(value) - {"healthy", "danger"}:
            raise InputError(f"{where}.{key}: expected a number or {{healthy, danger}}")
        parts: dict[str, float | None] = {}
        for part in ("healthy", "danger"):
            given = value.get(part)
            if given is not None and (
                isinstance(given, bool) or not isinstance(given, int | float)
            ):
                raise InputError(f"{where}.{key}.{part}: expected a number, got {given!r}")
            parts[part] = None if given is None else float(given)
        lines[key] = BandLine(danger=parts["danger"], healthy=parts["healthy"])
    return lines


def run_backtest(
    store: Store,
    proposed: TrustPolicy,
    *,
    current: TrustPolicy,
    thresholds: Mapping[str, BandLine] | None = None,
    gate_mode: str | None = None,
    viewer: str | None = None,
    agent: str | None = None,
    since: datetime | None = None,
    now: datetime | None = None,
    max_runs: int = MAX_RUNS,
) -> BacktestReport:
    """Replay ``proposed`` (and band ``thresholds``, a ``gate_mode``) over stored history.

    Raises:
        InputError: An unknown gate mode, or ``max_runs`` outside [1, 100,000].
    """
    if gate_mode is not None and gate_mode not in GATE_MODES:
        raise InputError(f"gate mode {gate_mode!r}: expected one of {', '.join(GATE_MODES)}")
    if not 1 <= max_runs <= MAX_RUNS:
        raise InputError(f"max_runs must be in [1, {MAX_RUNS}], got {max_runs}")
    now = now or datetime.now(UTC)
    lines = dict(thresholds or {})
    rows, scores = backtest_rows(store, viewer=viewer, agent=agent, since=since, limit=max_runs + 1)
    truncated = len(rows) > max_runs
    rows = rows[:max_runs]
    names = {name for found in scores.values() for name, *_ in found}
    facts = scorer_facts(store, names) if lines else {n: (None, False) for n in names}
    report = BacktestReport(runs=len(rows), truncated=truncated)
    critical = set(current.trust_critical) | set(proposed.trust_critical)
    # Counted in locals: each += on the pydantic report is a validated setattr.
    for_a_judge = changing_band = 0
    before: dict[tuple[str | None, str], list[RunEvidence]] = defaultdict(list)
    after: dict[tuple[str | None, str], list[RunEvidence]] = defaultdict(list)
    for seq, run_id, name, owner, at, passed, band in rows:
        found = scores.get(seq, [])
        score_facts = [
            ScoreFact(
                n,
                p,
                b,  # type: ignore[arg-type]
                v,
                facts.get(n, (None, False))[0],
                facts.get(n, (None, False))[1],
            )
            for n, p, b, v in found
        ]
        new_band, judged = reband_run(score_facts, lines) if lines else (band, 0)
        for_a_judge += judged
        if lines and new_band != band:
            changing_band += 1
            if len(report.band_examples) < MAX_EXAMPLES:
                report.band_examples.append(
                    {"run_id": run_id, "agent": name, "from": band, "to": new_band}
                )
        new_passed = passed if not lines else (None if new_band is None else new_band != "danger")
        dims_before = tuple((n, p) for n, p, _b, _v in found if n in critical)
        dims_after = tuple((f.name, _rebanded(f, lines)) for f in score_facts if f.name in critical)
        key = (owner, name)
        before[key].append(RunEvidence(run_id, at, passed, dims_before))
        after[key].append(RunEvidence(run_id, at, new_passed, dims_after))
    report.scores_for_a_judge, report.runs_changing_band = for_a_judge, changing_band
    report.agents = len(before)
    for key in sorted(before, key=lambda k: (k[1], k[0] or "")):
        owner, name = key
        was = assess(name, before[key], current, now=now, owner=owner).state
        will = assess(name, after[key], proposed, now=now, owner=owner).state
        if was != will:
            report.agents_changing_state += 1
            if len(report.state_examples) < MAX_EXAMPLES:
                report.state_examples.append(
                    {"agent": name, "owner": owner, "from": was, "to": will}
                )
        trips_now = replay_breaker(name, before[key], current).trips
        trips_new = replay_breaker(name, after[key], proposed).trips
        report.trips_now += len(trips_now)
        report.trips_proposed += len(trips_new)
        for run_id in trips_new:
            if len(report.trip_examples) < MAX_EXAMPLES:
                report.trip_examples.append({"agent": name, "owner": owner, "run_id": run_id})
    if gate_mode is not None:
        _gate(store, report, gate_mode, viewer, since, agent)
    return report


def _rebanded(fact: ScoreFact, lines: Mapping[str, BandLine]) -> bool | None:
    if fact.judged:
        return None
    band, _ = reband_run([fact], lines)
    return None if band is None else band != "danger"


def _gate(
    store: Store,
    report: BacktestReport,
    mode: str,
    viewer: str | None,
    since: datetime | None,
    agent: str | None,
) -> None:
    decisions = gate_decisions(
        store, owner=viewer, everyone=viewer is None, limit=MAX_RUNS, agent=agent
    )
    if since is not None:
        decisions = [d for d in decisions if d.created_at >= since]
    report.gate_mode = mode
    report.gate_decisions = len(decisions)
    counts: dict[str, int] = defaultdict(int)
    for decision in decisions:
        outcome = gate_outcome(decision.needs_judge and decision.scope_declared, mode)
        counts[outcome] += 1
        if outcome == "would_go_to_judge" and len(report.gate_examples) < MAX_EXAMPLES:
            report.gate_examples.append(
                {
                    "decision_id": decision.id,
                    "action_then": decision.action,
                    "ruling_on_record": decision.judge,
                }
            )
    report.gate_outcomes = dict(sorted(counts.items()))
