"""The run store: datasets by content hash, runs, and per-pair results."""

from arbiter.store.repository import PairResult, RunInfo, RunStatus, Store

__all__ = ["PairResult", "RunInfo", "RunStatus", "Store"]
