"""The shared limits' own logic, without Ray: the token bucket on a fake clock, the
limits actor's class called directly, and the gate a worker's calls go through."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arbiter.engines.rate import CallLimit, TokenBucket, most_in_window
from arbiter.engines.ray_limits import ClusterGate, SharedLimit


class FakeClock:
    """Seconds that move only when the test moves them."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_calls_asked_at_once_start_one_interval_apart_after_the_burst() -> None:
    clock = FakeClock()
    bucket = TokenBucket(CallLimit(per_second=4, burst=2), clock=clock)
    assert [bucket.reserve() for _ in range(5)] == [0.0, 0.0, 0.25, 0.5, 0.75]
    assert bucket.starts() == [0.0, 0.0, 0.25, 0.5, 0.75]
    assert bucket.granted == 5


def test_a_quiet_spell_refills_the_bucket_up_to_its_burst_and_no_further() -> None:
    clock = FakeClock()
    bucket = TokenBucket(CallLimit(per_second=10, burst=3), clock=clock)
    for _ in range(3):
        bucket.reserve()
    clock.now = 100.0  # long enough for 1,000 tokens: the bucket holds 3
    assert [bucket.reserve() for _ in range(4)] == pytest.approx([0.0, 0.0, 0.0, 0.1])


@settings(max_examples=200, deadline=None)
@given(
    gaps=st.lists(st.floats(min_value=0, max_value=2, allow_nan=False), min_size=1, max_size=80),
    per_second=st.floats(min_value=0.5, max_value=50),
    burst=st.integers(min_value=1, max_value=5),
    window=st.sampled_from([0.1, 0.5, 1.0, 3.0]),
)
def test_no_window_of_the_clock_sees_more_starts_than_burst_plus_rate_times_its_length(
    gaps: list[float], per_second: float, burst: int, window: float
) -> None:
    clock = FakeClock()
    bucket = TokenBucket(CallLimit(per_second=per_second, burst=burst), clock=clock)
    asked = []
    for gap in gaps:
        clock.now += gap
        asked.append(clock.now)
        wait = bucket.reserve()
        assert wait >= 0
    starts = bucket.starts()
    assert len(starts) == len(gaps) == bucket.granted
    assert all(start >= ask for start, ask in zip(starts, asked, strict=True))
    assert most_in_window(starts, window) <= burst + per_second * window + 1e-9


@pytest.mark.parametrize(
    ("starts", "window", "most"),
    [([], 1.0, 0), ([5.0], 1.0, 1), ([0.0, 1.0, 2.0], 1.0, 1), ([0.0, 0.5, 0.99, 2.0], 1.0, 3)],
)
def test_most_in_window_counts_a_half_open_stretch(
    starts: list[float], window: float, most: int
) -> None:
    assert most_in_window(starts, window) == most


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"concurrency": 0}, "concurrency must be at least 1, got 0"),
        ({"per_second": 0.0}, "per_second must be a positive number, got 0.0"),
        ({"per_second": float("inf")}, "per_second must be a positive number, got inf"),
        ({"per_second": 1.0, "burst": 0}, "burst must be at least 1, got 0"),
    ],
)
def test_a_call_limit_refuses_values_below_their_least(
    arguments: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        CallLimit(**arguments)


def test_a_bucket_needs_a_rate() -> None:
    with pytest.raises(ValueError, match="needs a rate"):
        TokenBucket(CallLimit(concurrency=3))


def test_the_limits_actor_keeps_its_bucket_while_the_rate_is_unchanged() -> None:
    clock = FakeClock()
    limits = SharedLimit(4, rate=CallLimit(per_second=2), clock=clock)
    assert [limits.reserve(), limits.reserve()] == [0.0, 0.5]
    limits.configure(6, CallLimit(per_second=2))  # the next run, the same rate
    assert limits.reserve() == 1.0
    assert limits.state()["granted"] == 3
    limits.configure(6, None)
    assert limits.reserve() == 0.0
    assert limits.state()["per_second"] == 0


def test_a_task_renewing_keeps_its_calls_slots_and_a_silent_one_loses_them() -> None:
    clock = FakeClock()
    limits = SharedLimit(None, ttl=10.0, clock=clock)
    limits.configure(2, None)

    async def scenario() -> None:
        assert await limits.acquire("task-a/0", 1) == 1
        assert await limits.acquire("task-b/0", 1) == 1
        clock.now = 8.0
        limits.renew("task-a")  # task a's worker is alive; task b's went silent
        clock.now = 15.0
        assert limits.state()["held"] == 1
        assert await limits.acquire("task-c/0", 1) == 1  # b's slot was taken back

    asyncio.run(scenario())
    assert limits.state()["peak"] == 2


class _Handle:
    """A stand-in for a Ray actor handle: ``handle.method.remote(...)`` is awaitable."""

    def __init__(self, target: SharedLimit) -> None:
        self._target = target

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._target, name)

        class Remote:
            @staticmethod
            def remote(*args: Any) -> Awaitable[Any]:
                async def call() -> Any:
                    result = method(*args)
                    return await result if asyncio.iscoroutine(result) else result

                return call()

        return Remote()


