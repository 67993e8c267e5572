"""Failures-first pages read by key: a page that follows another starts right after it,
one that precedes another ends right before it, and one asked for by number is read from
the nearer end of its group; every way gives the pages that reading by position gives.

On SQLite and, when ARBITER_TEST_POSTGRES_URL names a server, on PostgreSQL.
"""

from __future__ import annotations

import random

import pytest

from arbiter.contract import Dataset, Example, Output, PairResult, RunConfig, Score
from arbiter.store import Store
from arbiter.store.failures_repository import count_outcomes, page_failures_first
from arbiter.store.result_pages import ResultKey, page_failures_first_keyed

SIZE = 20


def _run(store: Store, n: int) -> str:
    """A run of ``n`` examples, k = 2: passes, failures, abstentions and failed calls."""
    rnd = random.Random(n)
    examples = [Example(id=f"ex-{rnd.randrange(10**6):06d}-{i}", input={}) for i in range(n)]
    run_id = store.create_run(
        dataset=Dataset(name="mixed", version="1", examples=examples),
        system={"kind": "python", "target": "m:f"},
        config=RunConfig(k=2).model_dump(mode="json"),
        n_pairs=2 * n,
    )
    results = []
    for example in examples:
        for repetition in range(2):
            kind = rnd.choice(["pass", "pass", "fail", "abstain", "error"])
            if kind == "error":
                results.append(
                    PairResult(
                        example_id=example.id,
                        repetition=repetition,
                        passed=False,
                        error_type="Timeout",
                        latency_ms=1.0,
                    )
                )
                continue
            passed = {"pass": True, "fail": False, "abstain": None}[kind]
            results.append(
                PairResult(
                    example_id=example.id,
                    repetition=repetition,
                    output=Output(label="a"),
                    scores=[Score(name="label", passed=passed)],
                    passed=passed,
                    latency_ms=1.0,
                )
            )
    store.add_results(run_id, results)
    return run_id


def _ids(results: list[PairResult]) -> list[tuple[str, int]]:
    return [(r.example_id, r.repetition) for r in results]


@pytest.mark.parametrize("failing_only", [False, True])
def test_every_way_of_reading_a_page_gives_the_page_by_position(
    store: Store, failing_only: bool
) -> None:
    run_id = _run(store, 115)
    counts = count_outcomes(store, run_id)
    assert min(counts.failed, counts.undecided, counts.passed) > SIZE  # groups span pages
    total = counts.failed if failing_only else counts.total
    by_position = [
        _ids(
            page_failures_first(
                store, run_id, counts, failing_only=failing_only, offset=offset, limit=SIZE
            )[0]
        )
        for offset in range(0, total, SIZE)
    ]

    def keyed(offset: int, **key: ResultKey | None) -> list[tuple[ResultKey, tuple[str, int]]]:
        page, listed = page_failures_first_keyed(
            store, run_id, counts, failing_only=failing_only, offset=offset, limit=SIZE, **key
        )
        assert listed == total
        return [(k.key, (k.result.example_id, k.result.repetition)) for k in page]

    numbered = [[i for _, i in keyed(offset)] for offset in range(0, total, SIZE)]
    assert numbered == by_position
    forward, after = [], None
    for _ in by_position:  # offset 0 throughout: the key alone says where the page is
        page = keyed(0, after=after) if after else keyed(0)
        forward.append([i for _, i in page])
        after = page[-1][0]
    assert forward == by_position
    assert keyed(0, after=after) == []
    last = keyed(SIZE * (len(by_position) - 1))
    before = last[0][0]
    for number in reversed(range(len(by_position) - 1)):
        page = keyed(0, before=before)
        assert [i for _, i in page] == by_position[number]
        before = page[0][0]
    assert keyed(0, before=before) == []


@pytest.mark.parametrize(
    "token", ["", "x", "3.0.ex", "0.-1.ex", "0.1.", "0.x.ex", "0." + "9" * 12 + ".ex"]
)
def test_a_key_that_does_not_parse_reads_by_position(token: str) -> None:
    assert ResultKey.parse(token) is None


def test_a_key_survives_its_token() -> None:
    key = ResultKey(2, "ex.with.dots <b>", 3)
    assert ResultKey.parse(key.token()) == key
