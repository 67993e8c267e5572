"""The local engine: the work runs in this process, on every item at once.

This is the code path every run takes without ``--engine``: the work's own pool keeps
its ``concurrency`` items in flight and emits each result the moment it completes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar

from arbiter.engines.base import EngineName, Work

__all__ = ["LocalEngine"]

T = TypeVar("T")
R = TypeVar("R")


class LocalEngine:
    """Runs work in the calling process (the default engine)."""

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
        await work.run(items, emit)
