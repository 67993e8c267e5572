"""Agent scoring as an engine's work: what travels to a worker and back is read there
exactly as it was, alike scores are shared only when exactly alike, and the scores and
report are the local engine's, through pickle as a cluster sends them and on Ray."""

from __future__ import annotations

import asyncio
import math
import pickle
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from arbiter.contract import AgentCase, FlowRun, Score, Trajectory
from arbiter.engines.base import EngineName, Work, bucket_of
from arbiter.engines.local import LocalEngine
from arbiter.scoring.base import BuiltScorer
from arbiter.service.agent_work import (
    AgentScoreWork,
    _Alike,
    _received,
    _released,
    score_agent_runs_on,
    sent_run,
)
from arbiter.service.agents import score_runs
from arbiter.service.scoring import scorer_registry
from arbiter.trajectories.cases import load_cases
from arbiter.trajectories.loader import ImportedRun, load_runs
from arbiter.trajectories.scorers import TRAJECTORY_SCORERS
from tests.engines.conftest import Cluster, needs_ray

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "trajectories" / "data"
EXAMPLES = ROOT / "docs" / "examples" / "agents"
FILES = [
    EXAMPLES / "retail-tau-bench.json",  # rewards and gold actions: several repetitions
    EXAMPLES / "support-v1.jsonl",  # scored against the case file's cases
    DATA / "atif_v1_7_multiagent.json",  # hand-offs to sub-agents
    DATA / "otlp_openai_v2_content.jsonl",
    DATA / "inspect_addition_mockllm.eval",
    DATA / "tau2_bench_published_shape.json",
]
CASES = {case.id: case for case in load_cases(EXAMPLES / "support-cases.jsonl")}


def _scorers() -> list[BuiltScorer]:
    registry = scorer_registry(plugins=False)
    return [registry.factory_of(name)() for name in TRAJECTORY_SCORERS]


def _odd_runs() -> list[ImportedRun]:
    """Runs no file above has: a flow, a NaN in a tool's result and in the metadata."""
    trajectory = Trajectory.model_validate(
        {
            "id": "t-nan",
            "steps": [
                {"kind": "tool_call", "name": "measure", "arguments": {"x": 1}},
            ],
            "final_answer": "done",
            "status": "completed",
            "metadata": {"ratio": math.nan, "big": math.inf},
        }
    )
    trajectory.steps[0].result = {"value": math.nan}  # type: ignore[union-attr]
    flow = FlowRun.model_validate(
        {"id": "f-1", "nodes": [{"id": "a", "status": "completed"}], "status": "completed"}
    )
    return [
        ImportedRun(trajectory=trajectory, flow=None, case_id="nan", repetition=0),
        ImportedRun(trajectory=None, flow=flow, case_id="flow", repetition=0),
    ]


def _runs() -> list[ImportedRun]:
    return [*load_runs(FILES), *_odd_runs()]


def test_a_run_sent_to_a_worker_is_read_back_as_it_was() -> None:
    runs = _runs()
    received = _received(sent_run(index, run) for index, run in enumerate(runs))
    _released()
    assert [index for index, _ in received] == list(range(len(runs)))
    for (_, back), run in zip(received, runs, strict=True):
        assert (back.case_id, back.repetition, back.assertions) == (
            run.case_id,
            run.repetition,
            run.assertions,
        )
        assert back.flow == run.flow
        if run.trajectory is None:
            assert back.trajectory is None
            continue
        assert back.trajectory is not None
        # NaN is never equal to itself: compare what a NaN cannot hide in.
        assert back.trajectory.model_dump_json() == run.trajectory.model_dump_json()
        assert back.trajectory.model_fields_set == run.trajectory.model_fields_set
        assert back.scores == []  # the imported scores stay with the driver
    nan_run = received[-2][1].trajectory
    assert nan_run is not None
    assert math.isnan(nan_run.metadata["ratio"])  # type: ignore[arg-type]
    step: Any = nan_run.steps[0]
    assert math.isnan(step.result["value"])


def _score(**fields: Any) -> Score:
    return Score(name="s", **fields)


@pytest.mark.parametrize(
    ("first", "second", "shared"),
    [
        (_score(value=1.0, passed=True), _score(value=1.0, passed=True), True),
        (_score(metadata={"k": [1, {"a": "b"}]}), _score(metadata={"k": [1, {"a": "b"}]}), True),
        (_score(value=0.0), _score(value=-0.0), False),
        (_score(value=float("nan")), _score(value=float("nan")), False),
        (_score(value=math.nan), _score(value=None), False),
        (_score(metadata={"k": 1}), _score(metadata={"k": 1.0}), False),
        (_score(metadata={"k": True}), _score(metadata={"k": 1}), False),
        (_score(metadata={"a": 1, "b": 2}), _score(metadata={"b": 2, "a": 1}), False),
        (_score(), _score(value=None), False),  # the fields the scorer set differ
        (_score(explanation="x"), _score(explanation="y"), False),
    ],
)
def test_scores_are_shared_only_when_exactly_alike(
    first: Score, second: Score, shared: bool
) -> None:
    kept = _Alike().shared([first, second])
    assert kept[0] is first
    assert (kept[1] is first) is shared
    if not shared:
        assert kept[1] is second


