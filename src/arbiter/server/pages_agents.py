"""The agent pages: the roster, one agent, one trajectory, two trajectories side by side.

- ``/agents``: one card per agent and per flow, worst health first, with its band pill,
  pass rate and interval, a pass / fail sparkline and an honest "not evaluated";
- ``/agents/{name}``: its trust (state, integrity seal, conduct ring with its interval,
  history), per-dimension bars and the runs ledger (a band strip per run);
- ``/trajectories/{id}``: the waterfall of steps on a time axis (parallel steps side by
  side), the verdict chips coloured by band, the answer and each step's details;
- ``/compare/trajectories?a=&b=``: two runs side by side, the differing tool calls marked,
  the verdicts that flipped.

Routes read the agents' read model (:mod:`arbiter.service.agent_roster`, the one the
REST API and the CLI render) and the records of :mod:`arbiter.service.agent_records`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Literal
from urllib.parse import quote

from fastapi import APIRouter, Depends, Query, Request
from fastapi.templating import Jinja2Templates
from starlette.responses import Response

from arbiter.config import Settings
from arbiter.contract import FlowRun, RunKind, Score, Trajectory
from arbiter.contract.trust import TrustStatus
from arbiter.errors import InputError
from arbiter.server.auth import Principal
from arbiter.server.conversation import thread
from arbiter.server.deps import app_settings, app_store, templates
from arbiter.server.pages_common import page_url, render
from arbiter.server.pages_runs import page_principal
from arbiter.server.waterfall import waterfall
from arbiter.service import agent_records as records_of
from arbiter.service.agent_health import Health, chip_state
from arbiter.service.agent_roster import (
    LedgerRow,
    dimension_bars,
    figures_of,
    ledger_row,
    record_health,
    summary_of,
)
from arbiter.store import Store

if TYPE_CHECKING:
    from arbiter.service.trust import HistoryItem, SignatureChecker

__all__ = ["ScorerFacts", "Who", "integrity_checker", "key_needed", "router"]

router = APIRouter(include_in_schema=False)

StoreDep = Annotated[Store, Depends(app_store)]
TemplatesDep = Annotated[Jinja2Templates, Depends(templates)]
Who = Annotated[Principal | None, Depends(page_principal)]
"""The request's key, read as the REST API reads it; None when keys exist and it has none."""

_MOMENTS = ("plan", "retrieve", "act", "compose", "deliver", "run")
_MOMENT_NAMES: dict[str | None, str] = {
    "plan": "Plan",
    "retrieve": "Retrieve",
    "act": "Act",
    "compose": "Compose",
    "deliver": "Deliver",
    "run": "The run",
    None: "Other checks",
}


class ScorerFacts:
    """The dimension and moment of scorers by name, looked up once per page."""

    def __init__(self) -> None:
        from arbiter.service.scoring import scorer_registry

        self._registry = scorer_registry()
        self._known: dict[str, tuple[str | None, str | None]] = {}

    def about(self, name: str) -> tuple[str | None, str | None]:
        """(dimension, moment) of a scorer; (None, None) when it is not registered."""
        if name not in self._known:
            try:
                factory = self._registry.factory_of(name)
            except (InputError, ValueError):
                self._known[name] = (None, None)
            else:
                self._known[name] = (factory.dimension, factory.moment)
        return self._known[name]

    def dimension(self, name: str) -> str | None:
        """The dimension a scorer measures; None when unknown."""
        return self.about(name)[0]

    def chip_groups(self, scores: Sequence[Score]) -> list[tuple[str, list[Score]]]:
        """Scores grouped by the moment of a run they measure, in the run's order."""
        groups: dict[str | None, list[Score]] = {}
        for score in scores:
            moment = self.about(score.name)[1]
            groups.setdefault(moment if moment in _MOMENTS else None, []).append(score)
        return [(_MOMENT_NAMES[m], groups[m]) for m in (*_MOMENTS, None) if m in groups]


