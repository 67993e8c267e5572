"""A store whose judged runs are older than hundreds of runs without a judge.

:func:`seed_judged_store` writes ``judged`` runs scored by an LLM judge (``groundedness``,
a model scorer) with ``per_run`` results each (a question as input, a reference answer,
the system's answer, the judge's ruling), then ``plain`` runs without a judge on top, so
the newest runs hold no ruling at all.
"""

from __future__ import annotations

from arbiter.contract import (
    Dataset,
    Example,
    Output,
    PairResult,
    RunConfig,
    Score,
    ScorerSpec,
)
from arbiter.store import Store

__all__ = ["JUDGE", "seed_judged_store"]

JUDGE = "groundedness"
"""The judge's name in the judged runs."""


def _run(store: Store, name: str, examples: list[Example], config: RunConfig) -> str:
    data = Dataset(name=name, version="1", examples=examples)
    return store.create_run(
        dataset=data,
        system={"kind": "python", "target": "qa:answer"},
        config=config.model_dump(mode="json"),
        n_pairs=len(examples),
        name=name,
    )


def seed_judged_store(store: Store, *, judged: int, per_run: int, plain: int) -> list[str]:
    """Fill ``store``; the ids of the judged runs, oldest first."""
    spec = ScorerSpec(name=JUDGE, kind="model", gating=False)
    ids = []
    for r in range(judged):
        examples = [
            Example(
                id=f"q{r:02d}-{i:03d}",
                input={"question": f"What is the refund window of plan {r}-{i}?"},
                expected=f"Thirty days from purchase for plan {r}-{i}.",
            )
            for i in range(per_run)
        ]
        run_id = _run(store, f"qa judged {r}", examples, RunConfig(scorers=[spec]))
        segment = store.start_segment(run_id)
        store.add_results(
            run_id,
            [
                PairResult(
                    example_id=e.id,
                    repetition=0,
                    output=Output(text=f"The answer for {e.id} is fourteen days. " * (i or 60)),
                    scores=[
                        Score(
                            name=JUDGE,
                            value=0.2 if i % 2 else 0.9,
                            passed=not i % 2,
                            explanation=f"The judge's reason for {e.id}.",
                        )
                    ],
                    passed=True,
                    latency_ms=1.0,
                )
                for i, e in enumerate(examples)
            ],
        )
        store.end_segment(run_id, segment, "completed", elapsed_seconds=1.0)
        ids.append(run_id)
    for p in range(plain):
        examples = [Example(id="only", input={"x": p}, expected_label="a")]
        run_id = _run(store, f"plain {p}", examples, RunConfig())
        segment = store.start_segment(run_id)
        store.add_results(
            run_id,
            [
                PairResult(
                    example_id="only",
                    repetition=0,
                    output=Output(label="a"),
                    passed=True,
                    latency_ms=1.0,
                )
            ],
        )
        store.end_segment(run_id, segment, "completed", elapsed_seconds=1.0)
    return ids
