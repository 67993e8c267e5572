"""The judge panels on ingested runs: after the ingest has answered, bounded, fail-open.

Each stored run of ``POST /v1/trajectories`` and ``POST /v1/traces`` may be judged by
the decomposed judges (:mod:`arbiter.judges.judges`) on the panel the settings name
(``trust_judge_panel``), every call through the judging layer, so its tokens and cost
are counted as every judged path's are. Whether a run is judged is the agent's judge
setting over the deployment's default (:func:`arbiter.trust.judge_prefs.resolve_judge_prefs`),
then the online pipeline's escalation: a run a deterministic scorer failed or that ended
in error always, a clean one when the seeded draw on its item id (the id ``arbiter
online score`` draws on) falls in the sample rate.

The rulings are kept beside the run (they never change its stored verdict). A delivered
answer whose groundedness judges fail is a danger ``judge_condemnation`` trust event; an
answer a gate withheld (its metadata names the gate decision, ``"gate_decision": id``,
that withheld or parked it) records none. A run imported again with the same content is
not judged again.

Nothing here can break ingest: judging runs after the answer was sent, each run under
the judges' budget, at most ``trust_judge_concurrency`` at once and
``trust_judge_queue`` waiting (more are skipped and counted), and any failure is a log
line.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from arbiter.config import Settings
from arbiter.contract import Example, FlowRun, ModelCalls, StoredTrajectory, Trajectory
from arbiter.judges.judges import JUDGES
from arbiter.judging import JudgingContext
from arbiter.online.config import JudgePanelConfig
from arbiter.online.sampling import sampled
from arbiter.online.scorers_layer import run_output
from arbiter.service.online_agents import trajectory_item
from arbiter.service.online_judges import OnlineJudges, online_judges
from arbiter.store import Store
from arbiter.store.gate_repository import load_gate_decision
from arbiter.store.trust_judging_repository import (
    NewRuling,
    agent_judge_setting,
    event_recorded,
    judged_before,
    save_rulings,
)
from arbiter.store.trust_repository import append_event
from arbiter.trust.judge_prefs import (
    JudgePrefs,
    condemning_judges,
    judge_trigger,
    resolve_judge_prefs,
)

__all__ = [
    "GATE_DECISION_KEY",
    "GROUNDEDNESS_FAMILY",
    "AgentJudges",
    "IngestJudges",
    "RunJudgment",
    "agent_judge_prefs",
    "agent_judges",
    "set_agent_judges",
]

log = logging.getLogger(__name__)

GROUNDEDNESS_FAMILY = frozenset(
    name for name, judge in JUDGES.items() if judge.dimension == "groundedness"
)
"""The judges of the groundedness dimension: a failing ruling of one condemns a delivered
answer."""
GATE_DECISION_KEY = "gate_decision"
"""The run metadata key naming the gate decision its answer went through."""
_MAX_EXPLANATION = 2_000
_WITHHELD = frozenset({"withhold", "park_for_review"})


class RunJudgment(BaseModel):
    """What judging did with one ingested run."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    agent: str
    judged: bool = False
    """Whether the judges were asked."""
    skipped: str | None = None
    """Why not, when they were not."""
    trigger: str | None = None
    """Why they were: ``flagged``, ``anomalous`` or ``sampled``."""
    rulings: dict[str, str] = Field(default_factory=dict)
    """Each judge's verdict: ``pass``, ``fail`` or ``unknown``."""
    condemned_by: list[str] = Field(default_factory=list)
    """Groundedness judges that failed a delivered answer."""
    withheld: bool = False
    """A gate withheld the answer (no condemnation is recorded)."""
    advisory: list[str] = Field(default_factory=list)
    """Groundedness judges that failed it but are advisory: their calibration fell below
    the kappa floor, so their ruling condemns nothing."""
    event_id: int | None = None
    """The ``judge_condemnation`` event recorded."""
    model: ModelCalls = Field(default_factory=ModelCalls)
    """Every call of every judge on the run, summed."""


def agent_judge_prefs(
    store: Store, agent: str, *, owner: str | None, settings: Settings
) -> tuple[JudgePrefs, list[str]]:
    """The agent's judge preferences in force, and the warnings of values that fell back."""
    _, raw = agent_judge_setting(store, agent, owner=owner)
    return resolve_judge_prefs(
        raw,
        default_on=settings.trust_judges == "on",
        default_rate=settings.trust_judge_sample_rate,
    )


