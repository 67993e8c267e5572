"""The judges on a real local model: SmolLM2-135M through the ``llama_cpp`` provider.

Served by ``../shared/tools/local-llm start`` (OpenAI-compatible, http://127.0.0.1:8089/v1);
skipped, with the reason shown, when no server answers. The model is far too small to
judge: only the plumbing is asserted, a ruling or an ``unknown`` and never an exception,
and every call's tokens counted, on one judge and on a panel of one real member in the
online pipeline.
"""

from __future__ import annotations

import pytest

from arbiter.config import Settings
from arbiter.contract import Example, Output, Trajectory
from arbiter.contract.trajectory import ToolCall
from arbiter.judges.judges import answer_correctness
from arbiter.online.config import JudgePanelConfig, OnlineConfig
from arbiter.online.judge_panel import JudgedRun
from arbiter.online.rules import HeuristicRules
from arbiter.scoring.base import ScoringContext
from arbiter.service.online_agents import TrajectoryScorers, trajectory_item
from arbiter.service.online_judges import online_pipeline
from tests.providers.test_local_llm import URL, server_up
from tests.service.test_online_agents import finished

MEMBER = {"provider": "llama_cpp", "model": "smollm2", "timeout": 180, "max_output_tokens": 256}


async def _require_server() -> None:
    if not await server_up(URL):
        pytest.skip(f"no local model server at {URL}: run ../shared/tools/local-llm start")


async def test_a_real_model_judge_returns_a_ruling_or_unknown_without_an_exception() -> None:
    await _require_server()
    context = ScoringContext(settings=Settings(llama_cpp_url=URL), use_cache=False)
    judge = answer_correctness(judges=[MEMBER], context=context)
    example = Example(
        id="q1", input={"question": "What is the capital of France?"}, expected="Paris"
    )
    try:
        score = await judge(example, Output(text="The capital of France is Paris."))
    finally:
        await judge.aclose()
    assert score.error is None
    assert score.answer in {"pass", "fail", "unknown"}
    assert score.model is not None
    assert score.model.calls == 1
    assert score.model.input_tokens > 0
    assert score.model.output_tokens > 0


async def test_a_panel_of_one_real_member_judges_a_flagged_run_online() -> None:
    await _require_server()
    context = ScoringContext(settings=Settings(llama_cpp_url=URL), use_cache=False)
    config = OnlineConfig(
        rules=HeuristicRules(rules=[]),
        grounding=None,
        judge_panel=JudgePanelConfig(
            judges=["instruction_following", "answer_groundedness"], panel=[MEMBER]
        ),
    )
    run = Trajectory(
        id="run-1",
        steps=[ToolCall(name="get_order", arguments={"id": "1042"}, result={"total": 25.0})],
        final_answer="Order 1042 cost 25.0 USD.",
        status="error",
    )
    pipeline = online_pipeline(
        config, context=context, scorers=TrajectoryScorers(scorers=[finished()])
    )
    try:
        item = trajectory_item(run, input={"question": "What did order 1042 cost?"})
        result = await pipeline.evaluate(item)
    finally:
        await pipeline.aclose()
        await context.aclose()
    assert result.layers["judge_panel"].status == "ran", result.layers["judge_panel"].reason
    judged = result.payload("judge_panel", JudgedRun)
    assert judged is not None
    assert judged.trigger == "flagged"
    assert set(judged.rulings) == {"instruction_following", "answer_groundedness"}
    assert set(judged.rulings.values()) <= {"pass", "fail", "unknown"}
    assert all(score.error is None for score in judged.scores)
    assert judged.model.calls == 2
    assert judged.model.input_tokens > 0
    assert judged.model.output_tokens > 0
