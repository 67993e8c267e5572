"""Call limits by name: how many calls may be in flight and how many may start a second.

A :class:`CallLimit` names both for one system or one model provider. The rate is kept
by a :class:`TokenBucket` that hands out *reservations*: each call asks for a token and
is told how long to wait before it may start, so the bucket never blocks and its own
clock decides every start. Over any stretch of ``W`` seconds of that clock, at most
``burst + per_second * W`` calls start (:func:`most_in_window` counts them).

Pure code over an injected clock: the Ray engine keeps one bucket per name in an actor
(:mod:`arbiter.engines.ray_limits`), the local engine one per name in its process
(:class:`LocalGate`), and the tests drive one with a fake clock.

Examples:
    >>> now = [0.0]
    >>> bucket = TokenBucket(CallLimit(per_second=2, burst=1), clock=lambda: now[0])
    >>> [bucket.reserve() for _ in range(3)]
    [0.0, 0.5, 1.0]
    >>> most_in_window(bucket.starts(), 1.0)
    2
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass

__all__ = ["CallLimit", "LocalGate", "TokenBucket", "most_in_window"]

KEPT_STARTS = 100_000
"""Start times a bucket keeps for its accounting (the most recent ones)."""


@dataclass(frozen=True)
class CallLimit:
    """The limits on calls to one system or provider, shared by a whole cluster.

    Raises:
        ValueError: A limit below its least value (a concurrency below 1, a rate not
            above 0 or not finite, a burst below 1).
    """

    concurrency: int | None = None
    """Calls in flight at once; None: the run's ``--concurrency`` (for a system) or no
    cluster-wide limit (for a provider)."""
    per_second: float | None = None
    """Calls that may start per second; None: no rate limit."""
    burst: int = 1
    """Calls that may start at once after a quiet spell (the bucket's size)."""

    def __post_init__(self) -> None:
        if self.concurrency is not None and self.concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {self.concurrency}")
        if self.per_second is not None and not (
            math.isfinite(self.per_second) and self.per_second > 0
        ):
            raise ValueError(f"per_second must be a positive number, got {self.per_second}")
        if self.burst < 1:
            raise ValueError(f"burst must be at least 1, got {self.burst}")


class TokenBucket:
    """A token bucket of ``limit.per_second`` tokens a second, holding ``limit.burst``.

    Args:
        limit: Its rate and burst (``per_second`` must be set).
        clock: Seconds, never decreasing (``time.monotonic`` by default).
        keep: Start times kept for :meth:`starts`.

    Raises:
        ValueError: ``limit`` has no rate.
    """

    def __init__(
        self,
        limit: CallLimit,
        *,
        clock: Callable[[], float] = time.monotonic,
        keep: int = KEPT_STARTS,
    ) -> None:
        if limit.per_second is None:
            raise ValueError("a token bucket needs a rate (per_second)")
        self.limit = limit
        self.clock = clock
        self.granted = 0
        """Tokens handed out so far."""
        self._rate = limit.per_second
        self._tokens = float(limit.burst)
        self._stamp = clock()
        self._starts: deque[float] = deque(maxlen=keep)

    def reserve(self) -> float:
        """Take one token: the seconds to wait before the call may start (0: now).

        A token not yet in the bucket is lent against the future, so callers who ask
        at once are spaced ``1 / per_second`` apart in the order they asked.
        """
        now = self.clock()
        elapsed = max(0.0, now - self._stamp)
        self._tokens = min(float(self.limit.burst), self._tokens + elapsed * self._rate)
        self._stamp = now
        self._tokens -= 1.0
        wait = 0.0 if self._tokens >= 0 else -self._tokens / self._rate
        self._starts.append(now + wait)
        self.granted += 1
        return wait

    def starts(self) -> list[float]:
        """When the kept calls may start (the bucket's clock), earliest first."""
        return sorted(self._starts)


def most_in_window(starts: Iterable[float], window: float) -> int:
    """The most start times in any half-open stretch ``[t, t + window)``.

    Examples:
        >>> most_in_window([0.0, 0.4, 0.9, 1.0, 1.2], 1.0)
        4
    """
    ordered = sorted(starts)
    most = 0
    first = 0
    for last, start in enumerate(ordered):
        while ordered[first] <= start - window:
            first += 1
        most = max(most, last - first + 1)
    return most


class LocalGate:
    """The shared limits of the local engine: the calls of this process, by name, through
    a token bucket (a name with a rate) and a semaphore (a name with a concurrency).

    What :class:`~arbiter.engines.ray_limits.ClusterGate` is to a cluster's workers,
    for one process: ``async with gate(name):`` around each call to a system or provider.

    Args:
        limits: The limits by system or provider name; a name not here passes at once.
        clock: The buckets' clock (``time.monotonic`` by default).
        sleep: How a call waits for its token (``asyncio.sleep``; tests pass a fake).
    """

    def __init__(
        self,
        limits: Mapping[str, CallLimit],
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.limits = dict(limits)
        self.sleep = sleep
        self.buckets = {
            name: TokenBucket(limit, clock=clock)
            for name, limit in self.limits.items()
            if limit.per_second is not None
        }
        self._slots = {
            name: asyncio.Semaphore(limit.concurrency)
            for name, limit in self.limits.items()
            if limit.concurrency is not None
        }

    @contextlib.asynccontextmanager
    async def __call__(self, name: str) -> AsyncIterator[None]:
        """Hold the limits of ``name`` for one call."""
        slots = self._slots.get(name)
        async with slots if slots is not None else contextlib.nullcontext():
            bucket = self.buckets.get(name)
            if bucket is not None:
                wait = bucket.reserve()
                if wait > 0:
                    await self.sleep(wait)
            yield
