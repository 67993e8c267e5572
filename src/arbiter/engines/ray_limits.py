"""Limits shared by a whole Ray cluster: one actor per system or model provider.

A :class:`SharedLimit` is made a named Ray actor by :class:`~arbiter.engines.ray.RayEngine`
(named after the system or provider, in the ``arbiter`` namespace, so every run and
every worker calling it share it). It keeps both limits of its name:

- **concurrency**: a task asks for a share of the slots (:meth:`SharedLimit.acquire`)
  and gets at least one once one is free; it renews its share while it runs and gives
  it back at its end. A share not renewed for :data:`GRANT_TTL_S` (its worker died) is
  taken back. A model call takes one slot of its provider for the call's length;
- **rate**: every call first reserves a token of the name's
  :class:`~arbiter.engines.rate.TokenBucket` (:meth:`SharedLimit.reserve`), on the
  actor's clock, and waits as long as the bucket says before it starts.

A worker reaches them through a :class:`ClusterGate`: ``async with gate(name):`` around
each call to a system or a provider. Ray is never imported here: the actor's class is
plain Python, and the gate awaits the handles it is given.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from arbiter.engines.rate import CallLimit, TokenBucket, most_in_window

__all__ = ["GRANT_TTL_S", "ClusterGate", "SharedLimit", "limit_actor_name"]

GRANT_TTL_S = 20.0
"""A share of a limit is given back when its worker stops renewing it this long."""


def limit_actor_name(key: str) -> str:
    """The Ray actor name of the limits of ``key`` (a system or a provider name)."""
    return "arbiter-limit-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]


class SharedLimit:
    """The concurrency and rate limits of calls to one system or provider.

    Args:
        limit: Calls in flight at once; None: no concurrency limit.
        rate: The rate limit (``per_second`` and ``burst``); None: none.
        ttl: Seconds after which a share its holder stopped renewing is taken back.
        clock: The clock of shares and of the rate (``time.monotonic`` by default).
    """

    def __init__(
        self,
        limit: int | None,
        *,
        rate: CallLimit | None = None,
        ttl: float = GRANT_TTL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limit = None if limit is None else max(1, limit)
        self.ttl = ttl
        self.clock = clock
        self.grants: dict[str, tuple[int, float]] = {}
        self.peak = 0
        self.bucket: TokenBucket | None = None
        self._changed: asyncio.Condition | None = None
        self.configure(self.limit, rate)

    def configure(self, limit: int | None, rate: CallLimit | None) -> None:
        """Set both limits (the latest run's limits stand for every run); a rate that
        is unchanged keeps its bucket and its accounting."""
        self.limit = None if limit is None else max(1, limit)
        if rate is None or rate.per_second is None:
            self.bucket = None
        elif self.bucket is None or (
            (self.bucket.limit.per_second, self.bucket.limit.burst) != (rate.per_second, rate.burst)
        ):
            self.bucket = TokenBucket(rate, clock=self.clock)

    def _condition(self) -> asyncio.Condition:
        if self._changed is None:
            self._changed = asyncio.Condition()
        return self._changed

    def _held(self) -> int:
        now = self.clock()
        for holder, (_, renewed) in list(self.grants.items()):
            if now - renewed > self.ttl:
                del self.grants[holder]
        return sum(n for n, _ in self.grants.values())

    async def acquire(self, holder: str, want: int, limit: int | None = None) -> int:
        """Slots for ``holder``: between 1 and ``want``, once at least one is free.

        Args:
            holder: The task's own id (a call's: the task's id, ``/``, a number).
            want: The share it asks for.
            limit: The run's limit, which then stands for all; None: keep the current one.
        """
        if limit is not None:
            self.limit = max(1, limit)
        changed = self._condition()
        async with changed:
            while self.limit is not None and self.limit - self._held() < 1:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), timeout=self.ttl / 4)
            free = want if self.limit is None else self.limit - self._held()
            granted = min(max(1, want), free)
            self.grants[holder] = (granted, self.clock())
            self.peak = max(self.peak, self._held())
            return granted

    def renew(self, holder: str) -> None:
        """Show that ``holder``'s worker is alive (its calls' slots included)."""
        now = self.clock()
        for name, (n, _) in list(self.grants.items()):
            if name == holder or name.startswith(holder + "/"):
                self.grants[name] = (n, now)

    async def release(self, holder: str) -> None:
        """Give ``holder``'s share back."""
        changed = self._condition()
        async with changed:
            self.grants.pop(holder, None)
            changed.notify_all()

    def reserve(self) -> float:
        """One call's token: the seconds the call waits before it starts (0: none)."""
        return 0.0 if self.bucket is None else self.bucket.reserve()

    def starts(self) -> list[float]:
        """When the calls given tokens may start (the actor's clock, the most recent
        :data:`~arbiter.engines.rate.KEPT_STARTS`), earliest first."""
        return [] if self.bucket is None else self.bucket.starts()

    def state(self, window: float = 1.0) -> dict[str, float]:
        """``limit`` (0: none), slots ``held`` now, the ``peak`` held at once, and of the
        rate: ``per_second`` (0: none), tokens ``granted``, and ``most_in_window``, the
        most calls allowed to start in any ``window`` seconds of the actor's clock."""
        bucket = self.bucket
        return {
            "limit": float(self.limit or 0),
            "held": float(self._held()),
            "peak": float(self.peak),
            "per_second": float(bucket.limit.per_second or 0) if bucket else 0.0,
            "granted": float(bucket.granted) if bucket else 0.0,
            "most_in_window": float(most_in_window(bucket.starts(), window)) if bucket else 0.0,
        }


class ClusterGate:
    """What a worker's calls go through: ``async with gate(name):`` around each call.

    A name with a shared limit first reserves a rate token (and waits what the bucket
    says); a provider with a cluster-wide concurrency also holds one of its slots for
    the call. A name without a shared limit passes at once.

    Args:
        actors: The :class:`SharedLimit` actor handles, by system or provider name.
        per_call: The names whose calls each hold a slot (providers with a
            concurrency); a system's slots are its task's share, held by the task.
        rated: The names with a rate limit, whose calls each reserve a token; None:
            every name in ``actors``. A call to a name in neither set passes without
            asking its actor anything: a trip to one actor per call would make that
            actor the bottleneck of the whole cluster.
        holder: The task's own id (its calls' slots are renewed with it).
        sleep: How a call waits for its token (``asyncio.sleep``; tests pass a fake).
    """

    def __init__(
        self,
        actors: Mapping[str, Any],
        *,
        per_call: frozenset[str] = frozenset(),
        rated: frozenset[str] | None = None,
        holder: str = "",
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.actors = dict(actors)
        self.per_call = per_call
        self.rated = frozenset(self.actors) if rated is None else rated
        self.holder = holder
        self.sleep = sleep
        self._ids = itertools.count()

    @contextlib.asynccontextmanager
    async def __call__(self, name: str) -> AsyncIterator[None]:
        """Hold the limits of ``name`` for one call."""
        actor = self.actors.get(name)
        if actor is None or (name not in self.per_call and name not in self.rated):
            yield
            return
        slot = None
        if name in self.per_call:
            slot = f"{self.holder}/{next(self._ids)}"
            await actor.acquire.remote(slot, 1)
        try:
            if name in self.rated:
                wait = float(await actor.reserve.remote())
                if wait > 0:
                    await self.sleep(wait)
            yield
        finally:
            if slot is not None:
                with contextlib.suppress(Exception):
                    await actor.release.remote(slot)
