"""The live red-team: adversarial cases run k times through a real agent, guards graded.

The cases come from the shipped attack corpus (:func:`~arbiter.safety.live.live_suite`);
the agent is any agent executor (``python:MODULE:FN`` or ``http:agent.toml``, as for
``arbiter agent run``). Each case goes to the agent k times, one run after another, and
each run is graded in code (:func:`~arbiter.safety.live.grade_run`). The runs are capped
in calls, tokens and cost: before each run the caps are checked and, once one is
reached, the red-team stops there and says which cap stopped it; cases left without
all k runs count in no pass^k. Every breached run is recorded in the assurance inbox
(kind ``redteam_failure``) with its trajectory attached, and the report is kept
(:func:`stored_live_redteam` reads the newest back)::

    report = await run_live_redteam("http:agent.toml", k=3, max_calls=60, store=store)
    report.categories[0].pass_k      # Interval: held cases / complete cases, Wilson

Nothing here prints or starts an event loop.
"""

from __future__ import annotations

import asyncio
import math
import uuid
from collections.abc import Callable, Sequence
from typing import Any, get_args

from arbiter.contract import Example, Interval, Trajectory
from arbiter.contract.redteam import (
    LiveCase,
    LiveCategory,
    LiveCategoryResult,
    LiveRedTeamReport,
    LiveRun,
    LiveSpent,
)
from arbiter.errors import InputError, SystemUnderTestError
from arbiter.params import check_number
from arbiter.safety.corpus import shipped_corpus
from arbiter.safety.live import DEFAULT_PER_CATEGORY, grade_run, live_suite, suite_hash
from arbiter.service.safety_events import record_redteam_failures
from arbiter.stats import pass_hat_k, wilson_interval
from arbiter.store import Store
from arbiter.store.redteam_repository import latest_redteam_report, save_redteam_report
from arbiter.trajectories.executors import (
    AgentExecutor,
    AgentSystem,
    PythonExecutor,
    parse_executor_spec,
)

__all__ = [
    "DEFAULT_RUN_TIMEOUT",
    "MAX_K",
    "agent_executor",
    "run_live_redteam",
    "stored_live_redteam",
]

DEFAULT_RUN_TIMEOUT = 300.0
"""Seconds one run may take when neither the caller nor the executor says."""
MAX_K = 20
"""Most runs per case."""

_OWNER = "run_live_redteam"
_MAX_ERROR_CHARS = 500


def agent_executor(spec: str) -> AgentExecutor:
    """The executor a ``--agent`` value names: ``python:MOD:FN``, ``http:FILE``, or a
    bare ``.toml`` agent file (an HTTP agent).

    Raises:
        InputError: As :func:`~arbiter.trajectories.executors.parse_executor_spec`; a
            precomputed executor is refused (a recording cannot meet a new attack).
    """
    if spec.endswith(".toml") and not spec.startswith(("http:", "python:")):
        spec = f"http:{spec}"
    if spec.startswith("precomputed:"):
        raise InputError(
            f"agent {spec[:200]!r}: a red-team needs a live agent "
            "(python:MODULE:FN or http:agent.toml), not recorded runs"
        )
    return parse_executor_spec(spec)


def _check_caps(
    k: int, max_calls: int | None, max_tokens: int | None, max_cost_usd: float | None
) -> None:
    check_number(k, "k", _OWNER, minimum=1, maximum=MAX_K, integer=True)
    check_number(max_calls, "max_calls", _OWNER, minimum=1, integer=True, optional=True)
    check_number(max_tokens, "max_tokens", _OWNER, minimum=1, integer=True, optional=True)
    check_number(max_cost_usd, "max_cost_usd", _OWNER, minimum=0, open_min=True, optional=True)


def _cap_reached(spent: LiveSpent) -> str | None:
    if spent.max_calls is not None and spent.calls >= spent.max_calls:
        return f"the cap of {spent.max_calls} agent calls is reached"
    if spent.max_tokens is not None and spent.tokens >= spent.max_tokens:
        return f"the cap of {spent.max_tokens} tokens is reached ({spent.tokens} used)"
    if spent.max_cost_usd is not None and spent.cost_usd >= spent.max_cost_usd:
        return f"the cap of ${spent.max_cost_usd:g} is reached (${spent.cost_usd:.4f} spent)"
    return None


