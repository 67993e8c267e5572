"""check_answer stores every decision; parked answers are owner-scoped and resolved once."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sqlalchemy import text

from arbiter.contract import ModelCalls, ToolCall
from arbiter.contract.gate import GateDecision, GateScope
from arbiter.errors import InputError, StoreError
from arbiter.judges.grounding_gate import WITHHELD_FOR_REVIEW, ScopeRuling
from arbiter.service.grounding_gate import (
    check_answer,
    get_gate_decision,
    list_gate_decisions,
    list_parked_answers,
    resolve_parked_answer,
    scope_judge,
)
from arbiter.store import Store
from arbiter.store.gate_repository import load_gate_review, save_gate_decision
from arbiter.telemetry import Telemetry

SCOPE = GateScope(databases=("fleet_ops",), description="Fleet maintenance.")
DRIFTED = "T-118 costs the most: the finance_ledger database shows $18,400 in invoices."
CLEAN = "There are 42 open work orders in fleet_ops.work_orders."
CALL = ToolCall(name="run_sql", arguments={"database": "fleet_ops", "sql": "SELECT 1"})
T0 = datetime(2026, 3, 1, tzinfo=UTC)


class Judge:
    """A scope judge answering one verdict at a known cost."""

    def __init__(self, verdict: Literal["faithful", "drifted", "unknown"] = "drifted") -> None:
        self.verdict = verdict

    async def __call__(self, *, question: str, answer: str, scope: GateScope) -> ScopeRuling:
        calls = ModelCalls(calls=1, input_tokens=120, output_tokens=30, cost_usd=0.002)
        return ScopeRuling(verdict=self.verdict, reasoning="about finance", calls=calls)


async def park(store: Store, owner: str | None, answer: str = DRIFTED) -> GateDecision:
    return await check_answer(
        store,
        answer,
        question="Which vehicle costs most?",
        tool_calls=[CALL],
        scope=SCOPE,
        mode="review",
        judge=Judge(),
        owner=owner,
    )


async def test_every_decision_is_stored_as_decided_with_its_judge_cost(store: Store) -> None:
    decision = await check_answer(
        store, DRIFTED, question="q", tool_calls=[CALL], scope=SCOPE, mode="enforce", judge=Judge()
    )
    assert decision.action == "withhold"
    stored = get_gate_decision(store, decision.id)
    assert stored == decision
    assert stored.reasons == ("answer_reference_out_of_scope",)
    assert stored.out_of_scope_references == ("finance_ledger",)
    assert stored.judge_calls == ModelCalls(
        calls=1, input_tokens=120, output_tokens=30, cost_usd=0.002
    )


async def test_observe_is_stored_too_and_off_is_not(store: Store) -> None:
    observed = await check_answer(store, DRIFTED, question="q", scope=SCOPE)
    await check_answer(store, DRIFTED, question="q", scope=SCOPE, mode="off")
    assert [d.id for d in list_gate_decisions(store)] == [observed.id]
    assert (observed.mode, observed.action, observed.needs_judge) == ("observe", "deliver", True)


async def test_a_store_that_refuses_the_decision_fails_open_and_says_so(tmp_path: Path) -> None:
    broken = Store(f"sqlite:///{tmp_path / 'store.db'}")
    with broken.engine.begin() as connection:
        connection.execute(text("DROP TABLE gate_decisions"))
    decision = await check_answer(
        broken, DRIFTED, question="q", tool_calls=[CALL], scope=SCOPE, mode="enforce", judge=Judge()
    )
    broken.close()
    assert decision.action == "withhold"  # decided as it would be with a working store
    assert decision.errors[-1].startswith("sink: StoreUnavailable: cannot store a gate decision")


async def test_decisions_are_exported_as_spans_with_their_cost(store: Store) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    decision = await check_answer(
        store,
        DRIFTED,
        question="q",
        tool_calls=[CALL],
        scope=SCOPE,
        mode="enforce",
        judge=Judge(),
        telemetry=Telemetry(tracer_provider=provider),
    )
    (span,) = exporter.get_finished_spans()
    attributes = dict(span.attributes or {})
    assert attributes["arbiter.gate.decision_id"] == decision.id
    assert attributes["arbiter.gate.judge_cost_usd"] == 0.002
    assert attributes["arbiter.gate.judge_input_tokens"] == 120
    assert attributes["arbiter.gate.action"] == "withhold"


async def test_a_panel_judge_is_given_at_least_one_call_timeout(store: Store) -> None:
    judge = scope_judge(["mock"])
    decision = await check_answer(
        store, DRIFTED, question="q", scope=SCOPE, mode="enforce", judge=judge, timeout=0.001
    )
    # The mock answers at once; with the floor the ruling (an abstention) arrives in time.
    assert (decision.judge, decision.action) == ("unknown", "deliver_annotated")


def test_a_malformed_panel_configuration_is_an_input_error() -> None:
    with pytest.raises(InputError, match=r"scope judge: .*needs a model"):
        scope_judge(["openai"])


async def test_review_parks_for_its_owner_only(store: Store) -> None:
    ana = await park(store, "key-ana")
    ben = await park(store, "key-ben")
    cli = await park(store, None)
    assert ana.delivered == WITHHELD_FOR_REVIEW
    assert [i.decision.id for i in list_parked_answers(store, owner="key-ana")] == [ana.id]
    assert [i.decision.id for i in list_parked_answers(store, owner=None)] == [cli.id]
    everyone = {i.decision.id for i in list_parked_answers(store, everyone=True)}
    assert everyone == {ana.id, ben.id, cli.id}
    (item,) = list_parked_answers(store, owner="key-ben")
    assert (item.status, item.parked.answer, item.parked.owner) == ("pending", DRIFTED, "key-ben")


async def test_an_answer_of_another_owner_is_not_found(store: Store) -> None:
    ana = await park(store, "key-ana")
    with pytest.raises(StoreError, match="no parked answer"):
        resolve_parked_answer(store, ana.id, "release", reviewer="ben", owner="key-ben")
    with pytest.raises(StoreError, match="no gate decision"):
        get_gate_decision(store, ana.id, owner="key-ben")
    assert load_gate_review(store, ana.id) is None


async def test_release_hands_back_the_original_and_is_kept_as_a_review(store: Store) -> None:
    ana = await park(store, "key-ana")
    item = resolve_parked_answer(
        store, ana.id, "release", reviewer="ana", owner="key-ana", note="in scope", now=T0
    )
    assert (item.status, item.parked.answer) == ("released", DRIFTED)
    assert item.review is not None
    assert (item.review.reviewer, item.review.note, item.review.created_at) == (
        "ana",
        "in scope",
        T0,
    )
    assert list_parked_answers(store, owner="key-ana") == []
    (released,) = list_parked_answers(store, owner="key-ana", status="released")
    assert released.review == item.review
    assert get_gate_decision(store, ana.id, owner="key-ana") == ana  # never changed


async def test_a_parked_answer_is_resolved_once(store: Store) -> None:
    decision = await park(store, None)
    resolve_parked_answer(store, decision.id, "discard", reviewer="ops")
    with pytest.raises(StoreError, match=r"already resolved \(discarded by 'ops'\)"):
        resolve_parked_answer(store, decision.id, "release", reviewer="someone else")
    (item,) = list_parked_answers(store, status=None)
    assert item.status == "discarded"


async def test_an_administrator_resolves_any_owners_answer(store: Store) -> None:
    ana = await park(store, "key-ana")
    item = resolve_parked_answer(store, ana.id, "discard", reviewer="admin", everyone=True)
    assert item.status == "discarded"


async def test_a_decision_that_parked_nothing_cannot_be_resolved(store: Store) -> None:
    clean = await check_answer(
        store, CLEAN, question="q", scope=SCOPE, mode="review", judge=Judge()
    )
    assert clean.action == "deliver"
    with pytest.raises(StoreError, match="no parked answer"):
        resolve_parked_answer(store, clean.id, "release", reviewer="ops")


@pytest.mark.parametrize(
    ("resolution", "reviewer", "error", "match"),
    [
        ("approve", "ops", InputError, "'resolution' parameter"),
        ("release", "", InputError, "reviewer"),
    ],
)
async def test_a_bad_resolution_is_an_input_error(
    store: Store, resolution: str, reviewer: str, error: type[Exception], match: str
) -> None:
    decision = await park(store, None)
    with pytest.raises(error, match=match):
        resolve_parked_answer(store, decision.id, resolution, reviewer=reviewer)  # type: ignore[arg-type]
    assert load_gate_review(store, decision.id) is None


async def test_a_decision_is_stored_once(store: Store) -> None:
    decision = await park(store, None)
    with pytest.raises(StoreError, match="already stored"):
        save_gate_decision(store, decision)
