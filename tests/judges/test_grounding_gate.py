"""The grounding gate: every mode, the judge's rulings and failures, fail-open, records."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from arbiter.contract import ToolCall
from arbiter.errors import InputError
from arbiter.judges import gate_triggers, grounding_gate
from arbiter.judges.gate_triggers import GateScope, scope_trigger
from arbiter.judges.grounding_gate import (
    ANNOTATION,
    WITHHELD,
    WITHHELD_FOR_REVIEW,
    GateDecision,
    GateMode,
    ScopeRuling,
    gate,
)
from arbiter.telemetry import Telemetry

SCOPE = GateScope(
    databases=("fleet_ops",),
    entities=("work_orders", "vehicles"),
    description="Fleet maintenance: vehicles and their work orders.",
)
IN_SCOPE = "There are 42 open work orders in fleet_ops.work_orders."
DRIFTED = "T-118 costs the most: the finance_ledger database shows $18,400 in invoices."
REFUSAL = "Payroll lies outside the data I may use, so I cannot answer that."
IN_SCOPE_CALL = ToolCall(
    name="run_sql",
    arguments={"database": "fleet_ops", "sql": "SELECT count(*) FROM work_orders"},
    result=[{"count": 42}],
)
OUT_OF_SCOPE_CALL = ToolCall(
    name="run_sql",
    arguments={"database": "hr_payroll", "sql": "SELECT sum(x) FROM hr_payroll.salaries"},
)


class Judge:
    """A scope judge answering one verdict, counting its calls."""

    def __init__(self, verdict: Literal["faithful", "drifted", "unknown"] = "drifted") -> None:
        self.verdict = verdict
        self.calls: list[dict[str, Any]] = []

    async def __call__(self, *, question: str, answer: str, scope: GateScope) -> ScopeRuling:
        self.calls.append({"question": question, "answer": answer, "scope": scope})
        return ScopeRuling(verdict=self.verdict, reasoning="because")


class HangingJudge:
    """A judge that never answers (it waits on an event nobody sets)."""

    def __init__(self) -> None:
        self.cancelled = False

    async def __call__(self, *, question: str, answer: str, scope: GateScope) -> ScopeRuling:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        raise AssertionError("unreachable")


class FailingJudge:
    async def __call__(self, *, question: str, answer: str, scope: GateScope) -> ScopeRuling:
        raise ConnectionError("provider down")


async def run(
    answer: str,
    mode: GateMode,
    *,
    calls: list[ToolCall] | None = None,
    scope: GateScope = SCOPE,
    **options: Any,
) -> GateDecision:
    return await gate(
        answer,
        question="Which vehicle costs most?",
        tool_calls=calls if calls is not None else [IN_SCOPE_CALL],
        scope=scope,
        mode=mode,
        **options,
    )


async def test_off_computes_nothing_and_delivers() -> None:
    judge, stored = Judge(), list[GateDecision]()
    decision = await run(DRIFTED, "off", judge=judge, sink=stored.append)
    assert (decision.action, decision.delivered, decision.needs_judge) == (
        "deliver",
        DRIFTED,
        False,
    )
    assert decision.references == ()
    assert judge.calls == []
    assert stored == []


async def test_observe_records_the_trigger_and_never_alters_or_judges() -> None:
    judge, stored = Judge(), list[GateDecision]()
    decision = await run(DRIFTED, "observe", judge=judge, sink=stored.append)
    assert decision.action == "deliver"
    assert decision.delivered == DRIFTED
    assert decision.needs_judge
    assert decision.reasons == ("answer_reference_out_of_scope",)
    assert decision.out_of_scope_references == ("finance_ledger",)
    assert decision.judge == "not_called"
    assert judge.calls == []
    assert stored == [decision]


async def test_observe_is_the_default_mode() -> None:
    decision = await gate(DRIFTED, question="q", tool_calls=[], scope=SCOPE)
    assert decision.mode == "observe"
    assert decision.delivered == DRIFTED


async def test_annotate_appends_a_note_to_a_triggered_answer_without_a_judge() -> None:
    judge = Judge()
    decision = await run(DRIFTED, "annotate", judge=judge)
    assert decision.action == "deliver_annotated"
    assert decision.delivered == DRIFTED + ANNOTATION
    assert judge.calls == []


@pytest.mark.parametrize("mode", ["observe", "annotate", "enforce", "review"])
async def test_an_untriggered_answer_is_delivered_untouched(mode: GateMode) -> None:
    judge = Judge()
    decision = await run(IN_SCOPE, mode, judge=judge, owner="ana")
    assert (decision.action, decision.delivered, decision.needs_judge) == (
        "deliver",
        IN_SCOPE,
        False,
    )
    assert judge.calls == []  # never a judge call when nothing triggered


async def test_enforce_withholds_a_judge_confirmed_drift() -> None:
    judge = Judge("drifted")
    decision = await run(DRIFTED, "enforce", judge=judge)
    assert decision.action == "withhold"
    assert decision.delivered == WITHHELD
    assert decision.judge == "drifted"
    assert decision.judge_reasoning == "because"
    assert decision.parked is None
    assert judge.calls == [
        {"question": "Which vehicle costs most?", "answer": DRIFTED, "scope": SCOPE}
    ]


async def test_enforce_delivers_what_the_judge_finds_faithful() -> None:
    decision = await run(DRIFTED, "enforce", judge=Judge("faithful"))
    assert (decision.action, decision.delivered, decision.judge) == ("deliver", DRIFTED, "faithful")


async def test_an_honest_refusal_after_an_out_of_scope_call_is_not_withheld() -> None:
    decision = await run(REFUSAL, "enforce", calls=[OUT_OF_SCOPE_CALL], judge=Judge("faithful"))
    assert decision.needs_judge
    assert decision.reasons == ("tool_call_out_of_scope",)
    assert decision.out_of_scope_sources == ("hr_payroll",)
    assert decision.action == "deliver"
    assert decision.delivered == REFUSAL


@pytest.mark.parametrize(
    ("judge", "outcome"),
    [
        (Judge("unknown"), "unknown"),
        (FailingJudge(), "unavailable"),
        (None, "unavailable"),
    ],
    ids=["abstains", "raises", "absent"],
)
async def test_enforce_annotates_when_the_judge_cannot_decide(judge: Any, outcome: str) -> None:
    decision = await run(DRIFTED, "enforce", judge=judge)
    assert decision.judge == outcome
    assert decision.action == "deliver_annotated"
    assert decision.delivered == DRIFTED + ANNOTATION


async def test_a_hanging_judge_is_cut_off_by_the_timeout_and_annotates() -> None:
    judge = HangingJudge()
    decision = await run(DRIFTED, "enforce", judge=judge, timeout=0.01)
    assert decision.judge == "timeout"
    assert decision.action == "deliver_annotated"
    assert decision.delivered == DRIFTED + ANNOTATION
    assert judge.cancelled
    assert decision.errors == ("judge: no ruling within 0.01s",)


async def test_review_parks_the_withheld_original_with_its_owner() -> None:
    stored: list[GateDecision] = []
    decision = await run(DRIFTED, "review", judge=Judge("drifted"), owner="ana", sink=stored.append)
    assert decision.action == "park_for_review"
    assert decision.delivered == WITHHELD_FOR_REVIEW
    assert decision.parked is not None
    assert (decision.parked.owner, decision.parked.answer) == ("ana", DRIFTED)
    assert decision.owner == "ana"
    assert stored == [decision]


async def test_review_from_the_command_line_parks_with_no_owner() -> None:
    decision = await run(DRIFTED, "review", judge=Judge("drifted"))
    assert decision.action == "park_for_review"
    assert decision.parked is not None
    assert (decision.owner, decision.parked.owner, decision.parked.answer) == (None, None, DRIFTED)


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"mode": "block"}, "'mode' parameter"),
        ({"timeout": 0}, "'timeout' parameter"),
        ({"timeout": float("inf")}, "'timeout' parameter"),
        ({"timeout": True}, "'timeout' parameter"),
    ],
)
async def test_a_misconfigured_gate_is_an_input_error(options: dict[str, Any], match: str) -> None:
    arguments: dict[str, Any] = {"mode": "enforce", **options}
    with pytest.raises(InputError, match=match):
        await gate(DRIFTED, question="q", tool_calls=[], scope=SCOPE, **arguments)


@pytest.mark.parametrize(
    "answer",
    [
        "Twelve vehicles are out of service, about 4% of the fleet.",  # the result says 9
        "Average close time is 2.5 days, down 18% from 2025.",
    ],
)
async def test_numbers_alone_never_trigger(answer: str) -> None:
    judge = Judge()
    decision = await run(answer, "enforce", judge=judge)
    assert decision.unsupported_figures >= 1
    assert not decision.needs_judge
    assert decision.action == "deliver"
    assert judge.calls == []


def test_figures_the_results_hold_are_supported() -> None:
    call = ToolCall(name="q", arguments={}, result=[{"rate": 0.118, "n": 42}])
    trigger = scope_trigger("The rate is 11.8% over 42 orders.", [call], SCOPE)
    assert trigger.unsupported_figures == 0


async def test_without_a_declared_scope_the_gate_abstains() -> None:
    judge = Judge()
    decision = await run(
        DRIFTED, "enforce", scope=GateScope(), calls=[OUT_OF_SCOPE_CALL], judge=judge
    )
    assert not decision.scope_declared
    assert not decision.needs_judge
    assert decision.action == "deliver"
    assert judge.calls == []


@pytest.mark.parametrize("mode", ["observe", "annotate", "enforce", "review"])
async def test_a_trigger_error_delivers_the_original_answer(
    mode: GateMode, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object) -> None:
        raise RuntimeError("extractor bug")

    monkeypatch.setattr(grounding_gate, "scope_trigger", broken)
    decision = await run(DRIFTED, mode, judge=Judge(), owner="ana")
    assert decision.action == "deliver"
    assert decision.delivered == DRIFTED
    assert decision.errors == ("trigger: RuntimeError: extractor bug",)


async def test_a_ruling_that_cannot_be_read_counts_as_an_unavailable_judge() -> None:
    class Weird:
        """A ruling whose reasoning cannot even be read."""

        verdict = "drifted"

        @property
        def reasoning(self) -> str:
            raise ValueError("unreadable")

    async def judge(**kwargs: object) -> Any:
        return Weird()

    decision = await run(DRIFTED, "enforce", judge=judge)
    assert decision.judge == "unavailable"
    assert decision.action == "deliver_annotated"


async def test_a_gate_error_past_the_trigger_delivers_the_original_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def broken(*args: object) -> None:
        raise KeyError("bug")

    monkeypatch.setattr(grounding_gate, "_ask", broken)
    decision = await run(DRIFTED, "enforce", judge=Judge("drifted"))
    assert decision.action == "deliver"
    assert decision.delivered == DRIFTED
    assert decision.errors == ("gate: KeyError: 'bug'",)


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_a_failing_sink_is_recorded_and_the_decision_stands(asynchronous: bool) -> None:
    async def async_sink(decision: GateDecision) -> None:
        raise OSError("disk full")

    def sync_sink(decision: GateDecision) -> None:
        raise OSError("disk full")

    decision = await run(
        DRIFTED, "enforce", judge=Judge("drifted"), sink=async_sink if asynchronous else sync_sink
    )
    assert decision.action == "withhold"
    assert decision.errors == ("sink: OSError: disk full",)


async def test_an_async_sink_receives_the_decision() -> None:
    stored: list[GateDecision] = []

    async def sink(decision: GateDecision) -> None:
        stored.append(decision)

    decision = await run(DRIFTED, "observe", sink=sink)
    assert stored == [decision]


async def test_every_decision_is_exported_as_a_span() -> None:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    telemetry = Telemetry(tracer_provider=provider)
    await run(DRIFTED, "enforce", judge=HangingJudge(), timeout=0.01, telemetry=telemetry)
    (span,) = spans.get_finished_spans()
    assert span.name == "arbiter.grounding_gate"
    attributes = dict(span.attributes or {})
    assert attributes["arbiter.gate.mode"] == "enforce"
    assert attributes["arbiter.gate.action"] == "deliver_annotated"
    assert attributes["arbiter.gate.judge"] == "timeout"
    assert attributes["arbiter.gate.needs_judge"] is True
    assert attributes["arbiter.gate.out_of_scope_references"] == "finance_ledger"
    assert [event.name for event in span.events] == ["arbiter.gate.error"]


async def test_a_telemetry_failure_is_recorded_and_the_decision_stands() -> None:
    class Broken(Telemetry):
        def span(self, name: str, attributes: Any = None) -> Any:
            raise RuntimeError("exporter gone")

    decision = await run(DRIFTED, "enforce", judge=Judge("drifted"), telemetry=Broken())
    assert decision.action == "withhold"
    assert decision.errors == ("telemetry: RuntimeError: exporter gone",)


@pytest.mark.parametrize(
    ("vote", "verdict"), [("pass", "faithful"), ("fail", "drifted"), ("unknown", "unknown")]
)
def test_a_panel_vote_maps_to_a_scope_ruling(vote: Any, verdict: str) -> None:
    assert ScopeRuling.from_vote(vote).verdict == verdict


def test_the_trigger_reads_out_of_scope_calls_with_the_scope_primitives() -> None:
    trigger = gate_triggers.scope_trigger("Nothing to see.", [OUT_OF_SCOPE_CALL], SCOPE)
    assert trigger.needs_judge
    assert trigger.out_of_scope_sources == ("hr_payroll",)


@settings(max_examples=60, deadline=None)
@given(
    mode=st.sampled_from(["off", "observe", "annotate", "enforce", "review"]),
    verdict=st.sampled_from(["faithful", "drifted", "unknown"]),
    answer=st.sampled_from([IN_SCOPE, DRIFTED, REFUSAL]),
    out_of_scope_call=st.booleans(),
)
def test_only_a_judge_confirmed_drift_is_ever_withheld(
    mode: GateMode,
    verdict: Literal["faithful", "drifted", "unknown"],
    answer: str,
    out_of_scope_call: bool,
) -> None:
    calls = [IN_SCOPE_CALL, OUT_OF_SCOPE_CALL] if out_of_scope_call else [IN_SCOPE_CALL]
    decision = asyncio.run(run(answer, mode, calls=calls, judge=Judge(verdict)))
    if decision.action in ("withhold", "park_for_review"):
        assert (decision.judge, decision.mode) in {("drifted", "enforce"), ("drifted", "review")}
        assert decision.needs_judge
    if mode in ("off", "observe") or not decision.needs_judge:
        assert (decision.action, decision.delivered) == ("deliver", answer)
    if decision.action == "deliver_annotated":
        assert decision.delivered == answer + ANNOTATION
    assert (decision.parked is not None) == (decision.action == "park_for_review")
