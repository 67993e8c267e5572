"""What the run pages read: kept reports, failures first without a sort, examples by id."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from arbiter.contract import Dataset, Example, Output, PairResult, RunConfig, Score
from arbiter.service.browse import ResultFilter
from arbiter.service.run_pages import ReportKeeper, example_page
from arbiter.service.runs import load_run
from arbiter.store import Store
from arbiter.store.failures_repository import count_outcomes, page_failures_first
from arbiter.store.report_repository import examples_by_id, index_examples, kept_reports
from arbiter.store.result_pages import page_results


def _run(store: Store, n: int, *, seed: int = 0) -> str:
    """A completed run of ``n`` examples: passes, failures, abstentions and failed calls."""
    rnd = random.Random(seed)
    examples = [
        Example(id=f"ex-{rnd.randrange(10**6):06d}-{i}", input={"i": i}, expected_label="a")
        for i in range(n)
    ]
    data = Dataset(name="mixed", version="1", examples=examples)
    run_id = store.create_run(
        dataset=data,
        system={"kind": "python", "target": "m:f"},
        config=RunConfig().model_dump(mode="json"),
        n_pairs=n,
    )
    segment = store.start_segment(run_id)
    results = []
    for example in examples:
        kind = rnd.choice(["pass", "pass", "fail", "abstain", "error"])
        if kind == "error":
            results.append(
                PairResult(
                    example_id=example.id,
                    repetition=0,
                    passed=False,  # as the runner stores a failed call
                    error_type="Timeout",
                    error_message="slow",
                    latency_ms=1.0,
                )
            )
            continue
        passed = {"pass": True, "fail": False, "abstain": None}[kind]
        score = Score(name="label", value=None if passed is None else float(passed), passed=passed)
        results.append(
            PairResult(
                example_id=example.id,
                repetition=0,
                output=Output(label="a" if passed else "b"),
                scores=[score],
                passed=passed,
                latency_ms=1.0,
            )
        )
    store.add_results(run_id, results)
    store.end_segment(run_id, segment, "completed", elapsed_seconds=1.0)
    return run_id


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(f"sqlite:///{tmp_path / 'store.db'}")


def _ids(results: list[PairResult]) -> list[str]:
    return [r.example_id for r in results]


@pytest.mark.parametrize("failing", [False, True])
@pytest.mark.parametrize("offset", [0, 7, 40, 95, 130])
def test_failures_first_pages_match_the_sorted_query(
    store: Store, failing: bool, offset: int
) -> None:
    run_id = _run(store, 120, seed=offset)
    counts = count_outcomes(store, run_id)
    mine, total = page_failures_first(
        store, run_id, counts, failing_only=failing, offset=offset, limit=25
    )
    theirs, their_total = page_results(
        store, run_id, ResultFilter(failing=failing, failures_first=True), offset=offset, limit=25
    )
    assert _ids(mine) == _ids(theirs)
    assert total == their_total


def test_outcome_counts_add_up_to_the_run(store: Store) -> None:
    run_id = _run(store, 200, seed=3)
    counts = count_outcomes(store, run_id)
    results = store.results(run_id)
    assert counts.total == len(results)
    assert counts.passed == sum(1 for r in results if r.passed is True)
    assert counts.failed == sum(1 for r in results if r.passed is False or r.output is None)


def test_a_kept_report_is_used_until_the_run_moves_on(store: Store) -> None:
    run_id = _run(store, 60, seed=1)
    keeper = ReportKeeper()
    first = keeper.view(store, run_id, viewer=None)
    assert first.report == load_run(store, run_id).report
    assert kept_reports(store, [run_id])[run_id].n_done == 60
    store.add_results(
        run_id,
        [PairResult(example_id="extra", repetition=1, output=Output(label="a"), latency_ms=1)],
    )
    again = keeper.view(store, run_id, viewer=None)
    assert again.info.n_done == 61
    assert kept_reports(store, [run_id])[run_id].n_done == 61  # recomputed for the new state


def test_a_large_run_is_computed_on_a_thread_while_the_page_says_so(store: Store) -> None:
    run_id = _run(store, 80, seed=2)
    keeper = ReportKeeper(sync_limit=10)
    first = keeper.view(store, run_id, viewer=None)
    assert first.report is None
    keeper.wait(run_id, timeout=60)
    assert not keeper.computing(run_id)
    later = keeper.view(store, run_id, viewer=None)
    assert later.report == load_run(store, run_id).report
    assert later.counts is not None
    assert later.counts.total == 80


def test_examples_are_read_by_id_the_same_with_and_without_the_index(store: Store) -> None:
    run_id = _run(store, 50, seed=4)
    info = store.get_run(run_id)
    wanted = [e.id for e in store.load_dataset(info.dataset_hash).examples[::7]]
    before = examples_by_id(store, info.dataset_hash, [*wanted, "no-such-id"])
    index_examples(store, info.dataset_hash)
    index_examples(store, info.dataset_hash)  # once is enough; twice changes nothing
    after = examples_by_id(store, info.dataset_hash, wanted)
    assert before == after
    assert sorted(after) == sorted(wanted)


def test_a_page_of_examples_joins_each_result_to_its_example(store: Store) -> None:
    run_id = _run(store, 30, seed=5)
    view = ReportKeeper().view(store, run_id, viewer=None)
    page = example_page(
        store, view, ResultFilter(failures_first=True), viewer=None, offset=0, limit=10
    )
    assert len(page.items) == 10
    assert page.total == 30
    for item in page.items:
        assert item.example is not None
        assert item.example.id == item.row.example_id
        assert item.example.input == {"i": int(item.example.id.rsplit("-", 1)[1])}


def test_with_api_keys_a_page_without_one_says_a_key_is_needed(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from arbiter.config import Settings
    from arbiter.server.app import create_app
    from arbiter.store.api_key_repository import create_api_key

    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    _, key = create_api_key(store, "ci")
    app = create_app(Settings(_env_file=None, home=tmp_path), store=store)  # type: ignore[call-arg]
    with TestClient(app) as client:
        refused = client.get("/")
        assert refused.status_code == 401
        assert "An API key is needed" in refused.text
        assert client.get("/", headers={"X-API-Key": key}).status_code == 200
        assert client.get("/", headers={"Authorization": f"Bearer {key}"}).status_code == 200
        assert client.get("/", headers={"X-API-Key": "wrong"}).status_code == 401
    store.close()


def test_a_large_run_page_opens_with_its_table_and_says_the_figures_are_coming(
    tmp_path: Path,
) -> None:
    from fastapi.testclient import TestClient

    from arbiter.config import Settings
    from arbiter.server.app import create_app

    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    run_id = _run(store, 40, seed=6)
    app = create_app(Settings(_env_file=None, home=tmp_path), store=store)  # type: ignore[call-arg]
    keeper = ReportKeeper(sync_limit=10)  # 40 results count as a large run here
    app.state.report_keeper = keeper
    with TestClient(app) as client:
        first = client.get(f"/runs/{run_id}")
        assert first.status_code == 200
        assert "are being computed; reload in a moment" in first.text
        assert first.text.count('class="example outcome-') == 40
        assert 'class="figure figure-lead"' not in first.text
        keeper.wait(run_id, timeout=60)
        later = client.get(f"/runs/{run_id}")
        assert "being computed" not in later.text
        assert 'class="figure figure-lead"' in later.text
    store.close()


def test_a_page_past_the_end_says_how_many_the_listing_holds(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from arbiter.config import Settings
    from arbiter.server.app import create_app

    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    run_id = _run(store, 12, seed=7)
    app = create_app(Settings(_env_file=None, home=tmp_path), store=store)  # type: ignore[call-arg]
    with TestClient(app) as client:
        shown = client.get(f"/runs/{run_id}?page=9")
        assert shown.status_code == 200
        assert "No example on this page: the listing holds 12" in shown.text
    store.close()


def test_a_run_compared_with_itself_is_said_to_be_the_same_run(store: Store) -> None:
    from arbiter.service.compare import compare_runs

    run_id = _run(store, 20)
    compared = compare_runs(store, run_id, run_id)
    assert compared.warnings == [
        "A and B are the same run: every figure is compared with itself, nothing can differ"
    ]
    assert compared.diff.fixed == []
    assert compared.diff.broken == []
