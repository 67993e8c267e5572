"""The real decomposed judges in the online pipeline, on fake models reached as real ones.

Sampling (every flagged item, a share of the clean ones), the cost of every call recorded
against its item, a hung member costing one timeout and never the caller, and the
config's errors.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from arbiter.config import Settings
from arbiter.contract import Trajectory
from arbiter.contract.trajectory import ToolCall
from arbiter.errors import InputError
from arbiter.online.build import build_pipeline
from arbiter.online.config import JudgePanelConfig, OnlineConfig
from arbiter.online.judge_panel import JudgedRun
from arbiter.online.pipeline import OnlinePipeline
from arbiter.online.rules import HeuristicRules
from arbiter.providers.registry import ProviderRegistry
from arbiter.scoring.base import ScoringContext
from arbiter.service.online_agents import TrajectoryScorers, trajectory_item
from arbiter.service.online_judges import online_judges, online_pipeline
from tests.conftest import Result
from tests.judges.conftest import FakeJudgeModel, answer
from tests.service.test_online_agents import finished

QUESTION = {"question": "What did order 1042 cost?"}


def models(**fakes: FakeJudgeModel) -> ScoringContext:
    """A context whose providers are the fakes, reached through a provider registry."""
    registry = ProviderRegistry()
    for name, fake in fakes.items():
        registry.register_provider(name, lambda settings, http, fake=fake: fake)
    return ScoringContext(settings=Settings(), providers=registry, use_cache=False)


def run(status: str = "completed", answer_text: str = "Order 1042 cost 25.0 USD.") -> Trajectory:
    return Trajectory(
        id=f"run-{status}",
        steps=[ToolCall(name="get_order", arguments={"id": "1042"}, result={"total": 25.0})],
        final_answer=answer_text,
        status=status,  # type: ignore[arg-type]
    )


def config(rate: float = 0.0, **panel: Any) -> OnlineConfig:
    return OnlineConfig(
        rules=HeuristicRules(rules=[]),
        grounding=None,
        sample_rate=rate,
        judge_panel=JudgePanelConfig(
            judges=["answer_groundedness", "instruction_following"],
            panel=panel.pop("panel", [{"provider": "alpha", "model": "m", "timeout": 5}]),
            **panel,
        ),
    )


def pipeline_of(context: ScoringContext, cfg: OnlineConfig) -> OnlinePipeline:
    # Only the stand-in scorer ``finished``: what flags a run is under the test's control.
    return online_pipeline(cfg, context=context, scorers=TrajectoryScorers(scorers=[finished()]))


async def test_a_flagged_run_is_judged_and_each_calls_cost_is_on_the_item() -> None:
    alpha = FakeJudgeModel("alpha", reply=answer("pass", quotes=("25.0",)))
    context = models(alpha=alpha)
    pipeline = pipeline_of(context, config())
    failed = await pipeline.evaluate(trajectory_item(run("error"), input=QUESTION))
    clean = await pipeline.evaluate(trajectory_item(run(), input=QUESTION))
    await pipeline.aclose()
    assert failed.escalation_reasons[0].startswith("scorers: failed")
    judged = failed.payload("judge_panel", JudgedRun)
    assert judged is not None
    assert judged.trigger == "flagged"
    assert judged.rulings == {"answer_groundedness": "pass", "instruction_following": "pass"}
    # Two judges, one member each: two calls of 100 + 20 tokens at 0.01 USD.
    assert (judged.model.calls, judged.model.input_tokens, judged.model.output_tokens) == (
        2,
        200,
        40,
    )
    assert judged.model.cost_usd == pytest.approx(0.02)
    by_name = {score.name: score for score in judged.scores}
    assert by_name["answer_groundedness"].model is not None
    assert by_name["answer_groundedness"].model.input_tokens == 100
    assert clean.layers["judge_panel"].status == "not_escalated"
    assert len(alpha.requests) == 2  # the clean run cost nothing


async def test_at_rate_one_every_clean_run_is_judged_too() -> None:
    context = models(alpha=FakeJudgeModel("alpha"))
    pipeline = pipeline_of(context, config(rate=1.0))
    result = await pipeline.evaluate(trajectory_item(run(), input=QUESTION))
    await pipeline.aclose()
    judged = result.payload("judge_panel", JudgedRun)
    assert judged is not None
    assert judged.trigger == "sampled"


async def test_a_hung_member_costs_one_timeout_and_the_others_vote() -> None:
    alpha = FakeJudgeModel("alpha", reply=answer("fail", quotes=("25.0",)))
    stuck = FakeJudgeModel("stuck", hang=True)
    context = models(alpha=alpha, stuck=stuck)
    panel = [
        {"provider": "alpha", "model": "m", "timeout": 5},
        {"provider": "stuck", "model": "m", "timeout": 0.05},
    ]
    pipeline = pipeline_of(context, config(panel=panel))
    result = await pipeline.evaluate(trajectory_item(run("error"), input=QUESTION))
    await pipeline.aclose()
    judged = result.payload("judge_panel", JudgedRun)
    assert judged is not None
    assert judged.rulings == {"answer_groundedness": "fail", "instruction_following": "fail"}
    votes = judged.scores[0].metadata["votes"]
    assert [(v["member"], v["vote"]) for v in votes] == [
        ("alpha:m", "fail"),
        ("stuck:m", "unknown"),
    ]
    assert votes[1]["error"] == "timeout after 0.05s"
    # The hung calls are counted (4 calls), their cost unknown: may have been billed.
    assert judged.model.calls == 4
    assert judged.model.cost_usd is None


async def test_a_member_that_raises_is_an_unknown_vote_not_an_error() -> None:
    broken = FakeJudgeModel("broken", error=RuntimeError("500 from the provider"))
    context = models(broken=broken)
    panel = [{"provider": "broken", "model": "m", "timeout": 5}]
    pipeline = pipeline_of(context, config(panel=panel))
    result = await pipeline.evaluate(trajectory_item(run("error"), input=QUESTION))
    await pipeline.aclose()
    assert result.layers["judge_panel"].status == "ran"
    judged = result.payload("judge_panel", JudgedRun)
    assert judged is not None
    assert set(judged.rulings.values()) == {"unknown"}


def test_the_budget_holds_one_full_call_whatever_was_configured() -> None:
    context = models(alpha=FakeJudgeModel("alpha"))
    panel = [{"provider": "alpha", "model": "m", "timeout": 20}]
    judges = online_judges(
        JudgePanelConfig(panel=panel, budget_s=5.0, margin_s=2.0), context=context
    )
    assert judges.budget_s == 22.0
    assert len(judges.names) == 8  # no judges named: all eight


@pytest.mark.parametrize(
    ("panel", "message"),
    [
        ({"judges": ["groundedness", "vibes"], "panel": ["mock"]},
         "judge_panel.judges[1]: no judge 'vibes'"),
        ({"panel": ["mock", "openai"]}, "judge_panel.panel[1]: "),
    ],
)  # fmt: skip
def test_a_bad_judge_panel_is_an_input_error_naming_the_field(
    panel: dict[str, Any], message: str
) -> None:
    cfg = OnlineConfig(judge_panel=JudgePanelConfig.model_validate(panel))
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("]", r"\]")):
        online_pipeline(cfg, context=ScoringContext(use_cache=False))


def test_build_pipeline_refuses_a_judge_panel_it_cannot_build() -> None:
    cfg = OnlineConfig(judge_panel=JudgePanelConfig(panel=["mock"]))
    with pytest.raises(InputError, match="judge_panel: the LLM judge panels are built by"):
        build_pipeline(cfg)


def test_arbiter_online_score_reports_the_judged_share_and_the_judges_cost(
    cli: Any, tmp_path: Path
) -> None:
    items = [trajectory_item(run("error"), input=QUESTION), trajectory_item(run(), input=QUESTION)]
    source = tmp_path / "turns.jsonl"
    source.write_text("".join(i.model_dump_json() + "\n" for i in items), encoding="utf-8")
    document = {
        "rules": [],
        "grounding": None,
        "judge_panel": {"judges": ["content_safety"], "panel": ["mock"], "budget_s": 5},
    }
    (tmp_path / "online.json").write_text(json.dumps(document), encoding="utf-8")
    result: Result = cli(
        "online", "score", str(source), "--config", str(tmp_path / "online.json"), "-q"
    )
    assert result.code == 0, result.err
    assert "judged by panel" in result.out
    assert "50.0%  (1/2;" in result.out
    assert re.search(r"judged because +flagged 1\n", result.out)
    assert "content_safety" in result.out
    summary = cli(
        "online", "score", str(source), "--config", str(tmp_path / "online.json"), "--json", "-q"
    )
    report = json.loads(summary.out)
    assert report["judged"]["count"] == 1
    assert report["judged_by_trigger"] == {"flagged": 1}
    assert report["judge_verdicts"] == {"content_safety": {"pass": 0, "fail": 0, "unknown": 1}}
    assert report["judge_usage"]["calls"] == 1