def test_a_score_assigned_a_tuple_is_not_shared_with_its_list_twin() -> None:
    listed, tupled = _score(metadata={"k": [1, 2]}), _score(metadata={"k": [1, 2]})
    tupled.metadata["k"] = (1, 2)  # type: ignore[assignment]
    kept = _Alike().shared([listed, tupled])
    assert kept[1] is tupled


class _PickledEngine:
    """Runs a work as the Ray engine does, without Ray: the portable work, batches by
    bucket, items and results through pickle."""

    name: EngineName = "ray"

    def describe(self) -> str:
        return "pickled"

    async def run(
        self, work: Work[Any, Any], items: Iterable[Any], emit: Callable[[Any], Awaitable[None]]
    ) -> None:
        portable = pickle.loads(pickle.dumps(work.portable()))
        batches: list[list[Any]] = [[], [], []]
        for item in items:
            batches[bucket_of(work.key(item), len(batches))].append(item)
        for batch in batches:
            results: list[Any] = []

            async def keep(result: Any, results: list[Any] = results) -> None:
                results.append(result)

            await portable.run(pickle.loads(pickle.dumps(batch)), keep)
            for result in pickle.loads(pickle.dumps(results)):
                await emit(result)


def _assert_same_scores(engine: Any, runs: list[ImportedRun], cases: dict[str, AgentCase]) -> None:
    scorers = _scorers()
    expected = asyncio.run(score_runs(runs, scorers, cases=cases))
    work = AgentScoreWork(scorers, specs=[s.spec for s in scorers], cases=cases)
    got: dict[int, list[Score]] = {}

    async def keep(item: tuple[int, list[Score]]) -> None:
        assert item[0] not in got
        got[item[0]] = item[1]

    sent = [sent_run(index, run) for index, run in enumerate(runs)]
    asyncio.run(engine.run(work, sent, keep))
    assert sorted(got) == list(range(len(runs)))
    for index, scored in enumerate(expected):
        scores = got[index]
        assert [s.model_dump_json() for s in scores] == [s.model_dump_json() for s in scored.scores]
        assert [s.model_fields_set for s in scores] == [s.model_fields_set for s in scored.scores]


def _assert_same_report(engine: Any, runs: list[ImportedRun], cases: dict[str, AgentCase]) -> None:
    scorers = _scorers()
    here = asyncio.run(score_agent_runs_on(LocalEngine(), runs, scorers, cases=cases))
    there = asyncio.run(score_agent_runs_on(engine, runs, scorers, cases=cases))
    assert there.to_json() == here.to_json()
    assert here.n_trajectories == len(runs)


def test_scores_that_travel_through_pickle_are_the_local_ones() -> None:
    _assert_same_scores(_PickledEngine(), _runs(), CASES)


def test_a_report_scored_through_pickle_is_the_local_one() -> None:
    _assert_same_report(_PickledEngine(), _runs(), CASES)


@needs_ray
@pytest.mark.ray_cluster
def test_scores_and_report_on_ray_are_the_local_ones(ray_cluster: Cluster) -> None:
    from arbiter.engines.ray import RayEngine

    runs = _runs()
    with RayEngine(ray_cluster.address, batch_size=8) as engine:
        _assert_same_scores(engine, runs, CASES)
        _assert_same_report(engine, runs, CASES)


def test_a_batch_of_alike_runs_sends_back_one_object_per_distinct_score() -> None:
    run = load_runs([EXAMPLES / "support-v1.jsonl"])[0]
    scorers = _scorers()
    work = AgentScoreWork(scorers, specs=[s.spec for s in scorers])
    results: list[tuple[int, list[Score]]] = []

    async def keep(item: tuple[int, list[Score]]) -> None:
        results.append(item)

    asyncio.run(work.run([sent_run(index, run) for index in range(20)], keep))
    assert [index for index, _ in results] == list(range(20))
    distinct = {id(score) for _, scores in results for score in scores}
    assert len(distinct) == len(scorers)  # twenty runs alike: each scorer's score once
    one = len(pickle.dumps(results[:1]))
    assert len(pickle.dumps(results)) < 2 * one  # nineteen more runs cost references only
