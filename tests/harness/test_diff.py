"""diff_runs: the outcome and each scorer compared example by example, with flips,
abstentions counted apart, paired-bootstrap deltas and an exact McNemar test."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest

from arbiter.contract import Example, Output, PairResult, RunInfo, Score, ScorerSpec
from arbiter.harness.comparability import comparability_notes, scorer_notes
from arbiter.harness.diff import FLIP_TEXT_CHARS, Flip, RunDiff, ScorerDiff, diff_runs
from arbiter.scoring.base import repetition_passed

Verdicts = Mapping[str, bool | None]
"""Scorer name -> passed (None: abstained) for one repetition."""

SPECS = [ScorerSpec(name="casefold"), ScorerSpec(name="f1_tokens", args={"threshold": 0.5})]


def pair(
    example_id: str,
    verdicts: Verdicts,
    *,
    repetition: int = 0,
    text: str | None = "an answer",
    label: str | None = None,
    values: Mapping[str, float] | None = None,
    gating: Sequence[str] = ("casefold", "f1_tokens"),
) -> PairResult:
    """One pair scored as ``verdicts`` say, its outcome by the run's rule."""
    scores = [
        Score(
            name=name,
            passed=passed,
            value=(values or {}).get(name),
            explanation=f"{name} said {passed}",
        )
        for name, passed in verdicts.items()
    ]
    return PairResult(
        example_id=example_id,
        repetition=repetition,
        output=Output(text=text, label=label),
        scores=scores,
        passed=repetition_passed(scores, set(gating)),
        latency_ms=1.0,
    )


def failed_call(example_id: str, repetition: int = 0) -> PairResult:
    return PairResult(
        example_id=example_id,
        repetition=repetition,
        error_type="SystemUnderTestError",
        error_message="connection refused",
        latency_ms=1.0,
    )


def diff(
    a: Sequence[PairResult],
    b: Sequence[PairResult],
    *,
    examples: Sequence[Example] = (),
    scorers_a: Sequence[ScorerSpec] = SPECS,
    scorers_b: Sequence[ScorerSpec] = SPECS,
    seed: int = 0,
) -> RunDiff:
    """``diff_runs`` of runs A and B, scored by :data:`SPECS` unless told otherwise."""
    return diff_runs(
        "A", a, "B", b, examples=examples, scorers_a=scorers_a, scorers_b=scorers_b, seed=seed
    )


def scorer(result: RunDiff, name: str) -> ScorerDiff:
    return next(s for s in result.scorers if s.name == name)


def test_each_scorer_has_its_own_flips_both_ways() -> None:
    a = [
        pair("q1", {"casefold": True, "f1_tokens": True}),
        pair("q2", {"casefold": False, "f1_tokens": True}),
        pair("q3", {"casefold": False, "f1_tokens": False}),
    ]
    b = [
        pair("q1", {"casefold": False, "f1_tokens": True}),
        pair("q2", {"casefold": True, "f1_tokens": True}),
        pair("q3", {"casefold": False, "f1_tokens": True}),
    ]
    result = diff(a, b)
    casefold, f1 = scorer(result, "casefold"), scorer(result, "f1_tokens")
    assert [f.example_id for f in casefold.broken] == ["q1"]
    assert [f.example_id for f in casefold.fixed] == ["q2"]
    assert (casefold.both_passed, casefold.both_failed) == (0, 1)
    assert f1.broken == []
    assert [f.example_id for f in f1.fixed] == ["q3"]
    assert f1.both_passed == 2
    # The outcome needs both gating scorers: q1 broke, q2 was fixed, q3 failed in both.
    assert [f.example_id for f in result.broken] == ["q1"]
    assert [f.example_id for f in result.fixed] == ["q2"]
    assert result.both_failed == 1


def test_an_abstention_in_either_run_is_counted_apart_never_as_a_flip() -> None:
    a = [
        pair("q1", {"casefold": None, "f1_tokens": True}),  # casefold abstained in A
        pair("q2", {"casefold": True, "f1_tokens": True}),
        pair("q3", {"casefold": True, "f1_tokens": True}),
    ]
    b = [
        pair("q1", {"casefold": False, "f1_tokens": True}),
        pair("q2", {"casefold": None, "f1_tokens": None}),  # every scorer abstained in B
        pair("q3", {"casefold": True, "f1_tokens": True}),
    ]
    result = diff(a, b)
    casefold = scorer(result, "casefold")
    assert casefold.abstained == ["q1", "q2"]
    assert casefold.broken == casefold.fixed == []
    assert casefold.n_paired == 1
    assert [(d.name, d.n, d.a, d.b) for d in casefold.deltas] == [("pass rate", 1, 1.0, 1.0)]
    assert scorer(result, "f1_tokens").abstained == ["q2"]
    # The outcome of q2 in B is unknown (every gating scorer abstained): apart too.
    assert result.abstained == ["q2"]
    assert [f.example_id for f in result.broken] == ["q1"]  # casefold failed q1 in B


