"""What several trajectory scorers read of one run, worked out once and shared.

A case is scored by every scorer in turn on the same example and trajectory, and
many of them read the same things of it: the tool calls they grade, the calls'
canonical arguments, their pairing with the expected calls, the run's tasks, the
support text of the answer. :func:`shared` computes such a *feature* (a function of
the example and the trajectory) on first use and hands the same value to the next
scorer that asks for it.

The memo is small and keyed by identity. It keeps the features of the last
:data:`MEMO_PAIRS` (example, trajectory) pairs, holding the two objects themselves so
that their ids cannot be taken by other objects while the entry lives; a feature is
found only for the very same two objects. It assumes what the harness, the service and
the online pipeline do: a trajectory and its case are not mutated while they are being
scored (a caller that edits one in place between two scorings gets a fresh object by
``model_copy`` instead, or calls :func:`forget`). A feature must not be mutated by the
scorers that read it (features are tuples or frozen, or read as such), and a feature
that raises is not kept: the next scorer that asks raises the same error.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

from arbiter.contract import Example, Trajectory

__all__ = ["MEMO_PAIRS", "forget", "shared"]

MEMO_PAIRS = 8
"""Pairs whose features are kept: more than the cases a runner scores at once."""

T = TypeVar("T")


class _Entry:
    """The features computed so far for one (example, trajectory) pair."""

    __slots__ = ("example", "features", "trajectory")

    def __init__(self, example: Example, trajectory: Trajectory) -> None:
        self.example = example
        self.trajectory = trajectory
        self.features: dict[Callable[[Example, Trajectory], Any], Any] = {}


_entries: OrderedDict[tuple[int, int], _Entry] = OrderedDict()
_lock = threading.Lock()
_last: _Entry | None = None
"""The entry used last: the scorers of one case ask for it over and over."""


def _entry(example: Example, trajectory: Trajectory) -> _Entry:
    global _last
    last = _last
    if last is not None and last.example is example and last.trajectory is trajectory:
        return last
    key = (id(example), id(trajectory))
    with _lock:
        entry = _entries.get(key)
        if entry is None or entry.example is not example or entry.trajectory is not trajectory:
            entry = _entries[key] = _Entry(example, trajectory)
            if len(_entries) > MEMO_PAIRS:
                _entries.popitem(last=False)
        else:
            _entries.move_to_end(key)
        _last = entry
    return entry


def shared(
    feature: Callable[[Example, Trajectory], T], example: Example, trajectory: Trajectory
) -> T:
    """``feature(example, trajectory)``, computed once per pair and then kept.

    Args:
        feature: A pure function of the pair; the function object is the key, so it is
            defined once (at module level, or once per argument value).
        example: The case.
        trajectory: The run.
    """
    features = _entry(example, trajectory).features
    try:
        found: T = features[feature]
    except KeyError:
        found = features[feature] = feature(example, trajectory)
    return found


def forget() -> None:
    """Drop every kept feature (for a caller that mutates a scored run in place)."""
    global _last
    with _lock:
        _entries.clear()
        _last = None
