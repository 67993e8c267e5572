"""Two stored runs made to exercise every path of a comparison: k = 3, several scorers
(gating and not, binary and measured values, abstentions), cohorts, failed calls,
missing repetitions, examples run by one side only and a scorer of one side only."""

from __future__ import annotations

import random

from arbiter.contract import Dataset, Example, Output, PairResult, RunConfig, Score, ScorerSpec
from arbiter.scoring.base import repetition_passed
from arbiter.store import Store

SCORERS_A = [
    ScorerSpec(name="label"),
    ScorerSpec(name="f1_tokens", args={"threshold": 0.5}),
    ScorerSpec(name="judge", gating=False),
]
"""Run A's scorers; B's add one A does not have."""
SCORERS_B = [*SCORERS_A, ScorerSpec(name="regex", args={"pattern": "x"})]
COHORTS = ("wire", "card", None, "cash <b>")


def examples(n: int, *, salt: str = "", shift: int = 0) -> list[Example]:
    """``n`` examples with labels, references and cohorts (some with none; ``shift``
    moves each to another cohort)."""
    return [
        Example(
            id=f"ex-{i:04d}{salt}",
            input={"i": i},
            expected_label="yes" if i % 3 else "no",
            cohort=COHORTS[(i + shift) % len(COHORTS)],
        )
        for i in range(n)
    ]


def _results(
    rnd: random.Random, chosen: list[Example], scorers: list[ScorerSpec], k: int
) -> list[PairResult]:
    gating = {s.label for s in scorers if s.gating}
    results = []
    for example in chosen:
        for repetition in range(k):
            if rnd.random() < 0.03:
                continue  # a missing repetition
            if rnd.random() < 0.03:
                results.append(
                    PairResult(
                        example_id=example.id,
                        repetition=repetition,
                        passed=False,
                        error_type="Timeout",
                        error_message=f"slow <script>{example.id}",
                        latency_ms=1.0,
                    )
                )
                continue
            scores = []
            for spec in scorers:
                if spec.name != "label" and rnd.random() < 0.08:
                    continue  # not scored on this repetition
                if spec.name == "judge":
                    passed = rnd.choice([True, True, False, None])
                elif spec.name == "label" and rnd.random() < 0.04:
                    passed = None  # no reference to judge by
                else:
                    passed = rnd.random() < 0.88
                value = None
                if spec.name == "f1_tokens":
                    value = rnd.random() if passed is not None else None
                elif spec.name == "label" and rnd.random() < 0.9:
                    value = float(passed is True)
                scores.append(
                    Score(name=spec.label, passed=passed, value=value, explanation=f"{spec.name}?")
                )
            label = rnd.choice(["yes", "no"])
            results.append(
                PairResult(
                    example_id=example.id,
                    repetition=repetition,
                    output=Output(label=label, text=f"answer {rnd.randrange(99)}"),
                    scores=scores,
                    passed=repetition_passed(scores, gating),
                    latency_ms=1.0,
                )
            )
    rnd.shuffle(results)  # stored in the order they completed
    return results


def seed_run(
    store: Store,
    data: Dataset,
    scorers: list[ScorerSpec],
    *,
    seed: int,
    k: int = 3,
    skip: float = 0.1,
    limit: int | None = None,
    run_seed: int = 0,
) -> str:
    """A run of ``data`` (without a share ``skip`` of its examples) with results drawn
    at random under ``seed``."""
    rnd = random.Random(seed)
    in_scope = data.examples[:limit] if limit else data.examples
    chosen = [e for e in in_scope if rnd.random() >= skip]
    config = RunConfig(k=k, scorers=scorers, limit=limit, seed=run_seed)
    run_id = store.create_run(
        dataset=data,
        system={"kind": "python", "target": f"m:f{seed}"},
        config=config.model_dump(mode="json"),
        n_pairs=len(in_scope) * k,
    )
    segment = store.start_segment(run_id)
    results = _results(rnd, chosen, scorers, k)
    for start in range(0, len(results), 500):
        store.add_results(run_id, results[start : start + 500])
    store.end_segment(run_id, segment, "completed", elapsed_seconds=1.0)
    return run_id