@pytest.mark.parametrize(
    ("verdicts", "expected"),
    [
        ([True, True], "passed"),
        ([True, None], "abstained"),  # not every repetition passed, none failed
        ([None, False], "failed"),  # one repetition failed: decided, and failed
    ],
)
def test_an_example_passes_a_scorer_when_every_repetition_passed(
    verdicts: list[bool | None], expected: str
) -> None:
    a = [
        pair("q1", {"casefold": v, "f1_tokens": True}, repetition=i) for i, v in enumerate(verdicts)
    ]
    b = [pair("q1", {"casefold": True, "f1_tokens": True}, repetition=i) for i in range(2)]
    casefold = scorer(diff(a, b), "casefold")
    shown = "abstained" if casefold.abstained else "failed" if casefold.fixed else "passed"
    assert shown == expected


def test_a_failed_call_fails_every_scorer_with_its_error_as_the_reason() -> None:
    a = [pair("q1", {"casefold": True, "f1_tokens": True})]
    result = diff(a, [failed_call("q1")])
    for view in (result, scorer(result, "casefold"), scorer(result, "f1_tokens")):
        (flip,) = view.broken
        assert flip.answer_a == "an answer"
        assert flip.answer_b is None
        assert flip.reason == "the call failed: SystemUnderTestError: connection refused"


def test_flips_show_each_side_answer_and_the_failing_scorer_reason() -> None:
    examples = [Example(id="q1", input={}, expected="Jane Austen")]
    a = [pair("q1", {"casefold": True, "f1_tokens": True}, text="Jane Austen")]
    b = [pair("q1", {"casefold": False, "f1_tokens": True}, text="It was Jane Austen.")]
    result = diff(a, b, examples=examples)
    (flip,) = scorer(result, "casefold").broken
    assert (flip.expected, flip.answer_a, flip.answer_b) == (
        "Jane Austen",
        "Jane Austen",
        "It was Jane Austen.",
    )
    assert flip.reason == "casefold said False"
    (outcome,) = result.broken
    assert outcome.reason == "casefold: casefold said False"  # named: several may gate


def test_a_flip_shows_the_first_repetition_that_failed() -> None:
    a = [pair("q1", {"casefold": True, "f1_tokens": True}, repetition=i) for i in range(3)]
    b = [
        pair("q1", {"casefold": True, "f1_tokens": True}, repetition=0, text="right"),
        pair("q1", {"casefold": False, "f1_tokens": True}, repetition=1, text="wrong"),
        pair("q1", {"casefold": False, "f1_tokens": True}, repetition=2, text="also wrong"),
    ]
    (flip,) = scorer(diff(a, b), "casefold").broken
    assert flip.answer_b == "wrong"


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (ScorerSpec(name="label"), "POSITIVE"),  # what the label scorer reads
        (ScorerSpec(name="casefold"), "The review is positive."),  # what text scorers read
    ],
)
def test_a_label_scorer_shows_labels_and_a_text_scorer_texts(
    spec: ScorerSpec, expected: str
) -> None:
    name = spec.label
    a = [pair("q1", {name: True}, gating=[name], label="POSITIVE", text="The review is positive.")]
    b = [pair("q1", {name: False}, gating=[name], label="negative", text="Negative.")]
    (flip,) = scorer(diff(a, b, scorers_a=[spec], scorers_b=[spec]), name).broken
    assert flip.answer_a == expected


def test_an_output_with_neither_text_nor_label_shows_its_json() -> None:
    a = [pair("q1", {"casefold": True, "f1_tokens": True})]
    b = [pair("q1", {"casefold": False, "f1_tokens": True}, text=None)]
    b[0].output = Output(raw={"answer": [1, 2]})
    (flip,) = scorer(diff(a, b), "casefold").broken
    assert flip.answer_b == '{"answer":[1,2]}'


def test_flip_texts_are_clipped() -> None:
    long = "x" * (10 * FLIP_TEXT_CHARS)
    examples = [Example(id="q1", input={}, expected=long)]
    a = [pair("q1", {"casefold": True, "f1_tokens": True}, text=long)]
    b = [pair("q1", {"casefold": False, "f1_tokens": True}, text=long)]
    b[0].scores[0].explanation = long
    (flip,) = scorer(diff(a, b, examples=examples), "casefold").broken
    for text in (flip.expected, flip.answer_a, flip.answer_b, flip.reason):
        assert text is not None
        assert len(text) == FLIP_TEXT_CHARS
        assert text.endswith("…")


