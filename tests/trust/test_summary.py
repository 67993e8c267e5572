"""Trust status from the per-agent summaries equals trust status from the stored rows.

Random stores (agents of one name under several owners, evaluated runs and abstentions,
trust-critical verdicts decided, abstained or errored, times out of seq order and old
enough to be stale, runs replaced in place and removed as an OTLP re-import does) are
checked after every write: every status computed from the summaries is the status
computed from the rows, field by field (the conduct the same float), for the fleet, one
viewer, one owner and one agent; the breaker's state from the summary is the rows'; the
summaries kept write by write are the summaries built from the rows at once. The
summaries keep few runs here (``SUMMARY_RUNS`` lowered) so runs leave them and removals
make them read the rows again.

A store made before the summaries (its tables dropped) gets them built on first use.
"""

from __future__ import annotations

import asyncio
import tempfile
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select, text

from arbiter.contract import Score, StoredTrajectory
from arbiter.service.trust import evaluate_breaker, trust_statuses
from arbiter.store import Store, trust_summary
from arbiter.store.trajectory_repository import save_trajectories
from arbiter.store.trust_models import TrustAgentSummaryRow, TrustSummaryStateRow
from arbiter.store.trust_repository import agent_window, load_breaker
from arbiter.store.trust_summary import agent_summaries, agent_summary, build_summaries
from arbiter.trust import TrustPolicy
from arbiter.trust.conduct import window_state
from tests.trust.helpers import START, save, stored

OWNERS = (None, "key-a", "key-b")
AGENTS = ("a", "b")
NOW = START + timedelta(days=40)


