"""What the agent pages show, computed from scored agent runs: pure functions, no I/O.

An :class:`AgentRecord` is one scored run of an agent (a trajectory or a flow run, its
scores and verdict). From a list of them come the roster (:func:`roster`: one card per
agent and per flow, worst health first), an agent's per-dimension bars
(:func:`dimension_bars`) and its runs ledger (:func:`ledger`).

Health is the reference's one banded scale for rolled-up figures (a pass rate):
``healthy`` at 0.80 and above, ``review`` at 0.50 and above, ``danger`` below, and
``inactive`` when nothing was decided: a card with no verdict says "not evaluated", it
never shows a number. A single score stays pass / review / fail / abstain / error
(:func:`chip_state`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from arbiter.contract import FlowRun, Score, Trajectory
from arbiter.stats import wilson_interval

__all__ = [
    "HEALTHY_AT",
    "REVIEW_AT",
    "SPARK_RUNS",
    "AgentRecord",
    "ChipState",
    "DimensionBar",
    "Health",
    "LedgerRow",
    "RosterCard",
    "chip_state",
    "dimension_bars",
    "health_of",
    "ledger",
    "roster",
    "run_health",
    "sort_bars",
    "worst_first",
]

HEALTHY_AT = 0.80
"""Pass rate at or above which an agent is healthy."""
REVIEW_AT = 0.50
"""Pass rate at or above which an agent is in review (below: danger)."""
SPARK_RUNS = 30
"""Newest decided runs a roster card's sparkline shows."""

Health = Literal["healthy", "review", "danger", "inactive"]
"""Rolled-up health: the three bands, or ``inactive`` when nothing was decided."""
ChipState = Literal["pass", "review", "fail", "abstain", "error"]
"""One score as a chip: passed, passed but in review, failed, abstained, raised."""

_WORST_FIRST: dict[Health, int] = {"danger": 0, "review": 1, "healthy": 2, "inactive": 3}


@dataclass(frozen=True)
class AgentRecord:
    """One scored run of an agent, as the pages read it."""

    id: str
    """The record's id: what ``/trajectories/{id}`` opens."""
    agent: str
    """The agent's (or flow's) name."""
    kind: Literal["agent", "flow"]
    """A turn agent (a trajectory) or a flow (a flow run)."""
    run: Trajectory | FlowRun
    """What it did."""
    scores: tuple[Score, ...]
    """What each scorer said of it."""
    passed: bool | None
    """Its verdict; None when nothing decided it."""
    at: datetime
    """When it was scored (or ran), timezone-aware."""
    agent_class: str | None = None
    """The agent's class, when known."""
    source: str | None = None
    """Where it came from, in words (``run 2026...``, ``otlp_json``)."""
    case_id: str | None = None
    """The case it is a run of, when it ran from a case file."""
    cost_usd: float | None = None
    """Its cost, when known."""
    duration_ms: float | None = None
    """Its wall-clock duration, when known."""
    health: Health | None = None
    """Its band as stored with it (a stored trajectory's); None: read off its scores."""
    live: bool = False
    """A stored trajectory (submitted, imported, ingested), not a run of a case file."""


def health_of(passed: int, decided: int) -> Health:
    """The band of a pass rate, ``inactive`` with nothing decided.

    Examples:
        >>> health_of(8, 10), health_of(5, 10), health_of(4, 10), health_of(0, 0)
        ('healthy', 'review', 'danger', 'inactive')
    """
    if decided == 0:
        return "inactive"
    rate = passed / decided
    return "healthy" if rate >= HEALTHY_AT else "review" if rate >= REVIEW_AT else "danger"


def chip_state(score: Score) -> ChipState:
    """A score as a verdict chip: its pass / fail, refined by its band."""
    if score.error is not None:
        return "error"
    if score.passed is None:
        return "abstain"
    if not score.passed:
        return "fail"
    return "review" if score.band == "review" else "pass"


def run_health(record: AgentRecord) -> Health:
    """One run's band: danger when it failed, review when it passed with a score in
    review, healthy when it passed clean, inactive when nothing decided it."""
    if record.health is not None:
        return record.health
    if record.passed is None:
        return "inactive"
    if not record.passed:
        return "danger"
    return "review" if any(chip_state(s) == "review" for s in record.scores) else "healthy"


@dataclass(frozen=True)
class RosterCard:
    """One agent (or flow) on the roster."""

    name: str
    kind: Literal["agent", "flow"]
    agent_class: str | None
    runs: int
    """Runs scored."""
    decided: int
    """Runs with a verdict (the n of the pass rate)."""
    passed: int
    health: Health
    pass_rate: float | None
    """None when nothing was decided: shown as "not evaluated", never as a number."""
    low: float | None
    """Lower end of the pass rate's 95% Wilson interval."""
    high: float | None
    spark: tuple[bool, ...]
    """The newest decided runs' outcomes, oldest first (at most :data:`SPARK_RUNS`)."""
    trend: float | None
    """Pass rate of the newer half of the decided runs minus the older half's; None
    below four decided runs."""
    last_seen: datetime | None
    failing: tuple[str, ...] = ()
    """Scorers that failed most often, most often first (at most three)."""
    live: bool = False
    """Figures of stored trajectories (the REST roster's); False: of offline agent runs."""
    offline_runs: int = 0
    """Offline agent runs of the same agent, when the figures are the live ones."""


