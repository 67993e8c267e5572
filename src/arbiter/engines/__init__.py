"""Where work runs: this process (``local``, the default) or a Ray cluster (``ray``).

Both engines run the same code per item (:class:`~arbiter.engines.base.Work`); the Ray
engine is an optional extra (``pip install 'arbiter[ray]'``) and Ray is imported only
when a Ray engine is opened. Names resolve on first use (PEP 562)::

    from arbiter.engines import LocalEngine, RayEngine

    with RayEngine(address="auto") as engine:   # or a local cluster for the run
        report = run_eval(system, dataset, engine=engine, parts=parts)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from arbiter.engines.base import (
        ENGINE_NAMES,
        CallGate,
        Engine,
        EngineName,
        Work,
        bucket_of,
        derived_seed,
    )
    from arbiter.engines.local import LocalEngine
    from arbiter.engines.rate import CallLimit
    from arbiter.engines.ray import RayEngine

__all__ = [
    "ENGINE_NAMES",
    "CallGate",
    "CallLimit",
    "Engine",
    "EngineName",
    "LocalEngine",
    "RayEngine",
    "Work",
    "bucket_of",
    "derived_seed",
]

_WHERE = {
    "ENGINE_NAMES": "arbiter.engines.base",
    "CallGate": "arbiter.engines.base",
    "CallLimit": "arbiter.engines.rate",
    "Engine": "arbiter.engines.base",
    "EngineName": "arbiter.engines.base",
    "Work": "arbiter.engines.base",
    "bucket_of": "arbiter.engines.base",
    "derived_seed": "arbiter.engines.base",
    "LocalEngine": "arbiter.engines.local",
    "RayEngine": "arbiter.engines.ray",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'arbiter.engines' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