def test_flips_follow_dataset_order_not_result_order() -> None:
    examples = [Example(id=i, input={}) for i in ("z", "a", "m")]
    passed = {"casefold": True, "f1_tokens": True}
    failed = {"casefold": False, "f1_tokens": True}
    a = [pair(i, passed) for i in ("m", "a", "z")]
    b = [pair(i, failed) for i in ("a", "m", "z")]
    assert [f.example_id for f in diff(a, b, examples=examples).broken] == ["z", "a", "m"]


@pytest.mark.parametrize(("broken", "fixed"), [(0, 0), (0, 5), (3, 9), (12, 4), (7, 7)])
def test_mcnemar_p_is_the_exact_binomial_test_of_the_discordant_pairs(
    broken: int, fixed: int
) -> None:
    both = {"casefold": True, "f1_tokens": True}
    neither = {"casefold": False, "f1_tokens": False}
    a = [pair(f"b{i}", both) for i in range(broken)] + [
        pair(f"f{i}", neither) for i in range(fixed)
    ]
    b = [pair(f"b{i}", neither) for i in range(broken)] + [
        pair(f"f{i}", both) for i in range(fixed)
    ]
    a += [pair("same", both)]
    b += [pair("same", both)]
    result = diff(a, b)
    expected = binomtest(broken, broken + fixed, 0.5).pvalue if broken + fixed else 1.0
    for view in (result, *result.scorers):
        assert (len(view.broken), len(view.fixed)) == (broken, fixed)
        assert view.mcnemar_p == pytest.approx(expected, rel=1e-12)


def test_deltas_are_the_pass_rates_over_the_paired_examples() -> None:
    ids = [f"q{i}" for i in range(10)]
    a = [pair(i, {"casefold": n < 4, "f1_tokens": True}) for n, i in enumerate(ids)]
    b = [pair(i, {"casefold": n < 7, "f1_tokens": True}) for n, i in enumerate(ids)]
    result = diff(a, b)
    (rate,) = scorer(result, "casefold").deltas  # k = 1: pass^k would repeat it
    assert (rate.name, rate.n, rate.a, rate.b) == ("pass rate", 10, 0.4, 0.7)
    assert rate.delta == pytest.approx(0.3)
    assert rate.low <= rate.delta <= rate.high
    assert [d.name for d in result.deltas] == ["accuracy", "pass^k"]  # as before scorers


def test_pass_k_joins_a_scorer_deltas_when_examples_repeat() -> None:
    # q0 passes 1 of 2 repetitions in A and both in B: pass rate +0.5, pass^k +1.
    a = [pair("q0", {"casefold": r == 0, "f1_tokens": True}, repetition=r) for r in range(2)]
    b = [pair("q0", {"casefold": True, "f1_tokens": True}, repetition=r) for r in range(2)]
    deltas = {d.name: d.delta for d in scorer(diff(a, b), "casefold").deltas}
    assert deltas == {"pass rate": 0.5, "pass^k": 1.0}


def test_a_measuring_scorer_gets_the_change_of_its_mean_value() -> None:
    a = [
        pair(f"q{i}", {"casefold": True, "f1_tokens": True}, values={"f1_tokens": 0.5})
        for i in range(4)
    ]
    b = [
        pair(f"q{i}", {"casefold": True, "f1_tokens": True}, values={"f1_tokens": 0.75})
        for i in range(4)
    ]
    result = diff(a, b)
    mean = next(d for d in scorer(result, "f1_tokens").deltas if d.name == "mean value")
    assert (mean.a, mean.b, mean.delta) == (0.5, 0.75, 0.25)
    assert [d.name for d in scorer(result, "casefold").deltas] == ["pass rate"]


def test_a_scorer_in_one_run_only_is_listed_not_compared() -> None:
    a = [pair("q1", {"casefold": True, "f1_tokens": True})]
    b = [pair("q1", {"casefold": True, "exact": False}, gating=["casefold", "exact"])]
    result = diff(a, b, scorers_b=[ScorerSpec(name="casefold"), ScorerSpec(name="exact")])
    assert [s.name for s in result.scorers] == ["casefold"]
    assert (result.scorers_only_in_a, result.scorers_only_in_b) == (["f1_tokens"], ["exact"])


def test_without_specs_the_scorers_are_the_names_their_scores_carry() -> None:
    a = [pair("q1", {"casefold": True, "f1_tokens": True})]
    b = [pair("q1", {"casefold": False, "f1_tokens": True})]
    result = diff_runs("A", a, "B", b)
    assert [s.name for s in result.scorers] == ["casefold", "f1_tokens"]
    assert result.scorers[0].spec_a is None
    assert len(scorer(result, "casefold").broken) == 1


