"""A critic's spec is checked when it is made, not when it is first called."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from arbiter.jury.critics import CriticSpec, critic_prompt


def test_custom_lens_without_instructions_is_refused_up_front() -> None:
    with pytest.raises(ValidationError, match="needs 'instructions'"):
        CriticSpec(name="mine", lens="custom")


def test_custom_lens_instructions_go_into_the_prompt() -> None:
    spec = CriticSpec(name="mine", lens="custom", instructions="legal. Check every clause.")
    assert "legal. Check every clause." in critic_prompt(spec)


def test_unlabelled_cases_are_left_out_of_accuracy_and_calibration() -> None:
    from arbiter.contract import Case, CriticOutcome, Critique
    from arbiter.jury.evaluation import evaluate_jury

    def case(case_id: str, **label: object) -> Case:
        return Case(id=case_id, task="t", context="c", output="o", **label)  # type: ignore[arg-type]

    clean = CriticOutcome(
        critic="a",
        lens="factual",
        model="m",
        status="ok",
        critique=Critique(accuracy=5, consistency=5, completeness=5, callouts=[]),
    )
    cases = [case("x", expected="ACCEPT"), case("y", defective=False), case("z")]
    evaluation = evaluate_jury(cases, [[clean]] * 3)
    assert evaluation.accuracy == 1.0  # "z" (no label) neither right nor wrong
    assert evaluation.n_cases == 3