@dataclass
class IngestJudges:
    """The judges of ingested runs, built once per server from its settings.

    Args:
        judges: The judges with their panel.
        settings: The deployment's settings (defaults, seed, bounds).
        context: The judging context the judges call through (closed with :meth:`aclose`).
    """

    judges: OnlineJudges
    settings: Settings
    context: JudgingContext | None = None
    dropped: int = 0
    """Runs not judged because the queue was full."""
    _waiting: int = field(default=0, init=False)
    _slots: asyncio.Semaphore | None = field(default=None, init=False)
    _tasks: set[asyncio.Task[list[RunJudgment]]] = field(default_factory=set, init=False)

    @classmethod
    def build(
        cls, settings: Settings, *, context: JudgingContext | None = None
    ) -> IngestJudges | None:
        """The judges the settings name; None when no panel is configured or it cannot be
        built (said in a log line: ingest goes on without judges)."""
        panel = [m.strip() for m in settings.trust_judge_panel.split(",") if m.strip()]
        if not panel:
            return None
        names = [n.strip() for n in settings.trust_judge_names.split(",") if n.strip()]
        config = JudgePanelConfig(
            judges=names or None, panel=list(panel), budget_s=settings.trust_judge_budget_s
        )
        owned = context or JudgingContext(settings=settings)
        try:
            judges = online_judges(config, context=owned)
        except Exception as exc:
            log.warning("judges on ingest are off: %s", exc)
            return None
        return cls(judges=judges, settings=settings, context=owned)

    async def aclose(self) -> None:
        """Close the judges' providers."""
        if self.context is not None:
            await self.context.aclose()

    def submit(
        self,
        store: Store,
        records: Sequence[StoredTrajectory],
        *,
        owner: str | None,
        input: Mapping[str, Any] | None = None,
    ) -> asyncio.Task[list[RunJudgment]] | None:
        """Judge the runs of one ingest in the background (the caller does not wait).

        Runs past the queue's bound are not judged, and counted in :attr:`dropped`.
        Returns the task, or None when nothing was left to judge.
        """
        room = max(0, self.settings.trust_judge_queue - self._waiting)
        taken = list(records)[:room]
        if len(taken) < len(records):
            self.dropped += len(records) - len(taken)
            log.warning("judges on ingest: queue full, %d runs not judged", len(records) - room)
        if not taken:
            return None
        self._waiting += len(taken)
        task = asyncio.get_running_loop().create_task(
            self.judge_stored(store, taken, owner=owner, input=input, queued=True)
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def drain(self) -> None:
        """Wait for every judging under way (a test, a shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def judge_stored(
        self,
        store: Store,
        records: Sequence[StoredTrajectory],
        *,
        owner: str | None,
        input: Mapping[str, Any] | None = None,
        queued: bool = False,
    ) -> list[RunJudgment]:
        """Judge the runs of one ingest that call for it, now; never raises.

        Args:
            store: Where the runs are stored and the rulings go.
            records: The runs the ingest stored.
            owner: The key that sent them.
            input: The query the runs answered, when the caller gave one.
            queued: The runs were counted into the queue by :meth:`submit`.
        """
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.settings.trust_judge_concurrency)
        judged: list[RunJudgment] = []
        for record in records:
            try:
                async with self._slots:
                    judged.append(await self._one(store, record, owner, input))
            except Exception as exc:  # fail open: a judging failure is a log line
                log.warning("judges on ingest failed for run %s: %s", record.id, exc)
                judged.append(
                    RunJudgment(
                        run_id=record.id,
                        agent=record.agent,
                        skipped=f"error: {type(exc).__name__}: {exc}"[:300],
                    )
                )
            finally:
                if queued:
                    self._waiting -= 1
        return judged

    async def _one(
        self,
        store: Store,
        record: StoredTrajectory,
        owner: str | None,
        input: Mapping[str, Any] | None,
    ) -> RunJudgment:
        outcome = RunJudgment(run_id=record.id, agent=record.agent)
        run: Trajectory | FlowRun | None = record.trajectory or record.flow
        if run is None:
            return outcome.model_copy(update={"skipped": "no run stored"})
        prefs, warnings = await asyncio.to_thread(
            agent_judge_prefs, store, record.agent, owner=owner, settings=self.settings
        )
        for warning in warnings:
            log.warning("judge setting of agent %r: %s", record.agent[:200], warning)
        if not prefs.enabled:
            return outcome.model_copy(update={"skipped": "judges off for the agent"})
        if await asyncio.to_thread(judged_before, store, record.id, record.trajectory_hash):
            return outcome.model_copy(update={"skipped": "judged before"})
        item = trajectory_item(run)
        failed = any(s.passed is False and s.error is None for s in record.scores)
        trigger = judge_trigger(
            failed_rules=failed,
            errored=record.status == "error",
            drawn=sampled(item.id, prefs.sample_rate, self.settings.trust_judge_seed),
        )
        if trigger is None:
            return outcome.model_copy(update={"skipped": "clean and not sampled"})
        example = Example.model_construct(
            id=item.id,
            input=dict(input) if input is not None else {},
            expected_label=None,
            expected=None,
            output=None,
            cohort=None,
            metadata={},
        )
        output = run_output(item.id, run)
        # The judges keep their own budget; this outer bound only guards against a judge
        # that ignores it, so ingest's background work always ends.
        panel = await asyncio.wait_for(
            self.judges.judge(example, output), timeout=self.judges.budget_s + 5.0
        )
        rulings: list[NewRuling] = [
            (
                score.name,
                score.passed if score.error is None else None,
                (score.explanation or score.error or "")[:_MAX_EXPLANATION],
                score.model or ModelCalls(),
            )
            for score in panel.scores
        ]
        now = datetime.now(UTC)
        await asyncio.to_thread(
            save_rulings,
            store,
            run_id=record.id,
            run_hash=record.trajectory_hash,
            agent=record.agent,
            owner=owner,
            trigger=trigger,
            rulings=rulings,
            now=now,
        )
        withheld = await asyncio.to_thread(_withheld, store, run, owner)
        condemned = condemning_judges(
            [(name, passed) for name, passed, _why, _calls in rulings],
            family=GROUNDEDNESS_FAMILY,
            withheld=withheld,
        )
        advisory = await asyncio.to_thread(_advisory, store, condemned) if condemned else []
        condemned = [name for name in condemned if name not in advisory]
        outcome = outcome.model_copy(
            update={
                "judged": True,
                "trigger": trigger,
                "rulings": {
                    name: "unknown" if passed is None else "pass" if passed else "fail"
                    for name, passed, _why, _calls in rulings
                },
                "condemned_by": condemned,
                "withheld": withheld,
                "advisory": advisory,
                "model": panel.model,
            }
        )
        if condemned:
            event_id = await asyncio.to_thread(
                _condemn, store, record, owner, condemned, trigger, panel.model, now
            )
            outcome = outcome.model_copy(update={"event_id": event_id})
        return outcome


def _advisory(store: Store, judges: list[str]) -> list[str]:
    """The judges whose calibration on their dimension fell below the kappa floor (see
    :mod:`arbiter.service.trust_calibration`); a judge never measured is not among them."""
    from arbiter.judges.judges import JUDGES
    from arbiter.service.trust_calibration import judge_standings

    standings = judge_standings(store)
    found = []
    for name in judges:
        definition = JUDGES.get(name)
        dimension = definition.dimension if definition is not None else name
        if standings.get((name, dimension)) == "advisory":
            found.append(name)
    return found


def _withheld(store: Store, run: Trajectory | FlowRun, owner: str | None) -> bool:
    """Whether the run's metadata names a gate decision (of its owner) that withheld or
    parked its answer."""
    named = run.metadata.get(GATE_DECISION_KEY)
    if not isinstance(named, str) or not 0 < len(named) <= 64:
        return False
    decision = load_gate_decision(store, named)
    return decision is not None and decision.owner == owner and decision.action in _WITHHELD


def _condemn(
    store: Store,
    record: StoredTrajectory,
    owner: str | None,
    judges: list[str],
    trigger: str,
    calls: ModelCalls,
    now: datetime,
) -> int | None:
    """Record the condemnation once per run: a run judged again (new content) that is
    condemned again adds nothing to the inbox."""
    if event_recorded(store, "judge_condemnation", record.id, owner=owner):
        return None
    event = append_event(
        store,
        kind="judge_condemnation",
        severity="danger",
        agent=record.agent,
        owner=owner,
        message=(
            f"the judges found a delivered answer of {record.agent[:200]} ungrounded "
            f"({', '.join(judges)})"
        ),
        record_kind="trajectory",
        record_id=record.id,
        details={"judges": judges, "trigger": trigger, "cost_usd": calls.cost_usd},
        now=now,
    )
    return event.id


class AgentJudges(BaseModel):
    """An agent's judge setting, and what is in force for its ingested runs."""

    model_config = ConfigDict(extra="forbid")

    agent: str
    owner: str | None = None
    judges: str = "inherit"
    """The agent's own switch as stored: ``inherit``, ``on`` or ``off``."""
    sample_rate: float | None = None
    """The agent's own sample rate; None: the default."""
    enabled: bool
    """Whether the judges run on its runs (its switch over the default)."""
    effective_rate: float
    """The share of its clean runs judged."""
    default_enabled: bool
    """The deployment's default switch (``ARBITER_TRUST_JUDGES``)."""
    default_rate: float
    """The deployment's default rate (``ARBITER_TRUST_JUDGE_SAMPLE_RATE``)."""
    panel: bool
    """Whether a judge panel is configured (``ARBITER_TRUST_JUDGE_PANEL``); without one
    no judge runs, whatever the switch."""
    warnings: list[str] = Field(default_factory=list)
    """Stored values that could not be read and fell back to the default."""
    set_by: str | None = None
    set_at: datetime | None = None


def agent_judges(store: Store, agent: str, *, owner: str | None, settings: Settings) -> AgentJudges:
    """An agent's judge setting and the preferences it resolves to."""
    stored, raw = agent_judge_setting(store, agent, owner=owner)
    prefs, warnings = resolve_judge_prefs(
        raw,
        default_on=settings.trust_judges == "on",
        default_rate=settings.trust_judge_sample_rate,
    )
    switch = stored.judges if stored is not None else "inherit"
    rate = stored.sample_rate if stored is not None else None
    return AgentJudges(
        agent=agent,
        owner=owner,
        judges=switch if isinstance(switch, str) else repr(switch)[:40],
        sample_rate=prefs.sample_rate if prefs.rate_from == "agent" else None,
        enabled=prefs.enabled,
        effective_rate=prefs.sample_rate,
        default_enabled=settings.trust_judges == "on",
        default_rate=settings.trust_judge_sample_rate,
        panel=bool(settings.trust_judge_panel.strip()),
        warnings=warnings if rate is not None or stored is not None else [],
        set_by=stored.by if stored is not None else None,
        set_at=stored.at if stored is not None else None,
    )


def set_agent_judges(
    store: Store,
    agent: str,
    *,
    owner: str | None,
    judges: str,
    sample_rate: float | None,
    by: str,
    settings: Settings,
    now: datetime | None = None,
) -> AgentJudges:
    """Set an agent's judges (``inherit``, ``on`` or ``off``) and sample rate (None: the
    default; clamped to [0, 1]).

    Raises:
        InputError: A switch that is none of the three, or a rate that is not a number.
    """
    import math

    from arbiter.errors import InputError
    from arbiter.store.trust_judging_repository import save_agent_judge_setting
    from arbiter.trust.judge_prefs import JUDGE_SWITCHES

    word = judges.strip().lower()
    if word not in JUDGE_SWITCHES:
        raise InputError(f"judges: expected inherit, on or off, got {judges[:40]!r}")
    if sample_rate is not None and (
        isinstance(sample_rate, bool) or not math.isfinite(sample_rate)
    ):
        raise InputError(f"sample_rate: expected a number in [0, 1], got {sample_rate!r}")
    setting: dict[str, Any] = {"judges": word}
    if sample_rate is not None:
        setting["sample_rate"] = min(1.0, max(0.0, float(sample_rate)))
    save_agent_judge_setting(store, agent, owner=owner, setting=setting, by=by, now=now)
    return agent_judges(store, agent, owner=owner, settings=settings)
