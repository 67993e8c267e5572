"""The local engine: the work runs in this process, on every item at once.

This is the code path every run takes without ``--engine``: the work's own pool keeps
its ``concurrency`` items in flight and emits each result the moment it completes. Given
a gate (the run's ``--rate-limit``, a :class:`~arbiter.engines.rate.LocalGate`), every
call of a work that lets its calls be gated passes it, as on a cluster.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar

from arbiter.engines.base import CallGate, EngineName, Work

__all__ = ["LocalEngine"]

T = TypeVar("T")
R = TypeVar("R")


class LocalEngine:
    """Runs work in the calling process (the default engine).

    Args:
        gate: What every system call of a work passes (a work with ``gated``); None:
            calls pass at once. A work's model calls pass it when its scorers were built
            with the same gate (``ScoringContext(gate=...)``).
    """

    def __init__(self, gate: CallGate | None = None) -> None:
        self.gate = gate

    @property
    def name(self) -> EngineName:
        """``local``."""
        return "local"

    def describe(self) -> str:
        """``local (this process)``."""
        return "local (this process)"

    async def run(
        self, work: Work[T, R], items: Iterable[T], emit: Callable[[R], Awaitable[None]]
    ) -> None:
        """Run ``work`` over every item here."""
        gated = getattr(work, "gated", None)
        if self.gate is not None and callable(gated):
            work = gated(self.gate)
        await work.run(items, emit)
