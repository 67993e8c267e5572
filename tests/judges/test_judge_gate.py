"""The ``gate`` argument of the judges: non-gating until promoted, recorded once in the spec."""

from __future__ import annotations

import pytest

from arbiter.contract import Example, Output, Score
from arbiter.errors import InputError
from arbiter.judges.judges import JUDGES, groundedness
from arbiter.scoring.base import ScoreFunction, repetition_passed, scorer
from arbiter.service.scoring import scorer_registry, scorer_specs


def test_a_judge_does_not_gate_by_default_and_gate_true_promotes_it() -> None:
    default, promoted = groundedness(), groundedness(gate=True)
    assert default.spec.gating is False
    assert promoted.spec.gating is True
    # Recorded once: as the spec's gating, never a second time among the arguments.
    assert "gate" not in default.spec.args
    assert "gate" not in promoted.spec.args
    assert promoted.spec.args == default.spec.args


@pytest.mark.parametrize("name", sorted(JUDGES))
def test_every_judge_takes_gate_from_the_command_line(name: str) -> None:
    (spec,) = scorer_specs([f"{name}:gate=true"])
    assert spec.gating is True
    (spec,) = scorer_specs([name])
    assert spec.gating is False


def test_a_promoted_spec_rebuilds_as_a_gating_scorer() -> None:
    (spec,) = scorer_specs(['content_safety:gate=true,judges=["mock"]'])
    rebuilt = scorer_registry().build(spec)
    assert rebuilt.spec == spec
    assert rebuilt.spec.gating is True


def test_gate_on_still_decides_over_the_argument() -> None:
    specs = scorer_specs(["content_safety:gate=true", "label"], gate_on=["label"])
    assert {s.label: s.gating for s in specs} == {"content_safety": False, "label": True}


def test_only_a_promoted_judges_failure_fails_the_repetition() -> None:
    failed = [Score(name="label", passed=True), Score(name="groundedness", passed=False)]
    default = {s.spec.label for s in [groundedness()] if s.spec.gating} | {"label"}
    promoted = {s.spec.label for s in [groundedness(gate=True)] if s.spec.gating} | {"label"}
    assert repetition_passed(failed, default) is True
    assert repetition_passed(failed, promoted) is False


def test_a_scorer_without_gate_refuses_the_argument() -> None:
    with pytest.raises(InputError, match="has no argument 'gate'"):
        scorer_specs(["label:gate=true"])


def test_a_gate_default_that_contradicts_the_scorers_gating_is_refused() -> None:
    def factory(*, gate: bool = True) -> ScoreFunction:
        def score(example: Example, output: Output) -> Score:
            return Score()

        return score

    with pytest.raises(TypeError, match="'gate' must default to the scorer's gating"):
        scorer(name="contradiction", gating=False)(factory)
