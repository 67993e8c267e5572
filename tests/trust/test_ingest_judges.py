"""Judge panels on ingested runs: who is judged (the agent's setting over the default, the
online pipeline's seeded draw), what is kept, when a delivered answer is condemned, and
that ingest never waits for the judges nor breaks with them.

The judges' model is an injected provider that counts every request it answers, so the
calls the judging layer reports are checked against what reached the model.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arbiter.config import Settings
from arbiter.contract import StoredTrajectory, Trajectory, Usage
from arbiter.contract.gate import GateScope
from arbiter.judges.grounding_gate import ScopeRuling
from arbiter.judging import JudgingContext
from arbiter.online.sampling import sampled
from arbiter.providers.base import CompletionResponse
from arbiter.server.app import create_app
from arbiter.service.grounding_gate import check_answer
from arbiter.service.inbox import inbox
from arbiter.service.online_agents import trajectory_item
from arbiter.service.trajectories import agent_run_scoring, run_of, score_and_store
from arbiter.service.trust_judging import IngestJudges, agent_judges, set_agent_judges
from arbiter.store import Store
from arbiter.store.api_key_repository import create_api_key
from arbiter.store.trust_judging_repository import list_rulings, save_agent_judge_setting
from arbiter.trust.judge_prefs import condemning_judges, resolve_judge_prefs
from tests.helpers import otlp_json as otlp

UNSUPPORTED = "Revenue was 9M."
SUPPORTED = "Revenue was 4.2M."


class CountingProvider:
    """Answers every judge with ``verdict``; counts requests; may hold each until released."""

    name = "counter"

    def __init__(self, verdict: str = "fail", *, hold: bool = False) -> None:
        self.verdict = verdict
        self.requests: list[Any] = []
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        if not hold:
            self.release.set()

    async def complete(self, request: Any) -> CompletionResponse:
        self.requests.append(request)
        self.started.set()
        await self.release.wait()
        answer = {"reasoning": "Checked.", "evidence": [], "verdict": self.verdict, "score": 0.0}
        usage = Usage(input_tokens=11, output_tokens=7, cost_usd=0.002)
        return CompletionResponse(text=json.dumps(answer), model=request.model, usage=usage)


class BrokenProvider:
    name = "counter"

    async def complete(self, request: Any) -> CompletionResponse:
        raise RuntimeError("the judge's model is down")


def _settings(**given: Any) -> Settings:
    base: dict[str, Any] = {
        "trust_judges": "on",
        "trust_judge_panel": "counter:m",
        "trust_judge_names": "answer_groundedness,content_safety",
        "trust_webhook_urls": "",
    }
    return Settings(_env_file=None, **{**base, **given})  # type: ignore[call-arg]


def _judges(provider: Any, **given: Any) -> IngestJudges:
    context = JudgingContext(settings=_settings(), use_cache=False, given={"counter": provider})
    built = IngestJudges.build(_settings(**given), context=context)
    assert built is not None
    return built


def _run(
    answer: str = UNSUPPORTED,
    *,
    agent: str = "bot",
    cost: float = 0.01,
    run_id: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> Trajectory:
    return Trajectory.model_validate(
        {
            "id": run_id,
            "agent": {"name": agent},
            "steps": [
                {"kind": "llm_call", "model": "m", "cost_usd": cost},
                {"kind": "tool_call", "name": "revenue", "arguments": {}, "result": "4.2M"},
            ],
            "final_answer": answer,
            "status": "completed",
            "metadata": metadata or {},
        }
    )


def _store_runs(
    store: Store, *runs: Trajectory, owner: str | None = None
) -> list[StoredTrajectory]:
    scoring = agent_run_scoring()
    return asyncio.run(
        score_and_store(store, [run_of(r) for r in runs], scoring=scoring, owner=owner)
    )


# -- the pure rules ----------------------------------------------------------------------

VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.sampled_from(["inherit", "on", "off", " ON ", "Off"]),
    st.lists(st.integers(), max_size=2),
)


@settings(max_examples=300, deadline=None)
@given(switch=VALUES, rate=VALUES, default_on=st.booleans(), default_rate=st.floats(-1, 2))
def test_resolved_preferences_are_always_usable(
    switch: Any, rate: Any, default_on: bool, default_rate: float
) -> None:
    prefs, warnings = resolve_judge_prefs(
        {"judges": switch, "sample_rate": rate}, default_on=default_on, default_rate=default_rate
    )
    assert 0.0 <= prefs.sample_rate <= 1.0
    word = switch.strip().lower() if isinstance(switch, str) else None
    if word in ("on", "off"):
        assert prefs.enabled is (word == "on")
        assert prefs.switch_from == "agent"
    else:
        assert prefs.enabled is default_on
        assert prefs.switch_from == "default"
    readable_switch = switch is None or word in ("inherit", "on", "off")
    readable_rate = rate is None or (
        isinstance(rate, int | float) and not isinstance(rate, bool) and rate == rate
    )
    assert len(warnings) == (not readable_switch) + (not readable_rate)
    if not readable_rate or rate is None:
        assert prefs.rate_from == "default"
        assert prefs.sample_rate == min(1.0, max(0.0, default_rate))


def test_a_withheld_answer_is_never_condemned() -> None:
    rulings = [("answer_groundedness", False), ("groundedness", None), ("content_safety", False)]
    family = {"groundedness", "answer_groundedness"}
    assert condemning_judges(rulings, family=family, withheld=False) == ["answer_groundedness"]
    assert condemning_judges(rulings, family=family, withheld=True) == []
    assert condemning_judges([("content_safety", False)], family=family, withheld=False) == []


# -- the service ---------------------------------------------------------------------------


def test_a_flagged_run_is_judged_and_its_ungrounded_answer_condemned_once(store: Store) -> None:
    provider = CountingProvider("fail")
    judges = _judges(provider)
    [record] = _store_runs(store, _run(cost=9.0), owner="key-a")  # over the cost line: flagged
    assert record.passed is False
    [judged] = asyncio.run(judges.judge_stored(store, [record], owner="key-a"))
    assert judged.trigger == "flagged"
    assert judged.rulings == {"answer_groundedness": "fail", "content_safety": "fail"}
    assert judged.condemned_by == ["answer_groundedness"]
    # The judging layer's count is the provider's own: one call per judge that had inputs.
    assert judged.model.calls == len(provider.requests) == 2
    assert judged.model.input_tokens == 22
    assert judged.model.cost_usd == pytest.approx(0.004)
    rulings = list_rulings(store, viewer="key-a")
    assert sorted(r.judge for r in rulings) == ["answer_groundedness", "content_safety"]
    assert all(r.model.calls == 1 and r.trigger == "flagged" for r in rulings)
    assert list_rulings(store, viewer="key-b") == []
    events = inbox(store, viewer="key-a")
    assert [(e.kind, e.severity, e.record_id) for e in events] == [
        ("judge_condemnation", "danger", record.id)
    ]
    # The same content again is not judged again; a new content is, but not condemned twice.
    [again] = asyncio.run(judges.judge_stored(store, [record], owner="key-a"))
    assert again.skipped == "judged before"
    assert len(provider.requests) == 2
    changed = record.model_copy(update={"trajectory_hash": "sha256:" + "1" * 64})
    [second] = asyncio.run(judges.judge_stored(store, [changed], owner="key-a"))
    assert second.condemned_by == ["answer_groundedness"]
    assert second.event_id is None
    assert len(inbox(store, viewer="key-a")) == 1
    # The stored run's verdict is the scorers', whatever the judges said.
    from arbiter.store.trajectory_repository import get_trajectory

    kept = get_trajectory(store, record.id, viewer=None)
    assert kept is not None
    assert (kept.passed, kept.convicted_by, kept.scores) == (
        record.passed,
        record.convicted_by,
        record.scores,
    )


def test_judges_that_pass_the_answer_condemn_nothing(store: Store) -> None:
    provider = CountingProvider("pass")
    [record] = _store_runs(store, _run(SUPPORTED, cost=9.0))
    [judged] = asyncio.run(_judges(provider).judge_stored(store, [record], owner=None))
    assert judged.rulings == {"answer_groundedness": "pass", "content_safety": "pass"}
    assert judged.condemned_by == []
    assert inbox(store) == []


def test_clean_runs_are_judged_by_the_same_seeded_draw_as_online_score(store: Store) -> None:
    runs = [_run(SUPPORTED, run_id=f"turn-{i}") for i in range(40)]
    records = _store_runs(store, *runs)
    assert all(r.passed for r in records)
    provider = CountingProvider("pass")
    judged = asyncio.run(
        _judges(provider, trust_judge_sample_rate=0.5, trust_judge_seed=7).judge_stored(
            store, records, owner=None
        )
    )
    expected = [sampled(trajectory_item(r).id, 0.5, 7) for r in runs]
    assert [j.judged for j in judged] == expected
    assert 5 < sum(expected) < 35
    assert all(j.trigger == "sampled" for j in judged if j.judged)
    assert len(provider.requests) == 2 * sum(expected)


def test_rate_zero_judges_only_what_a_scorer_condemned(store: Store) -> None:
    provider = CountingProvider("pass")
    clean, failed = _store_runs(store, _run(SUPPORTED), _run(SUPPORTED, cost=9.0))
    judged = asyncio.run(_judges(provider).judge_stored(store, [clean, failed], owner=None))
    assert [j.judged for j in judged] == [False, True]
    assert judged[0].skipped == "clean and not sampled"


def test_an_agents_own_setting_wins_over_the_default(store: Store) -> None:
    provider = CountingProvider("fail")
    judges = _judges(provider)  # judges on by default
    set_agent_judges(
        store, "quiet", owner=None, judges="off", sample_rate=None, by="ops", settings=_settings()
    )
    loud_settings = _settings(trust_judges="off")
    set_agent_judges(
        store, "loud", owner=None, judges="on", sample_rate=7, by="ops", settings=loud_settings
    )
    assert agent_judges(store, "loud", owner=None, settings=loud_settings).effective_rate == 1.0
    records = _store_runs(store, _run(agent="quiet", cost=9.0), _run(agent="loud", cost=9.0))
    off_by_default = _judges(provider, trust_judges="off")
    quiet, loud = asyncio.run(off_by_default.judge_stored(store, records, owner=None))
    assert quiet.skipped == "judges off for the agent"
    assert loud.judged
    assert [j.judged for j in asyncio.run(judges.judge_stored(store, records[:1], owner=None))] == [
        False
    ]


def test_a_malformed_stored_setting_falls_back_to_the_default_with_a_log_line(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    save_agent_judge_setting(
        store, "bot", owner=None, setting={"judges": "yes", "sample_rate": "lots"}, by="hand"
    )
    view = agent_judges(store, "bot", owner=None, settings=_settings())
    assert view.enabled is True  # the default: on
    assert len(view.warnings) == 2
    [record] = _store_runs(store, _run(cost=9.0))
    with caplog.at_level(logging.WARNING, logger="arbiter.service.trust_judging"):
        [judged] = asyncio.run(
            _judges(CountingProvider()).judge_stored(store, [record], owner=None)
        )
    assert judged.judged
    assert "is not inherit, on or off" in caplog.text


class DriftJudge:
    async def __call__(self, *, question: str, answer: str, scope: GateScope) -> ScopeRuling:
        return ScopeRuling(verdict="drifted", reasoning="about HR")


def test_an_answer_the_gate_withheld_records_no_condemnation(store: Store) -> None:
    decision = asyncio.run(
        check_answer(
            store,
            "Per the hr.salaries table, 4.2M.",
            question="Revenue?",
            scope=GateScope(databases=["sales"]),
            mode="enforce",
            judge=DriftJudge(),
            owner="key-a",
            tool_calls=[],
        )
    )
    [record] = _store_runs(
        store,
        _run("Per the hr.salaries table, 4.2M.", cost=9.0, metadata={"gate_decision": decision.id}),
        owner="key-a",
    )
    [judged] = asyncio.run(_judges(CountingProvider()).judge_stored(store, [record], owner="key-a"))
    assert decision.action == "withhold"
    assert judged.judged
    assert judged.withheld
    assert judged.rulings["answer_groundedness"] == "fail"  # judged, and kept, but...
    assert judged.condemned_by == []  # ...the gate acted already: no second count
    assert inbox(store, viewer="key-a") == []


def test_a_dead_judge_model_is_an_abstention_never_an_error_of_ingest(store: Store) -> None:
    [record] = _store_runs(store, _run(cost=9.0))
    [judged] = asyncio.run(_judges(BrokenProvider()).judge_stored(store, [record], owner=None))
    assert judged.judged
    assert set(judged.rulings.values()) == {"unknown"}
    assert inbox(store) == []


def test_no_panel_means_no_judges() -> None:
    assert IngestJudges.build(_settings(trust_judge_panel="")) is None


# -- over REST ----------------------------------------------------------------------------


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[dict[str, Any]]:
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    _, key = create_api_key(store, "team")
    app = create_app(_settings(home=tmp_path / "home"), store=store)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        yield {"client": client, "app": app, "store": store, "key": key}
    store.close()


async def test_ingest_answers_before_the_judges_rule_and_the_inbox_shows_their_condemnation(
    served: dict[str, Any],
) -> None:
    client, app, key = served["client"], served["app"], served["key"]
    provider = CountingProvider("fail", hold=True)
    app.state.ingest_judges = judges = _judges(provider)
    headers = {"Authorization": f"Bearer {key}"}
    body = {"trajectory": json.loads(_run(cost=9.0).model_dump_json()), "agent": "bot"}
    answer = await client.post("/v1/trajectories", json=body, headers=headers)
    assert answer.status_code == 201, answer.text
    run_id = answer.json()["items"][0]["id"]
    # The ingest has answered while the judges' model still holds its first call.
    await provider.started.wait()
    assert not provider.release.is_set()
    pending = await client.get("/v1/assurance/inbox", headers=headers)
    assert pending.json()["items"] == []
    provider.release.set()
    await judges.drain()
    events = (await client.get("/v1/assurance/inbox", headers=headers)).json()["items"]
    assert [(e["kind"], e["record_id"]) for e in events] == [("judge_condemnation", run_id)]
    setting = await client.get("/v1/agents/bot/judges", headers=headers)
    assert setting.json()["enabled"] is True


async def test_the_judges_setting_over_rest_and_otlp_traces_are_judged_too(
    served: dict[str, Any],
) -> None:
    client, app, key = served["client"], served["app"], served["key"]
    provider = CountingProvider("fail")
    app.state.ingest_judges = judges = _judges(provider, trust_judges="off")
    headers = {"Authorization": f"Bearer {key}"}
    bad = await client.put("/v1/agents/support/judges", json={"judges": "maybe"}, headers=headers)
    assert bad.status_code == 422
    put = await client.put(
        "/v1/agents/support/judges", json={"judges": "on", "sample_rate": 2}, headers=headers
    )
    assert put.status_code == 200, put.text
    assert (put.json()["enabled"], put.json()["effective_rate"]) == (True, 1.0)
    trace = "0af7651916cd43dd8448eb211c80319c"
    json_headers = {**headers, "Content-Type": "application/json"}
    spans = otlp.traces(*otlp.agent_spans(trace))
    logs = otlp.logs(*otlp.tool_call_logs(trace))
    assert (
        await client.post("/v1/traces", content=json.dumps(spans), headers=json_headers)
    ).status_code == 200
    assert (
        await client.post("/v1/logs", content=json.dumps(logs), headers=json_headers)
    ).status_code == 200
    await judges.drain()
    rulings = list_rulings(served["store"])
    assert {r.agent for r in rulings} == {"support"}
    assert any(r.model.calls for r in rulings)  # once the answer arrived, the judges were asked
    assert len(provider.requests) == sum(r.model.calls for r in rulings)