def roster(records: Iterable[AgentRecord]) -> list[RosterCard]:
    """One card per (agent, kind), worst health first, then lowest pass rate, then name."""
    groups: dict[tuple[str, str], list[AgentRecord]] = {}
    for record in records:
        groups.setdefault((record.agent, record.kind), []).append(record)
    return worst_first([_card(runs) for runs in groups.values()])


def worst_first(cards: Iterable[RosterCard]) -> list[RosterCard]:
    """Cards by health (danger, review, healthy, inactive), then pass rate, then name."""
    return sorted(
        cards,
        key=lambda c: (
            _WORST_FIRST[c.health],
            c.pass_rate if c.pass_rate is not None else 2.0,
            c.name,
            c.kind,
        ),
    )


def _card(runs: list[AgentRecord]) -> RosterCard:
    runs = sorted(runs, key=_when)
    first = runs[-1]
    outcomes = [r.passed for r in runs if r.passed is not None]
    passed = sum(outcomes)
    decided = len(outcomes)
    low = high = rate = None
    if decided:
        rate = passed / decided
        low, high = wilson_interval(passed, decided)
    trend = None
    if decided >= 4:
        half = decided // 2
        older, newer = outcomes[: decided - half], outcomes[decided - half :]
        trend = sum(newer) / len(newer) - sum(older) / len(older)
    failures: dict[str, int] = {}
    for run in runs:
        for score in run.scores:
            if chip_state(score) == "fail":
                failures[score.name] = failures.get(score.name, 0) + 1
    failing = tuple(sorted(failures, key=lambda n: (-failures[n], n))[:3])
    classes = {r.agent_class for r in runs if r.agent_class}
    return RosterCard(
        name=first.agent,
        kind=first.kind,
        agent_class=classes.pop() if len(classes) == 1 else None,
        runs=len(runs),
        decided=decided,
        passed=passed,
        health=health_of(passed, decided),
        pass_rate=rate,
        low=low,
        high=high,
        spark=tuple(outcomes[-SPARK_RUNS:]),
        trend=trend,
        last_seen=first.at,
        failing=failing,
    )


def _when(record: AgentRecord) -> datetime:
    at = record.at
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


@dataclass(frozen=True)
class DimensionBar:
    """One dimension's pass rate over an agent's runs, with its interval."""

    dimension: str
    scorers: tuple[str, ...]
    """The scorers measuring it."""
    decided: int
    passed: int
    abstained: int
    """Scores that abstained or errored (left out of the rate)."""
    reviewed: int
    """Passing scores in the review band."""
    health: Health
    rate: float | None
    low: float | None
    high: float | None


def dimension_bars(
    records: Iterable[AgentRecord], dimension_of: Callable[[str], str | None]
) -> list[DimensionBar]:
    """Per dimension, the pass rate of its scores over ``records``, worst first.

    Args:
        records: The agent's runs.
        dimension_of: The dimension a scorer (by name) measures; None: its own name.
    """
    tallies: dict[str, dict[str, int]] = {}
    scorers: dict[str, set[str]] = {}
    for record in records:
        for score in record.scores:
            dimension = dimension_of(score.name) or score.name
            tally = tallies.setdefault(dimension, dict.fromkeys(_CHIPS, 0))
            tally[chip_state(score)] += 1
            scorers.setdefault(dimension, set()).add(score.name)
    bars = []
    for dimension, tally in tallies.items():
        passed = tally["pass"] + tally["review"]
        decided = passed + tally["fail"]
        low, high = wilson_interval(passed, decided) if decided else (None, None)
        bars.append(
            DimensionBar(
                dimension=dimension,
                scorers=tuple(sorted(scorers[dimension])),
                decided=decided,
                passed=passed,
                abstained=tally["abstain"] + tally["error"],
                reviewed=tally["review"],
                health=health_of(passed, decided),
                rate=passed / decided if decided else None,
                low=low,
                high=high,
            )
        )
    return sort_bars(bars)


def sort_bars(bars: Iterable[DimensionBar]) -> list[DimensionBar]:
    """Bars worst health first, then lowest rate, then name."""
    return sorted(
        bars,
        key=lambda b: (_WORST_FIRST[b.health], b.rate if b.rate is not None else 2.0, b.dimension),
    )


_CHIPS: tuple[ChipState, ...] = ("pass", "review", "fail", "abstain", "error")


@dataclass(frozen=True)
class LedgerRow:
    """One run on an agent's ledger."""

    record: AgentRecord
    health: Health
    strip: tuple[tuple[str, ChipState], ...]
    """Every score as (scorer, chip), in the run's scorer order: the band strip."""
    counts: dict[ChipState, int] = field(default_factory=dict)
    """How many scores of each state."""


def ledger(records: Sequence[AgentRecord], *, health: Health | None = None) -> list[LedgerRow]:
    """The runs newest first, each with its band and band strip.

    Args:
        records: The agent's runs.
        health: Only the runs in this band; None: every run.
    """
    rows = []
    for record in sorted(records, key=_when, reverse=True):
        band = run_health(record)
        if health is not None and band != health:
            continue
        strip = tuple((s.name, chip_state(s)) for s in record.scores)
        counts: dict[ChipState, int] = dict.fromkeys(_CHIPS, 0)
        for _, state in strip:
            counts[state] += 1
        rows.append(LedgerRow(record, band, strip, counts))
    return rows
