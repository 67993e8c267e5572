"""One retry policy for every outbound call: systems under test, providers, embedders, stores.

A failure is retried when it says it may pass on a second try (``error.retryable``:
connection failures, timeouts, 429, 5xx), at most ``retries`` times, after a delay that
honours the service's ``Retry-After`` (``error.retry_after``, capped) and otherwise grows
exponentially with "equal jitter" (half fixed, half random), so that many callers failing
together do not retry in lockstep. A :class:`RetryBudget` shared by the calls of one
client or run caps retries at a share of first attempts: when a service is down, the
retries stop adding load to it.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from arbiter.params import check_number

__all__ = ["RetryBudget", "RetryPolicy", "Retryable"]

T = TypeVar("T")


class Retryable(Protocol):
    """What a retried error tells: whether to try again, and after how long."""

    retryable: bool
    retry_after: float | None


@dataclass
class RetryBudget:
    """Retries allowed: ``minimum`` plus ``ratio`` of the first attempts made so far.

    Deterministic (no clock): the same calls get the same retries.

    Args:
        ratio: Retries per first attempt the budget earns (0.2: one retry per five calls).
        minimum: Retries always allowed, so a short run can still retry.
    """

    ratio: float = 0.2
    minimum: int = 10
    attempts: int = field(default=0, init=False)
    """First attempts recorded."""
    spent: int = field(default=0, init=False)
    """Retries taken."""
    refused: int = field(default=0, init=False)
    """Retries refused because the budget was exhausted."""

    def __post_init__(self) -> None:
        check_number(self.ratio, "ratio", "RetryBudget", minimum=0.0)
        check_number(self.minimum, "minimum", "RetryBudget", minimum=0, integer=True)

    def record_attempt(self) -> None:
        """Count one first attempt (it earns ``ratio`` retries)."""
        self.attempts += 1

    def try_spend(self) -> bool:
        """Take one retry if the budget allows it; False (and counted) when it does not."""
        if self.spent < self.minimum + self.ratio * self.attempts:
            self.spent += 1
            return True
        self.refused += 1
        return False


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to wait before trying a failed call again.

    Args:
        retries: Extra attempts after the first, for retryable failures only.
        base_s: Ceiling of the first backoff; doubles with each retry.
        cap_s: Largest backoff.
        max_retry_after_s: Largest wait a service's ``Retry-After`` can impose.
    """

    retries: int = 2
    base_s: float = 0.5
    cap_s: float = 30.0
    max_retry_after_s: float = 120.0

    def __post_init__(self) -> None:
        check_number(self.retries, "retries", "RetryPolicy", minimum=0, integer=True)
        for name in ("base_s", "cap_s", "max_retry_after_s"):
            check_number(getattr(self, name), name, "RetryPolicy", minimum=0.0)

    def delay(self, error: Retryable, attempt: int, rng: random.Random) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based) after ``error``.

        The service's own Retry-After wins (capped at ``max_retry_after_s``); otherwise
        exponential backoff from ``base_s``, capped at ``cap_s``, with equal jitter.
        """
        if error.retry_after is not None:
            return max(0.0, min(float(error.retry_after), self.max_retry_after_s))
        ceiling = min(self.cap_s, self.base_s * 2.0 ** (attempt - 1))
        return ceiling / 2 + rng.uniform(0, ceiling / 2)

    def should_retry(self, error: object, attempt: int, budget: RetryBudget | None) -> bool:
        """Whether failed attempt number ``attempt`` (1-based) may be followed by another."""
        if not getattr(error, "retryable", False) or attempt > self.retries:
            return False
        return budget is None or budget.try_spend()

    async def call(
        self,
        attempt: Callable[[], Awaitable[T]],
        *,
        rng: random.Random,
        budget: RetryBudget | None = None,
        retry_on: type[BaseException] | tuple[type[BaseException], ...] = Exception,
        deadline: float | None = None,
        clock: Callable[[], float] | None = None,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> T:
        """Await ``attempt()`` until it succeeds or may not be retried; re-raise the last error.

        Args:
            attempt: Makes one call.
            rng: Source of the jitter (seeded by the caller, for reproducible runs).
            budget: Shared cap on retries; None for none.
            retry_on: Exceptions considered at all (others propagate at once).
            deadline: When the whole call must be over (on ``clock``): a retry whose wait
                would end past it is not made, and the last error is raised at once.
            clock: The clock of ``deadline`` (default: the running loop's).
            sleep: How to wait (injected in tests).
        """
        if budget is not None:
            budget.record_attempt()
        now = clock or asyncio.get_running_loop().time
        number = 0
        while True:
            number += 1
            try:
                return await attempt()
            except retry_on as error:
                wait = self.delay(error, number, rng)  # type: ignore[arg-type]
                if deadline is not None and now() + wait >= deadline:
                    raise
                if not self.should_retry(error, number, budget):
                    raise
                await sleep(wait)
