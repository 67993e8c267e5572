"""The scope_faithfulness panel as the gate's scope judge: rulings, failures, cost."""

from __future__ import annotations

import json

import pytest

from arbiter.contract import ToolCall
from arbiter.contract.gate import GateDecision, GateScope
from arbiter.judges.gate_judge import PanelScopeJudge, scope_text
from arbiter.judges.grounding_gate import ANNOTATION, WITHHELD, gate
from arbiter.judges.judges import system_prompt
from arbiter.judges.panel import build_panel
from tests.judges.conftest import FakeJudgeModel, Models, answer, configs

SCOPE = GateScope(
    databases=("fleet_ops",),
    entities=("work_orders",),
    description="Fleet maintenance: vehicles and their work orders.",
)
QUESTION = "Which vehicle costs us the most?"
DRIFTED = "T-118 costs the most: the finance_ledger database shows $18,400 in invoices."
CALL = ToolCall(name="run_sql", arguments={"database": "fleet_ops", "sql": "SELECT 1"})


def panel_judge(models: Models, timeout: float = 5.0, **fakes: FakeJudgeModel) -> PanelScopeJudge:
    context = models(**fakes)
    return PanelScopeJudge(build_panel(configs(*fakes, timeout=timeout)), context)


async def enforce(judge: PanelScopeJudge) -> GateDecision:
    return await gate(
        DRIFTED,
        question=QUESTION,
        tool_calls=[CALL],
        scope=SCOPE,
        mode="enforce",
        judge=judge,
        timeout=10.0,
    )


async def test_a_drifted_majority_withholds_and_the_cost_is_on_the_decision(
    models: Models,
) -> None:
    judge = panel_judge(
        models,
        alpha=FakeJudgeModel("alpha", answer("fail", score=0.1, quotes=("finance_ledger",))),
        beta=FakeJudgeModel("beta", answer("fail", score=0.2)),
        gamma=FakeJudgeModel("gamma", answer("pass", score=0.9)),
    )
    decision = await enforce(judge)
    assert (decision.judge, decision.action, decision.delivered) == (
        "drifted",
        "withhold",
        WITHHELD,
    )
    assert decision.judge_calls is not None
    calls = decision.judge_calls
    assert (calls.calls, calls.input_tokens, calls.output_tokens) == (3, 300, 60)
    assert calls.cost_usd == pytest.approx(0.03)
    assert decision.judge_reasoning.startswith("fail (")


async def test_a_faithful_ruling_delivers_the_answer_intact(models: Models) -> None:
    judge = panel_judge(models, alpha=FakeJudgeModel("alpha", answer("pass")))
    decision = await enforce(judge)
    assert (decision.judge, decision.action, decision.delivered) == ("faithful", "deliver", DRIFTED)
    assert decision.judge_calls is not None
    assert decision.judge_calls.calls == 1


async def test_the_judge_reads_question_scope_and_answer_with_its_versioned_prompt(
    models: Models,
) -> None:
    fake = FakeJudgeModel("alpha", answer("pass"))
    await enforce(panel_judge(models, alpha=fake))
    (request,) = fake.requests
    assert request.system == system_prompt("scope_faithfulness")
    assert f"<question>\n{QUESTION}\n</question>" in request.prompt
    assert f"<scope>\n{scope_text(SCOPE)}\n</scope>" in request.prompt
    assert f"<answer>\n{DRIFTED}\n</answer>" in request.prompt
    assert "run_sql" not in request.prompt  # the judge never sees the tool calls


async def test_a_hanging_panel_times_out_annotates_and_counts_the_calls(models: Models) -> None:
    judge = panel_judge(models, timeout=0.05, alpha=FakeJudgeModel("alpha", hang=True))
    decision = await enforce(judge)
    assert (decision.judge, decision.action) == ("timeout", "deliver_annotated")
    assert decision.delivered == DRIFTED + ANNOTATION
    assert decision.judge_calls is not None
    assert decision.judge_calls.calls == 1
    assert decision.judge_calls.cost_usd is None  # a cut-off call may have been billed
    assert decision.errors == ("judge: alpha:m: timeout after 0.05s",)


async def test_a_failing_panel_is_unavailable_and_annotates(models: Models) -> None:
    judge = panel_judge(
        models, alpha=FakeJudgeModel("alpha", error=ConnectionError("provider down"))
    )
    decision = await enforce(judge)
    assert (decision.judge, decision.action) == ("unavailable", "deliver_annotated")
    assert "ConnectionError: provider down" in decision.errors[0]


async def test_one_hung_member_does_not_stop_the_others_from_ruling(models: Models) -> None:
    judge = panel_judge(
        models,
        timeout=0.05,
        alpha=FakeJudgeModel("alpha", answer("fail")),
        beta=FakeJudgeModel("beta", hang=True),
    )
    decision = await enforce(judge)
    assert (decision.judge, decision.action) == ("drifted", "withhold")
    assert decision.judge_calls is not None
    assert decision.judge_calls.calls == 2


async def test_an_unparseable_answer_is_an_unknown_ruling_that_annotates(models: Models) -> None:
    judge = panel_judge(models, alpha=FakeJudgeModel("alpha", "not json at all"))
    decision = await enforce(judge)
    assert decision.action == "deliver_annotated"
    assert decision.judge == "unavailable"  # the only member could not be read


async def test_a_tied_panel_fails_as_the_consensus_rule_says(models: Models) -> None:
    judge = panel_judge(
        models,
        alpha=FakeJudgeModel("alpha", answer("pass")),
        beta=FakeJudgeModel("beta", answer("fail")),
    )
    decision = await enforce(judge)
    assert (decision.judge, decision.action) == ("drifted", "withhold")


async def test_the_mock_panel_abstains_so_a_triggered_answer_is_annotated() -> None:
    decision = await enforce(PanelScopeJudge.build(["mock"]))
    assert (decision.judge, decision.action) == ("unknown", "deliver_annotated")
    assert decision.judge_calls is not None
    assert (decision.judge_calls.calls, decision.judge_calls.cost_usd) == (1, 0.0)


async def test_an_empty_panel_is_unavailable_naming_why() -> None:
    judge = PanelScopeJudge.build([{"provider": "mock", "enabled": False}])
    decision = await enforce(judge)
    assert (decision.judge, decision.action) == ("unavailable", "deliver_annotated")
    assert decision.errors == ("judge: empty panel: every judge configuration opted out: mock",)


async def test_the_mock_provider_answering_drift_withholds() -> None:
    from arbiter.config import Settings
    from arbiter.providers.mock import MockProvider
    from arbiter.providers.registry import ProviderRegistry
    from arbiter.scoring.base import ScoringContext

    mock = MockProvider(json.dumps(answer("fail", quotes=("finance_ledger database",))))
    registry = ProviderRegistry()
    registry.register_provider("scripted", lambda settings, http: mock)
    context = ScoringContext(settings=Settings(), providers=registry, use_cache=False)
    judge = PanelScopeJudge.build([{"provider": "scripted", "model": "m"}], context=context)
    decision = await enforce(judge)
    assert (decision.judge, decision.action) == ("drifted", "withhold")
    assert len(mock.requests) == 1


def test_the_scope_text_lists_the_declared_names_after_the_description() -> None:
    assert scope_text(SCOPE) == (
        "Fleet maintenance: vehicles and their work orders.\n"
        "Declared databases: fleet_ops\nDeclared entities: work_orders"
    )
    assert scope_text(GateScope(entities=("vehicles",))) == "Declared entities: vehicles"
