"""The breaker's own read of an agent's window gives exactly what the full read gives.

Random histories of stored runs (evaluated or not, of two owners, with trust-critical
verdicts, replaced and removed runs among them) are checked after every change: the
breaker's read (:func:`agent_window`) holds the same runs with the same verdicts as
:func:`trust_evidence`'s newest ``window_runs``, its columns are :func:`columns_of`'s,
the state it decides from them is the state :func:`assess` gives, and the conduct is
the same float.

A replaced run can come back under its old seq (SQLite reuses the highest rowid), so
a window kept between decisions by seq would go stale: the breaker reads it each time.
"""

from __future__ import annotations

import tempfile
from datetime import timedelta
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arbiter.contract import Score, StoredTrajectory
from arbiter.service.trust import window_columns
from arbiter.store import Store
from arbiter.store.models import Base
from arbiter.store.trajectory_repository import save_trajectories
from arbiter.store.trust_repository import (
    WindowRow,
    agent_window,
    trust_evidence,
    window_evidence,
)
from arbiter.trust import TrustPolicy, assess
from arbiter.trust.conduct import columns_of, window_state
from tests.trust.helpers import START

POLICY = TrustPolicy(min_runs_proven=2, min_runs_trusted=3, window_runs=3, half_life_days=2.0)
OWNERS = (None, "key-a")
NOW = START + timedelta(days=7)


def _run(
    key: int, agent: str, passed: bool | None, critical: bool | None, minutes: int
) -> StoredTrajectory:
    scores = [Score(name="cost", value=0.1, passed=passed)]
    if critical is not None or passed is not None:
        scores.append(Score(name="scope_adherence", value=1.0, passed=critical))
        scores.append(Score(name="output_sanity", value=1.0, passed=passed))
    return StoredTrajectory(
        id=f"tr-{agent}-{key:06d}",
        created_at=START + timedelta(minutes=minutes),
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
        st.sampled_from(["add", "add", "add", "replace", "remove"]),
        st.integers(0, 6),  # which run (by key): a replace or remove picks an earlier one
        st.sampled_from(OWNERS),
        verdicts,
        verdicts,
        st.integers(0, 6 * 24 * 60),  # minutes after START
    ),
    min_size=1,
    max_size=25,
)


def _read(store: Store, owner: str | None) -> list[WindowRow]:
    return agent_window(
        store, agent="a", owner=owner, names=POLICY.trust_critical, size=POLICY.window_runs
    )


def _reference(store: Store, owner: str | None) -> tuple[set[str], str, float | None]:
    evidence = trust_evidence(
        store,
        names=POLICY.trust_critical,
        agent="a",
        owner=owner,
        window=POLICY.window_runs,
        count_abstained=False,
    ).get((owner, "a"), [])
    status = assess("a", evidence, POLICY, now=NOW, owner=owner)
    return {e.run_id for e in evidence}, status.state, status.conduct


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations)
def test_the_kept_window_equals_a_full_read(steps: list[tuple[object, ...]]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        store = Store(f"sqlite:///{Path(folder) / 'store.db'}")
        Base.metadata.create_all(store.engine)
        owned: dict[int, str | None] = {}
        try:
            for action, key, owner, passed, critical, minutes in steps:
                assert isinstance(key, int)
                assert isinstance(minutes, int)
                chosen: str | None = owner  # type: ignore[assignment]
                if action == "remove" and key in owned:
                    save_trajectories(store, [], superseded=[f"tr-a-{key:06d}"])
                    chosen = owned.pop(key)
                else:
                    if action == "replace" and key in owned:
                        chosen = owned[key]  # a replacement keeps the run's owner
                    record = _run(key, "a", passed, critical, minutes)
                    save_trajectories(store, [record], owner=chosen)
                    owned[key] = chosen
                for who in OWNERS:
                    rows = _read(store, who)
                    evidence = window_evidence(rows)
                    ids, state, conduct = _reference(store, who)
                    assert {e.run_id for e in evidence} == ids
                    columns = window_columns(rows, frozenset(POLICY.trust_critical))
                    reference = columns_of(evidence, frozenset(POLICY.trust_critical))
                    assert sorted(zip(*columns, strict=True)) == sorted(
                        zip(*reference, strict=True)
                    )
                    assert window_state(*columns, POLICY, NOW) == state
                    fast = assess("a", evidence, POLICY, now=NOW, owner=who)
                    assert fast.state == state
                    assert fast.conduct == conduct  # the same float, not a close one
        finally:
            store.close()


def test_a_run_leaving_the_window_lets_an_older_one_in(store: Store) -> None:
    for key in range(5):
        save_trajectories(store, [_run(key, "a", True, True, key)])
    save_trajectories(store, [], superseded=["tr-a-000004"])  # the newest, removed
    save_trajectories(store, [_run(3, "a", None, None, 3)])  # the next, now unevaluated
    evidence = window_evidence(_read(store, None))
    assert sorted(e.run_id for e in evidence) == ["tr-a-000000", "tr-a-000001", "tr-a-000002"]
    assert {e.run_id for e in evidence} == _reference(store, None)[0]