def key_needed(request: Request, tpl: Jinja2Templates, nav: str = "agents") -> Response:
    """The 401 page of a server with API keys, for a request without a valid one."""
    return render(
        request,
        tpl,
        "agents_missing.html",
        {
            "nav": nav,
            "title": "An API key is needed",
            "what": "This server has API keys: its pages answer requests that carry one "
            "(Authorization: Bearer <key> or X-API-Key), e.g. through a proxy that adds it.",
        },
        status_code=401,
    )


def _not_found(request: Request, tpl: Jinja2Templates, what: str) -> Response:
    return render(
        request,
        tpl,
        "agents_missing.html",
        {"nav": "agents", "what": what},
        status_code=404,
    )


@router.get("/agents")
def agents_page(
    request: Request,
    store: StoreDep,
    tpl: TemplatesDep,
    who: Who,
    settings: Annotated[Settings, Depends(app_settings)],
    kind: Annotated[Literal["agent", "flow"] | None, Query()] = None,
    q: Annotated[str | None, Query(max_length=200)] = None,
) -> Response:
    """The roster: one card per agent and per flow, worst health first, each with the
    trend of its trust-critical dimensions."""
    if who is None:
        return key_needed(request, tpl)
    from arbiter.service.fleet import fleet_posture
    from arbiter.service.trust import trust_policy

    posture = fleet_posture(
        store,
        viewer=who.viewer,
        policy=trust_policy(settings),
        checker=integrity_checker(store, settings),
    )
    # One card per name: the first owner's row (by name order) stands for the name.
    dimensions = {
        row.status.agent: [c for c in row.dimensions if c.rate is not None]
        for row in reversed(posture.rows)
    }
    trust = {row.status.agent: row.status for row in reversed(posture.rows)}
    cards, offline = records_of.roster_cards(store, viewer=who.viewer)
    wanted = _run_kind(kind)
    shown = [
        c
        for c in cards
        if (wanted is None or c.kind == wanted) and (not q or q.casefold() in c.name.casefold())
    ]
    live = [c for c in cards if c.live]
    counts = {h: sum(1 for c in cards if c.health == h) for h in ("healthy", "review", "danger")}
    kpis = {
        "agents": len(cards),
        "evaluated": sum(1 for c in cards if c.health != "inactive"),
        "healthy": counts["healthy"],
        "attention": counts["review"] + counts["danger"],
        # Live cards count their stored runs; offline runs are counted whatever the card.
        "runs": sum(c.runs for c in cards if c.live) + len(offline),
        "failed": sum(c.evaluated - (c.pass_rate.passed if c.pass_rate else 0) for c in live)
        + sum(1 for r in offline if r.passed is False),
    }
    return render(
        request,
        tpl,
        "agents.html",
        {
            "nav": "agents",
            "cards": shown,
            "all_cards": cards,
            "kpis": kpis,
            "kind": kind,
            "q": q or "",
            "has_flows": any(c.kind == "flow" for c in cards),
            "dimensions": dimensions,
            "trust": trust,
        },
    )


def _run_kind(kind: str | None) -> RunKind | None:
    """The run kind a page's ``kind`` parameter names (``agent`` or ``flow``)."""
    return None if kind is None else "flow" if kind == "flow" else "trajectory"


_LEDGER_PAGE = 50
"""Runs one ledger page shows."""
_BAND_FILTERS: tuple[Health, ...] = ("healthy", "review", "danger", "inactive")


