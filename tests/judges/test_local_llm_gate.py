"""The grounding gate's scope judge on a real local model (SmolLM2-135M via ``llama_cpp``).

Served by ``../shared/tools/local-llm start``; skipped, with the reason shown, when no
server answers. The model is far too small to judge scope: only the plumbing is
asserted: a decision that follows from the ruling (withheld only on ``drifted``), the
call's tokens on the decision, and nothing raised.
"""

from __future__ import annotations

import pytest

from arbiter.config import Settings
from arbiter.contract import ToolCall
from arbiter.contract.gate import GateScope
from arbiter.judges.gate_judge import PanelScopeJudge
from arbiter.judges.grounding_gate import gate
from arbiter.scoring.base import ScoringContext
from tests.providers.test_local_llm import URL, server_up

MEMBER = {"provider": "llama_cpp", "model": "smollm2", "timeout": 180, "max_output_tokens": 256}
EXPECTED_ACTION = {
    "drifted": "withhold",
    "faithful": "deliver",
    "unknown": "deliver_annotated",
    "unavailable": "deliver_annotated",
    "timeout": "deliver_annotated",
}


async def test_a_real_model_scope_judge_decides_without_breaking_the_gate() -> None:
    if not await server_up(URL):
        pytest.skip(f"no local model server at {URL}: run ../shared/tools/local-llm start")
    context = ScoringContext(settings=Settings(llama_cpp_url=URL), use_cache=False)
    judge = PanelScopeJudge.build([MEMBER], context=context)
    try:
        decision = await gate(
            "T-118 costs the most: the finance_ledger database shows $18,400 in invoices.",
            question="Which vehicle costs us the most?",
            tool_calls=[ToolCall(name="run_sql", arguments={"database": "fleet_ops"})],
            scope=GateScope(databases=("fleet_ops",), description="Fleet maintenance."),
            mode="enforce",
            judge=judge,
            timeout=200.0,
        )
    finally:
        await context.aclose()
    assert decision.needs_judge
    assert decision.action == EXPECTED_ACTION[decision.judge]
    assert decision.judge_calls is not None
    assert decision.judge_calls.calls == 1
    assert decision.judge_calls.input_tokens > 0
