"""Load a stored run back into a report and its per-example correctness."""

from __future__ import annotations

from dataclasses import dataclass

from arbiter.contract import Example, Report
from arbiter.errors import StoreError
from arbiter.harness.report import build_report, per_example_correct
from arbiter.harness.runner import RunConfig, describe_system_short
from arbiter.store.repository import PairResult, RunInfo, Store

__all__ = ["StoredRun", "load_run"]


@dataclass(frozen=True)
class StoredRun:
    """A run read back from the store, with its recomputed report."""

    info: RunInfo
    config: RunConfig
    examples: list[Example]
    results: list[PairResult]
    report: Report

    @property
    def correct(self) -> dict[str, list[bool]]:
        """Per-example correctness per repetition."""
        return per_example_correct(self.examples, self.results)

    @property
    def complete(self) -> bool:
        """Whether every (example, repetition) pair has a result."""
        return len(self.results) >= self.info.n_pairs


def load_run(store: Store, run_id: str) -> StoredRun:
    """Read a run and recompute its report from the stored results.

    Raises:
        StoreError: No such run, or it has no result yet.
    """
    info = store.get_run(run_id)
    config = RunConfig.model_validate(info.config)
    dataset = store.load_dataset(info.dataset_hash)
    examples = dataset.examples[: config.limit] if config.limit else list(dataset.examples)
    results = store.results(info.id)
    if not results:
        raise StoreError(f"run {info.id} has no results yet")
    report = build_report(
        examples,
        results,
        dataset_name=dataset.name,
        dataset_hash=dataset.content_hash,
        system=describe_system_short(info.system),
        k=config.k,
        seed=config.seed,
        label_map=config.label_map,
        run_id=info.id,
        elapsed_seconds=info.elapsed_seconds or None,
    )
    return StoredRun(info=info, config=config, examples=examples, results=results, report=report)