@router.get("/agents/{name:path}")
def agent_page(
    request: Request,
    name: str,
    store: StoreDep,
    tpl: TemplatesDep,
    who: Who,
    settings: Annotated[Settings, Depends(app_settings)],
    kind: Annotated[Literal["agent", "flow"] | None, Query()] = None,
    band: Annotated[Literal["healthy", "review", "danger", "inactive"] | None, Query()] = None,
    offset: Annotated[int, Query(ge=0, le=100_000_000)] = 0,
) -> Response:
    """One agent: its card, its trust (state, integrity seal, conduct ring, history),
    per-dimension bars and its runs ledger (live, then offline)."""
    if who is None:
        return key_needed(request, tpl)
    viewer = who.viewer
    from arbiter.service.agent_roster import agent_detail
    from arbiter.store.trajectory_repository import agent_totals, list_trajectories

    offline = [r for r in records_of.agent_records(store, viewer=viewer) if r.agent == name]
    totals = agent_totals(store, viewer=viewer)
    live_kinds: set[RunKind] = {
        "flow" if t.kind == "flow" else "trajectory" for t in totals if t.agent == name
    }
    kinds = live_kinds | {r.kind for r in offline}
    chosen: RunKind = _run_kind(kind) or ("trajectory" if "trajectory" in kinds else "flow")
    offline = [r for r in offline if r.kind == chosen]
    offline.sort(key=lambda r: r.at, reverse=True)
    detail = None
    if chosen in live_kinds:
        detail = agent_detail(store, name, kind=chosen, viewer=viewer)
    if detail is not None:
        card = records_of.live_card(
            detail,
            offline_runs=len(offline),
            failing=records_of.failing_checks(store, name, chosen, viewer=viewer),
        )
        bars = dimension_bars(detail.dimensions)

        def page(health: Health | None, limit: int) -> tuple[list[LedgerRow], int]:
            wanted = "none" if health == "inactive" else health
            found, total = list_trajectories(
                store,
                agent=name,
                kind=chosen,
                band=wanted,
                viewer=viewer,
                offset=offset,
                limit=limit,
            )
            return [ledger_row(r) for r in found], total

        rows, total = page(band, _LEDGER_PAGE)
        band_counts = {h: page(h, 0)[1] for h in _BAND_FILTERS}
        offline_rows = [ledger_row(r) for r in offline[:_LEDGER_PAGE]]
    elif offline:
        card = summary_of(offline)
        bars = dimension_bars(figures_of(offline), ScorerFacts().dimension)
        every = [r for r in offline if band is None or record_health(r) == band]
        total = len(every)
        rows = [ledger_row(r) for r in every[offset : offset + _LEDGER_PAGE]]
        band_counts = {h: sum(1 for r in offline if record_health(r) == h) for h in _BAND_FILTERS}
        offline_rows = []
    else:
        return _not_found(request, tpl, f"No scored runs of an agent named “{name}”.")
    trust = _trust_of(store, name, who, settings) if chosen == "trajectory" else []
    base = f"/agents/{quote(name)}"
    params = {
        "kind": ("flow" if chosen == "flow" else "agent") if len(kinds) > 1 else None,
        "band": band,
    }
    pager = {
        "total": total,
        "shown_from": offset + 1 if rows else 0,
        "shown_to": offset + len(rows),
        "prev_url": page_url(base, {**params, "offset": max(offset - _LEDGER_PAGE, 0) or None})
        if offset
        else None,
        "next_url": page_url(base, {**params, "offset": offset + _LEDGER_PAGE})
        if offset + len(rows) < total
        else None,
    }
    return render(
        request,
        tpl,
        "agent.html",
        {
            "nav": "agents",
            "card": card,
            "bars": bars,
            "rows": rows,
            "pager": pager,
            "offline_rows": offline_rows,
            "n_offline": len(offline),
            "band": band,
            "kind": "flow" if chosen == "flow" else "agent",
            "both_kinds": len(kinds) > 1,
            "band_counts": band_counts,
            "trust": trust,
        },
    )


def integrity_checker(store: Store, settings: Settings) -> SignatureChecker | None:
    """A check of stored runs' signatures under the configured signing key; None when no
    key is configured (integrity is then unknown and caps nothing)."""
    from arbiter.service.attestation import configured_signer

    key = configured_signer(settings)
    if key is None:
        return None
    from arbiter.service.trust_integrity import signature_checker

    return signature_checker(store, key.public_key)


_HISTORY_SHOWN = 20
"""Trust history entries the agent page shows, newest first."""


def _trust_of(
    store: Store, name: str, who: Principal, settings: Settings
) -> list[tuple[TrustStatus, list[HistoryItem]]]:
    """The agent's trust status per owner the key may see (integrity checked under the
    configured signing key, when there is one), each with its newest history entries."""
    from arbiter.service.trust import trust_history, trust_policy, trust_statuses

    statuses = trust_statuses(
        store,
        viewer=who.viewer,
        agent=name,
        policy=trust_policy(settings),
        checker=integrity_checker(store, settings),
    )
    return [
        (s, trust_history(store, name, owner=s.owner)[-_HISTORY_SHOWN:][::-1]) for s in statuses
    ]