def test_examples_in_one_run_only_are_left_out() -> None:
    a = [pair("q1", {"casefold": True, "f1_tokens": True})]
    b = [pair("q1", {"casefold": True, "f1_tokens": True}), pair("q2", {"casefold": False})]
    result = diff(a, b)
    assert (result.n_common, result.only_in_a, result.only_in_b) == (1, [], ["q2"])
    assert scorer(result, "casefold").n_paired == 1


verdict = st.sampled_from([True, False, None])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(verdict, verdict), min_size=1, max_size=30),
    st.integers(min_value=0, max_value=2**16),
)
def test_swapping_the_runs_swaps_flips_and_negates_deltas(
    outcomes: list[tuple[bool | None, bool | None]], seed: int
) -> None:
    a = [pair(f"q{i}", {"casefold": x}, gating=["casefold"]) for i, (x, _) in enumerate(outcomes)]
    b = [pair(f"q{i}", {"casefold": y}, gating=["casefold"]) for i, (_, y) in enumerate(outcomes)]
    specs = [ScorerSpec(name="casefold")]
    forward = diff(a, b, scorers_a=specs, scorers_b=specs, seed=seed)
    backward = diff(b, a, scorers_a=specs, scorers_b=specs, seed=seed)
    view, reverse = scorer(forward, "casefold"), scorer(backward, "casefold")
    assert view.broken == [f.model_copy(update=_swapped(f)) for f in reverse.fixed]
    assert view.n_paired + len(view.abstained) == len(outcomes)
    assert view.both_passed + view.both_failed + len(view.broken) + len(view.fixed) == view.n_paired
    assert view.mcnemar_p == reverse.mcnemar_p
    for d, r in zip(view.deltas, reverse.deltas, strict=True):
        assert d.delta == pytest.approx(-r.delta)
        assert d.delta == pytest.approx((len(view.fixed) - len(view.broken)) / view.n_paired)


def _swapped(flip: Flip) -> dict[str, str | None]:
    return {"answer_a": flip.answer_b, "answer_b": flip.answer_a}


def _info(run_id: str, scorers: list[ScorerSpec], **config: object) -> RunInfo:
    return RunInfo.model_validate(
        {
            "id": run_id,
            "dataset_hash": "h" * 64,
            "dataset_name": "qa",
            "system": {"kind": "python"},
            "config": {"scorers": [s.model_dump() for s in scorers], **config},
            "status": "completed",
            "n_pairs": 1,
            "created_at": "2026-12-01T00:00:00Z",
        }
    )


@pytest.mark.parametrize(
    ("specs_b", "note"),
    [
        (SPECS[:1], "scorer 'f1_tokens' is only in run A: not compared"),
        (
            [SPECS[0], ScorerSpec(name="f1_tokens", args={"threshold": 0.8})],
            "scorer 'f1_tokens' differs between the runs (threshold 0.5 vs 0.8): "
            "its figures mean different things",
        ),
        (
            [SPECS[0], ScorerSpec(name="f1_tokens", version="2", args={})],
            "scorer 'f1_tokens' differs between the runs (version 1 vs 2; threshold 0.5 vs "
            "unset): its figures mean different things",
        ),
        (
            [SPECS[0], ScorerSpec(name="exact", alias="f1_tokens")],
            "scorer 'f1_tokens' differs between the runs (f1_tokens vs exact)",
        ),
        (
            [SPECS[0], SPECS[1].model_copy(update={"gating": False})],
            "the runs gate on different scorers (casefold, f1_tokens vs casefold): their "
            "outcomes (accuracy, pass^k) mean different things",
        ),
    ],
)
def test_scorer_notes_say_what_makes_scorers_incomparable(
    specs_b: list[ScorerSpec], note: str
) -> None:
    assert any(found.startswith(note) for found in scorer_notes(SPECS, specs_b))


def test_same_scorers_give_no_note() -> None:
    assert scorer_notes(SPECS, [ScorerSpec.model_validate(s.model_dump()) for s in SPECS]) == []


def test_a_label_map_given_to_the_label_scorer_is_one_note_not_two() -> None:
    mapped = ScorerSpec(name="label", args={"label_map": {"*": "high"}})
    plain = ScorerSpec(name="label")
    assert scorer_notes([mapped], [plain]) == []
    notes = comparability_notes(_info("a", [mapped]), _info("b", [plain]))
    assert notes == [
        "the runs used different label maps: their mapped figures mean different things"
    ]
