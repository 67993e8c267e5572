"""The compare page reads per-example figures counted in SQL and the texts of its first
flips only, and shows what it showed when it read both runs whole: the same comparison,
the same change per cohort (paired-bootstrap interval, flips), the same figures per run.

On SQLite and, when ARBITER_TEST_POSTGRES_URL names a server, on PostgreSQL.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from arbiter.contract import Dataset, PairResult
from arbiter.harness.diff import diff_runs
from arbiter.service.compare import compare_loaded
from arbiter.service.run_pages import FLIPS_SHOWN, CohortChange, compare_for_page
from arbiter.service.runs import StoredRun, load_run
from arbiter.store import Store
from tests.service.compare_runs_data import SCORERS_A, SCORERS_B, examples, seed_run


def _whole_cohorts(a: StoredRun, b: StoredRun) -> list[CohortChange]:
    """The page's cohort changes as they were made: both runs whole, diff_runs per cohort."""
    cohort_of = {e.id: e.cohort for e in [*a.examples, *b.examples] if e.cohort is not None}
    changes = []
    for name in sorted({*a.report.cohorts, *b.report.cohorts}):
        members = {i for i, c in cohort_of.items() if c == name}
        diff = diff_runs(
            a.info.id,
            [r for r in a.results if r.example_id in members],
            b.info.id,
            [r for r in b.results if r.example_id in members],
            examples=[e for e in [*a.examples, *b.examples] if e.id in members],
            scorers_a=a.report.scorers,
            scorers_b=b.report.scorers,
            seed=a.config.seed,
        )
        in_a, in_b = a.report.cohorts.get(name), b.report.cohorts.get(name)
        changes.append(
            CohortChange(
                name=name,
                a=in_a.accuracy if in_a is not None else None,
                b=in_b.accuracy if in_b is not None else None,
                change=diff.deltas[0] if diff.deltas else None,
                broken=len(diff.broken),
                fixed=len(diff.fixed),
            )
        )
    return changes


@pytest.mark.parametrize("other_dataset", [False, True])
def test_the_compare_page_shows_what_the_whole_runs_gave(store: Store, other_dataset: bool) -> None:
    data = Dataset(name="shared", version="1", examples=examples(120))
    data_b = data
    if other_dataset:
        # B's examples in common sit in other cohorts: B's say where an example belongs.
        later = examples(90, shift=1) + examples(20, salt="-b")
        data_b = Dataset(name="other", version="1", examples=later)
    run_a = seed_run(store, data, SCORERS_A, seed=61, run_seed=3)
    run_b = seed_run(store, data_b, SCORERS_B, seed=62)
    a, b = load_run(store, run_a), load_run(store, run_b)
    page = compare_for_page(store, run_a, run_b, viewer=None)
    assert page.comparison.diff.model_dump() == compare_loaded(a, b).diff.model_dump()
    assert page.comparison.warnings == compare_loaded(a, b).warnings
    assert page.cohorts == _whole_cohorts(a, b)
    assert [c.name for c in page.cohorts] == ["card", "cash <b>", "wire"]
    assert all(c.change is not None for c in page.cohorts)
    assert (page.a.id, page.b.id) == (run_a, run_b)


def test_the_compare_page_reads_no_run_whole_once_reports_are_kept(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from arbiter.service.run_pages import current_report

    data = Dataset(name="shared", version="1", examples=examples(60))
    run_a = seed_run(store, data, SCORERS_A, seed=71)
    run_b = seed_run(store, data, SCORERS_A, seed=72)
    for run_id in (run_a, run_b):
        current_report(store, run_id, viewer=None)  # kept, as the run pages keep them

    def whole(self: Store, run_id: str) -> list[PairResult]:
        raise AssertionError(f"run {run_id} read whole")

    monkeypatch.setattr(Store, "results", whole)
    page = compare_for_page(store, run_a, run_b, viewer=None)
    assert page.comparison.diff.n_common > 0
    assert page.cohorts


def test_the_compare_page_lists_the_first_flips_with_their_texts(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from arbiter.config import Settings
    from arbiter.server.app import create_app

    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    data = Dataset(name="shared", version="1", examples=examples(10 * FLIPS_SHOWN))
    run_a = seed_run(store, data, SCORERS_A, seed=81, k=1, skip=0.0)
    run_b = seed_run(store, data, SCORERS_A, seed=82, k=1, skip=0.0)
    page = compare_for_page(store, run_a, run_b, viewer=None)
    broken = page.comparison.diff.broken
    assert len(broken) > FLIPS_SHOWN
    assert all(f.reason for f in broken[:FLIPS_SHOWN])
    assert all(f.reason == "" and f.answer_a is None for f in broken[FLIPS_SHOWN:])
    app = create_app(Settings(_env_file=None, home=tmp_path), store=store)
    with TestClient(app) as client:
        shown = client.get(f"/compare?a={run_a}&b={run_b}")
    store.close()
    assert shown.status_code == 200
    assert f"The first {FLIPS_SHOWN} of {len(broken):,}" in shown.text
    lists = [broken] + [s.broken for s in page.comparison.diff.scorers if s.broken or s.fixed]
    rows = sum(min(len(flips), FLIPS_SHOWN) for flips in lists)
    assert shown.text.count('class="example outcome-failed"') == rows
    assert "cash &lt;b&gt;" in shown.text
    assert "<script>" not in shown.text.split("<body", 1)[1].replace("<script src=", "")
