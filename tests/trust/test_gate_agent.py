"""Stored gate decisions carry the agent whose answer they gated, so a backtest's gate
replay can be limited to one agent; an older store gains the column in place."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from arbiter.contract.gate import GateScope
from arbiter.judges.grounding_gate import ScopeRuling
from arbiter.service.backtest import run_backtest
from arbiter.service.grounding_gate import check_answer
from arbiter.store import Store
from arbiter.store.gate_repository import gate_decisions
from arbiter.trust import TrustPolicy

SCOPE = GateScope(databases=["sales"], description="Sales figures.")
DRIFTING = "Per the hr.salaries table, 4.2M."


class DriftJudge:
    async def __call__(self, *, question: str, answer: str, scope: GateScope) -> ScopeRuling:
        return ScopeRuling(verdict="drifted", reasoning="about HR, not sales")


def _gate(store: Store, agent: str | None, answer: str = DRIFTING) -> None:
    asyncio.run(
        check_answer(
            store,
            answer,
            question="Payroll?",
            scope=SCOPE,
            mode="enforce",
            judge=DriftJudge(),
            agent=agent,
        )
    )


def test_a_backtests_gate_replay_counts_only_the_named_agents_decisions(store: Store) -> None:
    for agent in ("alpha", "alpha", "beta", None):
        _gate(store, agent)
    policy = TrustPolicy()
    everyone = run_backtest(store, policy, current=policy, gate_mode="review")
    assert everyone.gate_decisions == 4
    alpha = run_backtest(store, policy, current=policy, gate_mode="review", agent="alpha")
    assert alpha.gate_decisions == 2
    assert alpha.gate_outcomes == {"would_go_to_judge": 2}
    assert (
        run_backtest(store, policy, current=policy, gate_mode="review", agent="zed").gate_decisions
        == 0
    )
    assert len(gate_decisions(store, everyone=True, agent="beta")) == 1


def test_an_older_store_gains_the_agent_column_and_keeps_its_decisions(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    made = Store(url)
    _gate(made, None)
    made.close()
    with sqlite3.connect(tmp_path / "old.db") as connection:
        connection.execute("DROP INDEX IF EXISTS ix_gate_decisions_agent")
        connection.execute("ALTER TABLE gate_decisions DROP COLUMN agent")
    reopened = Store(url)  # what an upgraded Arbiter opens
    try:
        assert len(gate_decisions(reopened, everyone=True)) == 1
        _gate(reopened, "alpha")
        assert len(gate_decisions(reopened, everyone=True, agent="alpha")) == 1
    finally:
        reopened.close()