def _usage(trajectory: Trajectory) -> tuple[int, float | None]:
    """Tokens and cost of a run: its LLM calls', else the turn totals in its metadata."""
    totals = trajectory.totals()
    tokens, cost = totals.total_tokens, totals.cost_usd
    reported_tokens = trajectory.metadata.get("tokens")
    if tokens == 0 and isinstance(reported_tokens, int) and not isinstance(reported_tokens, bool):
        tokens = max(reported_tokens, 0)
    reported_cost = trajectory.metadata.get("cost_usd")
    if (
        cost is None
        and isinstance(reported_cost, int | float)
        and not isinstance(reported_cost, bool)
    ):
        cost = float(reported_cost) if math.isfinite(reported_cost) and reported_cost >= 0 else None
    return tokens, cost


async def _run_once(
    system: AgentSystem, case: LiveCase, repetition: int, seconds: float
) -> LiveRun:
    example = Example(id=case.id, input=case.input(), metadata={"redteam": case.category})
    try:
        async with asyncio.timeout(seconds):
            output = await system.answer(example)
    except TimeoutError:
        return LiveRun(
            case_id=case.id,
            category=case.category,
            repetition=repetition,
            status="error",
            error=f"no answer within {seconds:g}s",
        )
    except SystemUnderTestError as exc:
        return LiveRun(
            case_id=case.id,
            category=case.category,
            repetition=repetition,
            status="error",
            error=f"{type(exc).__name__}: {exc}"[:_MAX_ERROR_CHARS],
        )
    trajectory = output.trajectory
    if trajectory is None:
        return LiveRun(
            case_id=case.id,
            category=case.category,
            repetition=repetition,
            status="error",
            error="the agent returned a flow run; a red-team case needs a trajectory",
        )
    tokens, cost = _usage(trajectory)
    breaches = grade_run(case, trajectory)
    return LiveRun(
        case_id=case.id,
        category=case.category,
        repetition=repetition,
        status="breached" if breaches else "held",
        breaches=breaches,
        agent=trajectory.agent.name,
        tokens=tokens,
        cost_usd=cost,
        trajectory=trajectory,
    )


def _interval(successes: int, n: int) -> Interval:
    low, high = wilson_interval(successes, n)
    return Interval(estimate=successes / n, low=low, high=high, method="wilson", n=n)


def _categories(
    cases: Sequence[LiveCase], runs: Sequence[LiveRun], k: int
) -> list[LiveCategoryResult]:
    results: list[LiveCategoryResult] = []
    for category in get_args(LiveCategory):
        mine = [case for case in cases if case.category == category]
        if not mine:
            continue
        graded: dict[str, list[bool]] = {case.id: [] for case in mine}
        errored: set[str] = set()
        made = [run for run in runs if run.category == category]
        for run in made:
            if run.status == "error":
                errored.add(run.case_id)
            else:
                graded[run.case_id].append(run.status == "held")
        complete = {
            case_id: held
            for case_id, held in graded.items()
            if len(held) == k and case_id not in errored
        }
        held = sum(all(values) for values in complete.values())
        pass_k: Interval | None = None
        if complete:
            # With every case run exactly k times, pass^k (tau-bench's estimator) is the
            # share of cases held on all k runs; the interval is Wilson's over the cases.
            estimate = pass_hat_k(k, [sum(values) for values in complete.values()], k)
            pass_k = _interval(held, len(complete)).model_copy(update={"estimate": estimate})
        results.append(
            LiveCategoryResult(
                category=category,
                cases=len(mine),
                complete=len(complete),
                held=held,
                pass_k=pass_k,
                runs=len(made),
                runs_breached=sum(run.status == "breached" for run in made),
                runs_error=sum(run.status == "error" for run in made),
            )
        )
    return results


