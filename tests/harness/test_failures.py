"""find_failures: which examples a run lists as worth a look, in which order, how bounded."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from arbiter.harness.failures import Failures, find_failures
from arbiter.scoring.base import BuiltScorer
from arbiter.service.runs import StoredRun, load_run
from arbiter.store import Store
from tests.helpers.scored import answers, brevity, dataset, default_scorers, echo, mentions
from tests.helpers.scored import scored_run as _scored_run


def _stored(
    store: Store,
    words: dict[str, str | None],
    table: dict[str, str | list[str]],
    *,
    scorers: Sequence[BuiltScorer] | None = None,
    k: int = 1,
) -> StoredRun:
    run_id = _scored_run(store, dataset(words), answers(table), scorers=scorers, k=k)
    return load_run(store, run_id)


def _failures(run: StoredRun, **options: int | None) -> Failures:
    return find_failures(run.report, run.examples, run.results, **options)  # type: ignore[arg-type]


def test_failing_and_abstaining_examples_are_listed_and_clean_ones_are_not(store: Store) -> None:
    run = _stored(
        store,
        {"ok": "cat", "wrong": "cat", "no-word": None},
        {"ok": "a cat", "wrong": "a dog", "no-word": "anything"},
    )
    found = _failures(run)
    assert [e.example_id for e in found.examples] == ["wrong", "no-word"]
    assert (found.examples_total, found.listed_total, found.left_out) == (3, 2, 0)
    wrong, no_word = found.examples
    assert no_word.repetitions[0].scores[0].verdict == "abstain"
    assert wrong.outcome == "failed"
    mentions_wrong = wrong.repetitions[0].scores[0]
    assert (mentions_wrong.name, mentions_wrong.verdict) == ("mentions", "fail")
    assert mentions_wrong.explanation == "missing: cat"
    assert [e.quote for e in mentions_wrong.evidence] == ["a dog"]
    assert mentions_wrong.evidence[0].verified is False


def _undeciding() -> list[BuiltScorer]:
    """Scorers under which an example without a word is undecided: the one gating scorer
    abstains (were ``fragile`` gating too, its pass would make the pair pass)."""
    return [mentions(), brevity().gating(False)]


def test_an_abstention_is_listed_as_one_and_never_as_a_failure(store: Store) -> None:
    run = _stored(store, {"no-word": None}, {"no-word": "anything"}, scorers=_undeciding())
    (example,) = _failures(run).examples
    assert example.outcome == "unknown"
    (rep,) = example.repetitions
    assert rep.outcome == "unknown"
    verdicts = {s.name: s.verdict for s in rep.scores}
    assert verdicts == {"mentions": "abstain", "brevity": "pass"}
    assert rep.scores[0].reason == "the example names no word"


def test_an_abstention_beside_a_gating_pass_is_listed_as_passed(store: Store) -> None:
    run = _stored(store, {"no-word": None}, {"no-word": "anything"})
    (example,) = _failures(run).examples
    assert example.outcome == "passed"
    assert [s.verdict for s in example.repetitions[0].scores] == ["abstain", "pass", "pass"]


def test_a_failed_call_is_listed_with_its_error_and_no_scores(store: Store) -> None:
    run = _stored(store, {"gone": "cat"}, {})
    (example,) = _failures(run).examples
    (rep,) = example.repetitions
    assert (example.outcome, rep.outcome, rep.output, rep.scores) == ("failed", "error", None, [])
    assert rep.error is not None
    assert "KeyError" in rep.error
    assert "'gone'" in rep.error


def test_a_scorer_that_raised_is_listed_with_its_error(store: Store) -> None:
    run = _stored(store, {"b": "boom"}, {"b": "boom"})
    (example,) = _failures(run).examples
    fragile = next(s for s in example.repetitions[0].scores if s.name == "fragile")
    assert fragile.verdict == "error"
    assert fragile.error == "RuntimeError: the scorer blew up on \x1b[2J<script>"
    assert fragile.reason == fragile.error


def test_a_reported_only_failure_lists_an_example_that_passed(store: Store) -> None:
    run = _stored(store, {"long": "cat"}, {"long": "cat " * 20})
    (example,) = _failures(run).examples
    assert example.outcome == "passed"
    brevity_verdict = next(s for s in example.repetitions[0].scores if s.name == "brevity")
    assert (brevity_verdict.verdict, brevity_verdict.gating) == ("fail", False)
    assert brevity_verdict.value == 40.0


def test_worst_come_first_failed_then_undecided_then_passed_but_not_clean(store: Store) -> None:
    run = _stored(
        store,
        {"long": "cat", "no-word": None, "wrong": "cat", "ok": "cat"},
        {"long": "cat " * 20, "no-word": "x", "wrong": "dog", "ok": "cat"},
        scorers=_undeciding(),
    )
    assert [e.example_id for e in _failures(run).examples] == ["wrong", "no-word", "long"]


def test_more_failed_repetitions_rank_worse(store: Store) -> None:
    run = _stored(
        store,
        {"once": "cat", "twice": "cat", "never": "cat"},
        {"once": ["cat", "dog"], "twice": "dog", "never": "cat"},
        k=2,
    )
    found = _failures(run)
    assert [e.example_id for e in found.examples] == ["twice", "once"]
    once = found.examples[1]
    assert len(once.repetitions) == 1
    assert len(once.clean_repetitions) == 1
    assert {once.repetitions[0].repetition, *once.clean_repetitions} == {0, 1}


def test_more_failing_scorers_rank_worse_than_fewer(store: Store) -> None:
    # Both fail mentions; "both" also fails brevity, made gating here.
    run = _stored(
        store,
        {"one": "cat", "both": "cat"},
        {"one": "dog", "both": "dog " * 20},
        scorers=[mentions(), brevity()],
    )
    assert [e.example_id for e in _failures(run).examples] == ["both", "one"]


def test_a_failed_call_counts_as_failing_every_gating_scorer(store: Store) -> None:
    run = _stored(
        store,
        {"one": "cat", "gone": "cat"},
        {"one": "dog"},
        scorers=[mentions(), brevity()],
    )
    assert [e.example_id for e in _failures(run).examples] == ["gone", "one"]


def test_equal_examples_keep_dataset_order(store: Store) -> None:
    words: dict[str, str | None] = {f"e{i}": "cat" for i in range(5)}
    run = _stored(store, words, {f"e{i}": "dog" for i in range(5)})
    assert [e.example_id for e in _failures(run).examples] == list(words)


@pytest.mark.parametrize(("limit", "shown"), [(1, 1), (2, 2), (10, 3), (None, 3)])
def test_limit_keeps_the_worst_and_counts_the_rest(
    store: Store, limit: int | None, shown: int
) -> None:
    run = _stored(
        store,
        {"a": "cat", "b": "cat", "c": None},
        {"a": "dog", "b": "dog", "c": "x"},
        scorers=_undeciding(),
    )
    found = _failures(run, limit=limit)
    assert [e.example_id for e in found.examples] == ["a", "b", "c"][:shown]
    assert (found.listed_total, found.left_out) == (3, 3 - shown)


def test_a_clean_run_lists_nothing(store: Store) -> None:
    run = _stored(store, {"a": "cat"}, {"a": "cat"}, scorers=[mentions()])
    found = _failures(run)
    assert (found.examples, found.listed_total, found.examples_total) == ([], 0, 1)


def test_a_huge_output_and_many_quotes_are_bounded(store: Store) -> None:
    huge = "x" * 1_000_000
    run = _stored(store, {"h": "cat"}, {"h": huge}, scorers=[echo(quotes=25)])
    (example,) = _failures(run, max_chars=500).examples
    (rep,) = example.repetitions
    (verdict,) = rep.scores
    assert rep.output_chars == 1_000_000
    assert rep.output is not None
    assert len(rep.output) == 500
    assert rep.output.endswith("…")
    assert len(verdict.explanation) == 500
    assert len(verdict.evidence) == 10
    assert verdict.evidence_total == 25
    assert all(len(e.quote) == 500 and len(e.note) == 500 for e in verdict.evidence)
    assert len(_failures(run).model_dump_json()) < 50_000


def test_the_default_scorers_cover_every_verdict(store: Store) -> None:
    # The helper's promise, which the format tests rely on.
    run = _stored(
        store,
        {"pass": "cat", "fail": "cat", "abstain": None, "error": "boom"},
        {"pass": "cat", "fail": "dog", "abstain": "x", "error": "boom"},
        scorers=default_scorers(),
    )
    verdicts = {s.verdict for e in _failures(run).examples for r in e.repetitions for s in r.scores}
    assert verdicts == {"pass", "fail", "abstain", "error"}
