"""``agent score --rate-limit``: the model calls of a judge named with ``--scorer`` hold
their provider's shared limits, on the local engine through the scorers' context and in
a cluster's worker through the work's ``gated`` form (the two-node cluster's run is in
tests/engines/test_ray_online_limits.py)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import cast

from arbiter.contract import Score
from arbiter.engines.base import CallGate
from arbiter.scoring.base import ScoringContext
from arbiter.service.agent_work import AgentScoreWork, sent_run
from arbiter.service.agents import score_agent_runs, trajectory_scorers
from arbiter.trajectories.loader import load_runs
from tests.conftest import Result

TAU = Path(__file__).parents[1] / "trajectories" / "data" / "tau_bench_published_shape.json"
JUDGE = "rubric:rubric=The agent did what was asked.,provider=mock,model=m"


def _recording() -> tuple[list[str], CallGate]:
    held: list[str] = []

    @contextlib.asynccontextmanager
    async def gate(name: str) -> AsyncIterator[None]:
        held.append(name)
        yield

    return held, cast(CallGate, gate)


async def test_a_judges_calls_pass_the_gate_of_the_scorers_context() -> None:
    runs = load_runs([TAU])
    held, gate = _recording()
    context = ScoringContext(gate=gate, use_cache=False)
    scorers = trajectory_scorers([JUDGE], runs=runs, context=context)
    try:
        report = await score_agent_runs(runs, scorers)
    finally:
        await context.aclose()
    assert report.n_trajectories == len(runs) == 2
    assert held == ["mock"] * len(runs)  # one judge call per run, each held


async def test_a_gated_work_builds_its_scorers_with_the_gate_a_worker_hands_it() -> None:
    runs = load_runs([TAU])
    specs = [s.spec for s in trajectory_scorers([JUDGE], runs=runs)]
    held, gate = _recording()
    work = AgentScoreWork(None, specs=specs).portable()
    assert work.gate is None
    gated = work.gated(gate).limited(4)
    assert gated.gate is gate
    out: list[tuple[int, int]] = []

    async def keep(item: tuple[int, list[Score]]) -> None:
        out.append((item[0], len(item[1])))

    await gated.run([sent_run(i, run) for i, run in enumerate(runs)], keep)
    assert sorted(out) == [(0, 1), (1, 1)]
    assert held == ["mock", "mock"]
    await work.run([sent_run(i, run) for i, run in enumerate(runs)], keep)
    assert held == ["mock", "mock"]  # the same work ungated holds nothing


def test_agent_score_takes_a_rate_limit_and_refuses_one_without_a_provider(
    cli: Callable[..., Result],
) -> None:
    done = cli("agent", "score", str(TAU), "--scorer", JUDGE,
               "--rate-limit", "mock=50/s,burst=1,concurrency=1", "--json")  # fmt: skip
    assert done.code == 0, done.err
    report = json.loads(done.out)
    assert report["n_trajectories"] == 2
    bad = cli("agent", "score", str(TAU), "--rate-limit", "4/s")
    assert bad.code == 3
    assert bad.err.strip().splitlines() == [
        "arbiter: error: --rate-limit '4/s': this command calls no system under test; "
        "name the model provider its limit is for (e.g. openai=20/s)"
    ]
    malformed = cli("agent", "score", str(TAU), "--rate-limit", "mock=fast")
    assert malformed.code == 3
    assert len(malformed.err.strip().splitlines()) == 1
    assert "--rate-limit" in malformed.err
