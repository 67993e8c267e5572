"""The engine seam: what runs a piece of work over many items, here or on a cluster.

An engine knows nothing of examples, lines or trajectories. The layer that owns the
work (the harness's pairs, the online pipeline's lines, the service's agent runs)
describes it as a :class:`Work`: how to run a list of items in this process, emitting
each result as it completes, and how to travel to another process. The engine decides
where that code runs:

- :class:`~arbiter.engines.local.LocalEngine` runs it here, on every item at once: the
  code path a run has always taken;
- :class:`~arbiter.engines.ray.RayEngine` splits the items into batches by a stable hash
  of their ids, runs the same code on each batch in a Ray task, and streams each batch's
  results back to the caller, which alone writes the store.

Nothing that decides a result may depend on where or in which order an item ran: what
needs randomness derives its seed from ids (:func:`derived_seed`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Iterable
from contextlib import AbstractAsyncContextManager
from typing import Literal, Protocol, TypeVar

__all__ = [
    "ENGINE_NAMES",
    "CallGate",
    "Emit",
    "Engine",
    "EngineName",
    "Work",
    "bucket_of",
    "derived_seed",
]

EngineName = Literal["local", "ray"]
"""The engines a run may name."""

ENGINE_NAMES: tuple[EngineName, ...] = ("local", "ray")
"""Every engine, the default first."""

T_contra = TypeVar("T_contra", contravariant=True)
R_co = TypeVar("R_co", covariant=True)
T = TypeVar("T")
R = TypeVar("R")

Emit = Callable[[R], Awaitable[None]]
"""Awaited with each result as it completes."""


class CallGate(Protocol):
    """What every outbound call of a work passes through on a cluster: ``async with
    gate(name):`` around one call to the system or provider ``name`` holds that name's
    shared limits (a rate token, a slot) for the call."""

    def __call__(self, name: str) -> AbstractAsyncContextManager[None]:
        """Hold the limits of ``name`` for one call."""
        ...


class Work(Protocol[T_contra, R_co]):
    """A piece of work an engine runs over items: the same code wherever it runs."""

    @property
    def concurrency(self) -> int:
        """Items this work keeps in flight at once (1 for pure computation)."""
        ...

    def key(self, item: T_contra) -> str:
        """The item's stable id (an example id and repetition, a line, a trace id)."""
        ...

    async def run(self, items: Iterable[T_contra], emit: Callable[[R_co], Awaitable[None]]) -> None:
        """Run every item, awaiting ``emit`` with each result as it completes.

        A failure that belongs to one item (a system that failed, a scorer that raised)
        is a result, never an exception: an exception is for the work as a whole.
        """
        ...

    def portable(self) -> Work[T_contra, R_co]:
        """This work in a form that can be sent to another process, which rebuilds
        there what cannot travel (a system's connections, providers, compiled scorers).

        Raises:
            InputError: The work holds something that cannot be rebuilt elsewhere (a
                system object given directly, not built from a description).
        """
        ...

    def limited(self, concurrency: int) -> Work[T_contra, R_co]:
        """The same work with at most ``concurrency`` items in flight."""
        ...


class Engine(Protocol):
    """Where work runs: this process, or a cluster."""

    @property
    def name(self) -> EngineName:
        """``local`` or ``ray``."""
        ...

    def describe(self) -> str:
        """One line saying where work runs (for the terminal)."""
        ...

    async def run(
        self, work: Work[T, R], items: Iterable[T], emit: Callable[[R], Awaitable[None]]
    ) -> None:
        """Run ``work`` over ``items``, awaiting ``emit`` with every result exactly once.

        Items are read lazily; on cancellation, work in flight is cancelled and no
        result is emitted after it.
        """
        ...


def _digest(*parts: str) -> bytes:
    hasher = hashlib.sha256()
    for part in parts:
        # Length-prefixed, so ("ab", "c") and ("a", "bc") never collide.
        encoded = part.encode("utf-8", "surrogatepass")
        hasher.update(len(encoded).to_bytes(8, "big"))
        hasher.update(encoded)
    return hasher.digest()


def bucket_of(key: str, buckets: int) -> int:
    """The bucket (0 .. ``buckets`` - 1) an item of id ``key`` belongs to.

    The same id lands in the same bucket in every process and every run (sha256, not
    Python's salted ``hash``).

    Raises:
        ValueError: ``buckets`` is below 1.
    """
    if buckets < 1:
        raise ValueError(f"buckets must be at least 1, got {buckets}")
    return int.from_bytes(_digest(key)[:8], "big") % buckets


def derived_seed(seed: int, *ids: str) -> int:
    """A seed for one item, from the run's seed and the item's ids: the same on every
    engine, worker and order."""
    return int.from_bytes(_digest(str(seed), *ids)[:8], "big")