async def run_live_redteam(
    agent: str | AgentExecutor | Callable[[dict[str, Any]], Any],
    *,
    k: int = 3,
    per_category: int = DEFAULT_PER_CATEGORY,
    cases: Sequence[LiveCase] | None = None,
    max_calls: int | None = None,
    max_tokens: int | None = None,
    max_cost_usd: float | None = None,
    run_timeout: float | None = None,
    store: Store | None = None,
    owner: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> LiveRedTeamReport:
    """Red-team a live agent: each case k times, capped, every guard graded in code.

    Args:
        agent: An executor spec (:func:`agent_executor`), an executor, or a Python
            agent (a callable of the case input, as ``python:`` names one).
        k: Runs per case, in [1, :data:`MAX_K`].
        per_category: Cases per category of the suite built from the shipped corpus.
        cases: The cases instead of that suite.
        max_calls: Stop before the run that would exceed this many agent calls.
        max_tokens: Stop once the runs reported this many tokens.
        max_cost_usd: Stop once the runs reported this much cost.
        run_timeout: Seconds one run may take (default: the executor's, else 300).
        store: Where the report is kept and breached runs are recorded in the
            assurance inbox; None: nowhere.
        owner: The key the inbox events belong to (None: nobody's).
        progress: Called as ``progress(done, planned)`` after each run.

    Raises:
        InputError: A parameter out of range, an agent that cannot be loaded, no case.
        StoreUnavailable: The inbox could not be written.
    """
    _check_caps(k, max_calls, max_tokens, max_cost_usd)
    suite = (
        list(cases)
        if cases is not None
        else live_suite(shipped_corpus(), per_category=per_category)
    )
    if not suite:
        raise InputError("the red-team has no case to run")
    seen: set[str] = set()
    for case in suite:
        if case.id in seen:
            raise InputError(f"red-team case id {case.id[:200]!r} is given twice")
        seen.add(case.id)
    executor: AgentExecutor
    if isinstance(agent, str):
        executor = agent_executor(agent)
    elif callable(getattr(agent, "run", None)):
        executor = agent  # type: ignore[assignment]
    else:
        executor = PythonExecutor(agent)  # type: ignore[arg-type]
    system = AgentSystem(executor)
    described = system.describe()
    name = str(described.get("target") or described.get("kind") or "agent")
    bound = run_timeout or getattr(system, "call_timeout", None) or DEFAULT_RUN_TIMEOUT
    spent = LiveSpent(max_calls=max_calls, max_tokens=max_tokens, max_cost_usd=max_cost_usd)
    runs: list[LiveRun] = []
    costs: list[float] = []
    stopped: str | None = None
    async with system:
        for case in suite:
            for repetition in range(k):
                reason = _cap_reached(spent)
                if reason is not None:
                    stopped = f"{reason}: {len(runs)} of {len(suite) * k} runs made"
                    break
                run = await _run_once(system, case, repetition, float(bound))
                spent.calls += 1
                spent.tokens += run.tokens or 0
                if run.cost_usd is None:
                    spent.cost_unknown += 1
                else:
                    costs.append(run.cost_usd)
                    spent.cost_usd = math.fsum(costs)
                runs.append(run)
                if progress is not None:
                    progress(len(runs), len(suite) * k)
            if stopped is not None:
                break
    run_id = "rt-" + uuid.uuid4().hex[:24]
    named = next((run.agent for run in runs if run.agent), None)
    misses = [run for run in runs if run.status != "held"]
    if store is not None:
        misses = await asyncio.to_thread(
            record_redteam_failures, store, misses, run_id=run_id, agent=named or name, owner=owner
        )
    planned = len(suite) * k
    report = LiveRedTeamReport(
        run_id=run_id,
        agent=name,
        agent_name=named,
        k=k,
        suite_sha256=suite_hash(suite),
        n_cases=len(suite),
        runs_planned=planned,
        spent=spent,
        stopped=stopped,
        categories=_categories(suite, runs, k),
        passed=len(runs) == planned and all(run.status == "held" for run in runs),
        misses=misses,
    )
    if store is not None:
        await asyncio.to_thread(
            save_redteam_report, store, report, agent=named or name, owner=owner
        )
    return report


def stored_live_redteam(
    store: Store, viewer: str | None, agent: str | None
) -> dict[str, Any] | None:
    """The newest stored live red-team ``viewer`` may read (of ``agent`` when given), as
    JSON (its misses without their trajectories, which the inbox events hold); None when
    none is stored. The shape of the assurance pack's live red-team reader.

    Raises:
        StoreUnavailable: The database could not be read.
    """
    found = latest_redteam_report(store, viewer=viewer, agent=agent)
    if found is None:
        return None
    name, report = found
    return {"agent_name": name, **report.model_dump(mode="json")}
