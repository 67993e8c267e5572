"""What the offline harness needs from a store: the sink it is handed, declared here.

The harness never imports the store; :class:`arbiter.store.Store` implements this
Protocol, and a test (or a program) can hand the runner anything else that does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from arbiter.contract import Dataset, PairResult, RunInfo, RunStatus

__all__ = ["Lease", "RunStore"]


class Lease(Protocol):
    """The right to execute one run, held while the run executes."""

    def renew(self) -> None:
        """Refresh the heartbeat that shows the holder is alive."""
        ...

    def release(self) -> None:
        """Give the run up."""
        ...


class RunStore(Protocol):
    """Where a run's header, segments and per-pair results go, and come back from."""

    def create_run(
        self,
        *,
        dataset: Dataset,
        system: dict[str, Any],
        config: dict[str, Any],
        n_pairs: int,
        name: str | None = None,
        tags: dict[str, str] | None = None,
    ) -> str:
        """Register a new run (with its name and tags, if given) and return its id."""
        ...

    def acquire_lease(self, run_id: str) -> Lease:
        """Take the right to execute ``run_id``; raise ``RunBusy`` while another holds it."""
        ...

    def start_segment(self, run_id: str) -> int:
        """Record that execution starts (or resumes) now; return the segment's number."""
        ...

    def end_segment(
        self, run_id: str, segment: int, status: RunStatus, *, elapsed_seconds: float
    ) -> None:
        """Close a segment and move the run to ``status``."""
        ...

    def save_summary(self, run_id: str, summary: dict[str, Any]) -> None:
        """Keep a run's headline figures with its header."""
        ...

    def add_results(self, run_id: str, results: Sequence[PairResult]) -> None:
        """Persist completed pairs, in one transaction."""
        ...

    def get_run(self, run_id: str) -> RunInfo:
        """A run's header (a unique prefix of its id is enough)."""
        ...

    def load_dataset(self, content_hash: str) -> Dataset:
        """The dataset stored under ``content_hash``."""
        ...

    def results(self, run_id: str) -> list[PairResult]:
        """Every stored result of a run."""
        ...