_WHY_ORDER = {"fail": 0, "error": 1, "review": 2, "pass": 3, "abstain": 4}
"""The order of a run's checks under "Why": what went wrong first."""


def _facts(run: Trajectory | FlowRun) -> dict[str, object]:
    steps = len(run.nodes) if isinstance(run, FlowRun) else sum(1 for _ in run.walk())
    tools = len(run.tool_calls) if isinstance(run, Trajectory) else None
    tokens = run.totals().total_tokens if isinstance(run, Trajectory) else None
    answer = run.output if isinstance(run, FlowRun) else run.final_answer
    return {
        "steps": steps,
        "tools": tools,
        "tokens": tokens,
        "answer": answer,
        "status": run.status,
        "error": run.error,
        "conversation": run.conversation_id if isinstance(run, Trajectory) else None,
        "source_format": run.source.format if run.source else None,
    }


@router.get("/trajectories/{record_id:path}")
def trajectory_page(
    request: Request, record_id: str, store: StoreDep, tpl: TemplatesDep, who: Who
) -> Response:
    """One run: its waterfall, its verdict chips, its answer and steps."""
    if who is None:
        return key_needed(request, tpl)
    found = records_of.record(store, record_id, viewer=who.viewer)
    if found is None or found.run is None:
        return _not_found(request, tpl, "No stored trajectory has this id.")
    run = found.run
    return render(
        request,
        tpl,
        "trajectory.html",
        {
            "nav": "agents",
            "r": found,
            "health": record_health(found),
            "fall": waterfall(run),
            "groups": ScorerFacts().chip_groups(found.scores),
            "why": sorted(
                (s for s in found.scores if chip_state(s) != "abstain"),
                key=lambda s: _WHY_ORDER[chip_state(s)],
            ),
            "abstained": [s for s in found.scores if chip_state(s) == "abstain"],
            "chip_state": chip_state,
            "facts": _facts(run),
            "thread": thread(run) if isinstance(run, Trajectory) else None,
            "previous": records_of.previous_run(store, found, viewer=who.viewer),
        },
    )


@router.get("/compare/trajectories")
def compare_trajectories_page(
    request: Request,
    store: StoreDep,
    tpl: TemplatesDep,
    who: Who,
    a: Annotated[str | None, Query(max_length=2_000)] = None,
    b: Annotated[str | None, Query(max_length=2_000)] = None,
) -> Response:
    """Two runs side by side: tool calls aligned and marked, verdicts that flipped."""
    from arbiter.trajectories.diff import diff_calls, flipped_verdicts

    if who is None:
        return key_needed(request, tpl)
    left = records_of.record(store, a, viewer=who.viewer) if a else None
    right = records_of.record(store, b, viewer=who.viewer) if b else None
    missing = [side for side, r, given in (("A", left, a), ("B", right, b)) if given and r is None]
    context: dict[str, object] = {"nav": "agents", "a_id": a or "", "b_id": b or ""}
    if left is None or right is None or left.run is None or right.run is None:
        context["missing"] = missing
        return render(
            request,
            tpl,
            "compare_trajectories.html",
            context,
            status_code=404 if missing else 200,
        )
    calls_a = left.run.tool_calls if isinstance(left.run, Trajectory) else []
    calls_b = right.run.tool_calls if isinstance(right.run, Trajectory) else []
    diff = diff_calls(calls_a, calls_b)
    context.update(
        a=left,
        b=right,
        diff=diff,
        flips=flipped_verdicts(list(left.scores), list(right.scores)),
        facts_a=_facts(left.run),
        facts_b=_facts(right.run),
        health_a=record_health(left),
        health_b=record_health(right),
        fall_a=waterfall(left.run),
        fall_b=waterfall(right.run),
        chip_state=chip_state,
    )
    return render(request, tpl, "compare_trajectories.html", context)