def test_the_gate_waits_what_the_bucket_says_and_holds_a_providers_slot_per_call() -> None:
    clock = FakeClock()
    provider = SharedLimit(1, rate=CallLimit(per_second=10), clock=clock)
    waits: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        waits.append(seconds)

    gate = ClusterGate(
        {"openai": _Handle(provider)},
        per_call=frozenset({"openai"}),
        holder="task",
        sleep=fake_sleep,
    )

    async def scenario() -> list[str]:
        order: list[str] = []
        first_in = asyncio.Event()
        let_go = asyncio.Event()

        async def call(name: str, hold: Callable[[], Awaitable[Any]] | None) -> None:
            async with gate("openai"):
                order.append(f"{name} in")
                if hold is not None:
                    first_in.set()
                    await hold()
                order.append(f"{name} out")

        first = asyncio.create_task(call("first", let_go.wait))
        await first_in.wait()
        second = asyncio.create_task(call("second", None))
        for _ in range(20):  # the second call gets no slot while the first holds it
            await asyncio.sleep(0)
        assert order == ["first in"]
        let_go.set()
        await asyncio.gather(first, second)
        async with gate("elsewhere"):  # a name without shared limits passes at once
            order.append("elsewhere")
        return order

    assert asyncio.run(scenario()) == ["first in", "first out", "second in", "second out",
                                       "elsewhere"]  # fmt: skip
    assert waits == [pytest.approx(0.1)]  # the second call's token was lent ahead
    assert provider.state()["held"] == 0
    assert provider.state()["granted"] == 2


class _Counted(_Handle):
    """A handle that counts the trips made to its actor."""

    def __init__(self, target: SharedLimit) -> None:
        super().__init__(target)
        self.trips = 0

    def __getattr__(self, name: str) -> Any:
        self.trips += 1
        return super().__getattr__(name)


def test_a_call_to_a_name_without_a_rate_or_per_call_slot_asks_its_actor_nothing() -> None:
    # A system's concurrency is its tasks' shares, held by the task: its calls need no
    # trip to the actor, which would otherwise be one trip per call of the whole cluster
    # to one actor (the I/O bench ran at 10.7x its ideal through that).
    system = _Counted(SharedLimit(200))
    rated = _Counted(SharedLimit(None, rate=CallLimit(per_second=1000, burst=10)))
    gate = ClusterGate(
        {"http:svc": system, "openai": rated}, rated=frozenset({"openai"}), holder="task"
    )

    async def scenario() -> None:
        for _ in range(5):
            async with gate("http:svc"):
                pass
            async with gate("openai"):
                pass

    asyncio.run(scenario())
    assert system.trips == 0
    assert rated.trips == 5  # one token per call
    assert rated._target.state()["granted"] == 5


def test_a_gated_pair_work_passes_each_system_call_and_model_call_through_the_gate() -> None:
    import contextlib
    from collections.abc import AsyncIterator
    from pathlib import Path

    from arbiter.contract import Example, RunConfig
    from arbiter.harness.runner import PairWork
    from arbiter.service.engines import run_parts
    from arbiter.service.runs import system_description
    from arbiter.service.scoring import scorer_specs

    passed: list[str] = []

    @contextlib.asynccontextmanager
    async def gate(name: str) -> AsyncIterator[None]:
        passed.append(name)
        yield

    target = f"{Path(__file__).with_name('systems.py')}:answer"
    description = system_description("python", target)
    specs = scorer_specs(["label", "rubric:rubric=Is the answer right?"])
    parts = run_parts(description, {}, specs, use_cache=False)
    work = PairWork(None, None, RunConfig(), parts=parts, limit_key="the-system").gated(gate)
    items = [(Example(id=f"e{i}", input={"q": "x"}, expected="x"), 0) for i in range(4)]
    results: list[Any] = []

    async def keep(result: Any) -> None:
        results.append(result)

    asyncio.run(work.limited(2).run(items, keep))
    assert len(results) == 4
    assert all(len(result.scores) == 2 for result in results)
    assert sorted(passed) == ["mock"] * 4 + ["the-system"] * 4
