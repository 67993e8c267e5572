"""The agent report's per-task tallies: exact, and a few bytes a task.

``arbiter agent score`` keeps, per distinct case, its decided repetitions and passes
under each gate (pass^k needs them at the end). They were a set entry, three dictionary
entries and three lists a task (100,000 one-run traces added 64 MB to the streamed
path's peak); they are now one dictionary entry (the task's number) and machine
integers in arrays.
"""

from __future__ import annotations

import asyncio
import random
import tracemalloc
from collections.abc import Iterator

from arbiter.contract import Score, Trajectory
from arbiter.service.agent_report import pass_hat_k_of_counts
from arbiter.service.agents import score_agent_runs
from arbiter.trajectories.formats import ImportedRun


def _runs(cases: list[str], seed: int) -> Iterator[ImportedRun]:
    rng = random.Random(seed)
    for i, case in enumerate(cases):
        reward = rng.random()
        passed = None if reward < 0.15 else reward > 0.5  # some undecided
        score = Score(name="reward", value=None if passed is None else float(passed))
        score.passed = passed
        yield ImportedRun(
            Trajectory(id=f"t{i}", status="completed", final_answer="ok"),
            None,
            case,
            i,
            scores=[score],
        )


def test_pass_hat_k_is_the_one_of_the_counts_in_first_decided_order() -> None:
    rng = random.Random(3)
    cases = [f"case-{rng.randrange(40)}" for _ in range(600)]
    report = asyncio.run(score_agent_runs(_runs(cases, seed=5), [], keep_runs=0))
    # The reference: per task in the order first decided, [decided, passed].
    tasks: dict[str, list[int]] = {}
    for run in _runs(cases, seed=5):
        passed = run.scores[0].passed
        if passed is not None:
            counts = tasks.setdefault(run.case_id, [0, 0])
            counts[0] += 1
            counts[1] += passed
    assert report.n_tasks == len(set(cases))
    assert report.pass_hat_k is not None
    assert report.pass_hat_k == pass_hat_k_of_counts(tasks, seed=0)


def test_a_task_costs_a_few_hundred_bytes_at_most() -> None:
    n = 20_000
    cases = [f"case-{i:08d}" for i in range(n)]  # every run its own task
    tracemalloc.start()
    try:
        report = asyncio.run(score_agent_runs(_runs(cases, seed=1), [], keep_runs=0))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert report.n_tasks == n
    # The case ids themselves are held by the test, so not counted here: what is
    # traced is the tallies (about 300 bytes a task before, about 140 now).
    assert peak / n < 200, peak / n
