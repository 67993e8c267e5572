"""Large stores for the pages, filled through the real ``Store`` as a run writes them.

:func:`seed_label_run` writes one completed run scored by ``label`` (a dataset, the run,
its results in batches) with as many distinct labels and results as asked; the page
tests use it for a run of 2,000 labels and ``bench/ui_pages.py`` for a store of 1,000
runs and 100,000 results.
"""

from __future__ import annotations

import random

from arbiter.contract import Dataset, Example, Output, PairResult, RunConfig, Score
from arbiter.store import Store

__all__ = ["seed_label_run"]

_COHORTS = ("wire", "card", "cash", "crypto")
_BATCH = 5_000


def seed_label_run(
    store: Store,
    n: int,
    *,
    labels: int = 2,
    right: float = 0.8,
    name: str | None = None,
    seed: int = 0,
) -> str:
    """A completed run of ``n`` examples (one result each) over ``labels`` distinct
    labels, ``right`` of them answered right; its id."""
    rnd = random.Random(seed or n)
    names = [f"label-{i:04d}" for i in range(labels)]
    examples = [
        Example(
            id=f"ex-{i:06d}",
            input={"amount": i, "memo": "payment"},
            expected_label=names[i % labels],
            cohort=_COHORTS[i % len(_COHORTS)],
        )
        for i in range(n)
    ]
    data = Dataset(name=name or f"bench-{n}-{labels}", version="1", examples=examples)
    run_id = store.create_run(
        dataset=data,
        system={"kind": "python", "target": "bench:classify"},
        config=RunConfig().model_dump(mode="json"),
        n_pairs=n,
        name=name or f"bench {n:,}",
    )
    segment = store.start_segment(run_id)
    batch: list[PairResult] = []
    for example in examples:
        expected = example.expected_label or names[0]
        ok = rnd.random() < right
        label = expected if ok else rnd.choice([x for x in names[:50] if x != expected])
        batch.append(
            PairResult(
                example_id=example.id,
                repetition=0,
                output=Output(label=label),
                scores=[
                    Score(
                        name="label",
                        value=1.0 if ok else 0.0,
                        passed=ok,
                        answer=label,
                        expected=expected,
                    )
                ],
                passed=ok,
                latency_ms=1.0,
            )
        )
        if len(batch) == _BATCH:
            store.add_results(run_id, batch)
            batch = []
    if batch:
        store.add_results(run_id, batch)
    store.end_segment(run_id, segment, "completed", elapsed_seconds=1.0)
    return run_id