@pytest.fixture
def few_kept(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(trust_summary, "SUMMARY_RUNS", 3)
    return 3


def _run(
    key: int, agent: str, passed: bool | None, dims: tuple[object, ...], day: int
) -> StoredTrajectory:
    scope, sanity, errored = dims
    scores = [Score(name="cost", value=0.1, passed=passed)]
    if scope is not None or passed is not None:
        scores.append(Score(name="scope_adherence", value=1.0, passed=scope))
        scores.append(Score(name="scope_adherence", value=1.0, passed=sanity))
    if errored:
        scores.append(Score(name="output_sanity", value=None, passed=True, error="boom"))
    return StoredTrajectory(
        id=f"tr-{agent}-{key:06d}",
        created_at=START + timedelta(days=day, minutes=key),
        kind="trajectory",
        agent=agent,
        source_format="trajectory",
        trajectory_hash="sha256:" + "0" * 64,
        status="completed",
        passed=passed,
        band=None,
        scores=scores,
    )


verdicts = st.one_of(st.none(), st.booleans())
operations = st.lists(
    st.tuples(
        st.sampled_from(["add", "add", "add", "add", "batch", "replace", "remove", "remove"]),
        st.integers(0, 14),  # which run (by key): a replace or remove picks an earlier one
        st.sampled_from(["a", "a", "a", "b"]),
        st.sampled_from([None, None, None, "key-a", "key-b"]),
        st.sampled_from([True, True, False, None]),
        st.tuples(verdicts, verdicts, st.booleans()),
        st.integers(0, 39),  # days after START: old runs are stale at NOW
    ),
    min_size=1,
    max_size=40,
)
policies = st.builds(
    TrustPolicy,
    window_runs=st.integers(1, 3),
    min_runs_proven=st.integers(1, 3),
    min_runs_trusted=st.integers(1, 4),
    half_life_days=st.sampled_from([0.5, 2.0, 14.0]),
    stale_days=st.sampled_from([1.0, 10.0, 30.0]),
    trust_dim_weight=st.sampled_from([0.0, 0.3, 1.0]),
    at_risk_floor=st.just(0.4),
    healthy_floor=st.just(0.6),
    trusted_floor=st.just(0.9),
)


def _summaries_now(store: Store) -> list[tuple[object, ...]]:
    table = TrustAgentSummaryRow.__table__
    with store.engine.connect() as connection:
        rows = connection.execute(select(table).order_by(table.c.owner_key, table.c.agent)).all()
    return [tuple(row) for row in rows if row.runs > 0]


def _check(store: Store, policy: TrustPolicy) -> None:
    fast = trust_statuses(store, policy=policy, now=NOW)
    slow = trust_statuses(store, policy=policy, now=NOW, from_rows=True)
    assert [s.model_dump() for s in fast] == [s.model_dump() for s in slow]
    for viewer in ("key-a",):
        assert trust_statuses(store, viewer=viewer, policy=policy, now=NOW) == trust_statuses(
            store, viewer=viewer, policy=policy, now=NOW, from_rows=True
        )
    for owner in OWNERS:
        for agent in AGENTS:
            one = trust_statuses(store, agent=agent, owner=owner, policy=policy, now=NOW)
            rows = trust_statuses(
                store, agent=agent, owner=owner, policy=policy, now=NOW, from_rows=True
            )
            assert one == rows
            summary = agent_summary(store, agent=agent, owner=owner)
            if summary is None:
                assert not rows
                continue
            window = agent_window(
                store, agent=agent, owner=owner, names=(), size=trust_summary.SUMMARY_RUNS
            )
            # It keeps the newest evaluated runs, as many as it may.
            assert len(summary.seqs) == min(trust_summary.SUMMARY_RUNS, summary.evaluated)
            newest = sorted({row[0] for row in window})[-len(summary.seqs) :]
            assert summary.seqs.tolist() == (newest if len(summary.seqs) else [])
            columns = summary.columns(policy.window_runs, frozenset(policy.trust_critical))
            assert window_state(*columns, policy, NOW) == rows[0].behaviour_state
            assert len(columns[0]) == min(policy.window_runs, len(summary.seqs))


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(operations, policies)
def test_status_from_the_summary_is_status_from_the_rows(
    few_kept: int, steps: list[tuple[object, ...]], policy: TrustPolicy
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        store = Store(f"sqlite:///{Path(folder) / 'store.db'}")
        owned: dict[tuple[str, int], str | None] = {}
        try:
            for action, key, agent, owner, passed, dims, day in steps:
                assert isinstance(key, int)
                assert isinstance(agent, str)
                assert isinstance(day, int)
                chosen: str | None = owner  # type: ignore[assignment]
                if action in ("remove", "replace") and owned:
                    # One of the stored runs, whichever it is.
                    agent, key = sorted(owned)[key % len(owned)]
                if action == "remove" and (agent, key) in owned:
                    save_trajectories(store, [], superseded=[f"tr-{agent}-{key:06d}"])
                    owned.pop((agent, key))
                elif action == "batch":
                    # A re-import: new runs stored in place of earlier ones of the trace.
                    gone = [f"tr-{a}-{k:06d}" for (a, k) in owned if k == key]
                    fresh = [_run(key + 10 + i, agent, passed, dims, day) for i in range(3)]  # type: ignore[arg-type]
                    save_trajectories(store, fresh, owner=chosen, superseded=gone)
                    owned = {k: v for k, v in owned.items() if k[1] != key}
                    owned.update({(agent, key + 10 + i): chosen for i in range(3)})
                else:
                    if action == "replace" and (agent, key) in owned:
                        chosen = owned[(agent, key)]  # a replacement keeps the run's owner
                    record = _run(key, agent, passed, dims, day)  # type: ignore[arg-type]
                    save_trajectories(store, [record], owner=chosen)
                    owned.setdefault((agent, key), chosen)
                _check(store, policy)
            kept = _summaries_now(store)
            with store.session() as session, session.begin():
                build_summaries(session)
            assert _summaries_now(store) == kept
        finally:
            store.close()


def test_a_window_larger_than_the_summary_reads_the_rows(store: Store, few_kept: int) -> None:
    save(store, [stored(i, "bot", i % 3 != 0) for i in range(12)])
    wide = TrustPolicy(window_runs=10, min_runs_proven=2)
    (summary,) = agent_summaries(store).values()
    assert not summary.covers(10)
    assert summary.covers(3)
    fast = trust_statuses(store, policy=wide, now=NOW)
    assert fast == trust_statuses(store, policy=wide, now=NOW, from_rows=True)
    assert fast[0].runs == 10


def test_a_store_made_before_the_summaries_gets_them_on_first_use(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    store = Store(url)
    save(store, [stored(i, "bot", i % 4 != 0) for i in range(30)], owner="key-a")
    save(store, [stored(100 + i, "bot", i % 2 == 0) for i in range(20)])
    store.close()
    # What the previous version left: the runs, and no summary tables.
    old = Store(url)
    with old.engine.begin() as connection:
        connection.execute(text("DROP TABLE trust_agent_summaries"))
        connection.execute(text("DROP TABLE trust_summary_state"))
    old.close()
    reopened = Store(url)
    try:
        with reopened.engine.connect() as connection:
            assert connection.execute(select(TrustSummaryStateRow.key)).all() == []
        policy = TrustPolicy()
        fast = trust_statuses(reopened, policy=policy, now=NOW)
        assert [(s.owner, s.runs) for s in fast] == [(None, 20), ("key-a", 30)]
        assert fast == trust_statuses(reopened, policy=policy, now=NOW, from_rows=True)
        with reopened.engine.connect() as connection:
            assert connection.execute(select(TrustSummaryStateRow.key)).all() == [("built",)]
        # Kept from then on by each write.
        save(reopened, [stored(200, "bot", False)], owner="key-a")
        after = trust_statuses(reopened, agent="bot", owner="key-a", policy=policy, now=NOW)
        assert after[0].runs == 31
        assert after == trust_statuses(
            reopened, agent="bot", owner="key-a", policy=policy, now=NOW, from_rows=True
        )
    finally:
        reopened.close()


def test_the_first_write_to_an_old_store_builds_its_summaries(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    store = Store(url)
    save(store, [stored(i, "bot", True) for i in range(15)])
    with store.engine.begin() as connection:
        connection.execute(text("DELETE FROM trust_agent_summaries"))
        connection.execute(text("DELETE FROM trust_summary_state"))
    store.close()
    reopened = Store(url)
    try:
        save(reopened, [stored(15, "bot", False)])
        (summary,) = agent_summaries(reopened).values()
        assert (summary.runs, summary.evaluated, len(summary.seqs)) == (16, 16, 16)
    finally:
        reopened.close()


def test_the_breaker_decides_from_the_summary(store: Store) -> None:
    policy = TrustPolicy(breaker_mode="notify", min_runs_proven=3, window_runs=5)
    save(store, [stored(i, "bot", True) for i in range(5)])
    bad = [stored(10 + i, "bot", False) for i in range(4)]
    save(store, bad)
    # Rows changed around save_trajectories (not a write Arbiter makes) are not seen:
    # the breaker reads the summary, not the runs.
    with store.engine.begin() as connection:
        connection.execute(text("UPDATE trajectories SET passed = TRUE"))
    (outcome,) = asyncio.run(evaluate_breaker(store, bad, owner=None, policy=policy, now=NOW))
    assert (outcome.state, outcome.tripped) == ("at_risk", True)
    assert load_breaker(store, None, "bot").trips == 1
    rows = trust_statuses(store, policy=policy, now=NOW, from_rows=True)
    assert rows[0].state != "at_risk"


def test_a_kept_run_removed_lets_an_older_one_in(store: Store, few_kept: int) -> None:
    save(store, [stored(i, "bot", i != 1) for i in range(6)])
    save_trajectories(store, [], superseded=[stored(5, "bot", True).id])  # the newest
    (summary,) = agent_summaries(store).values()
    assert (summary.runs, summary.evaluated) == (5, 5)
    assert len(summary.seqs) == 3  # read again from the rows: runs 2, 3 and 4
    policy = TrustPolicy(window_runs=3, min_runs_proven=1)
    assert trust_statuses(store, policy=policy, now=NOW) == trust_statuses(
        store, policy=policy, now=NOW, from_rows=True
    )
