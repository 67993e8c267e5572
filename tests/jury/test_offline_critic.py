"""The offline critic: the string detectors as a deterministic juror, with no provider."""

from __future__ import annotations

import pytest

from arbiter.contract import Callout, Case, Critique
from arbiter.jury import Jury
from arbiter.jury.critics import CriticSpec
from arbiter.jury.offline import (
    CONTRADICTED_SCORE,
    UNSUPPORTED_SCORE,
    critique_of,
    run_offline_critic,
)
from arbiter.providers.mock import MockProvider

CONTEXT = (
    "Refunds are accepted within 30 days of delivery. A receipt is required. "
    "Exchanges are not offered."
)
CLEAN = "Refunds are accepted within 30 days of delivery, and a receipt is required."
WRONG_FIGURE = "Refunds are accepted within 45 days of delivery, and a receipt is required."
FLIPPED = "Refunds are accepted within 30 days of delivery, and a receipt is optional."
CLAIM = "Refunds are accepted within 30 days of delivery. Studies show customers love it."


def case(output: str, *, context: str = CONTEXT) -> Case:
    return Case(id="c", task="Summarise the policy.", context=context, output=output)


async def critique(output: str, lens: str = "factual") -> Critique:
    outcome = run_offline_critic(lens, lens, "mock", case(output))
    assert outcome.status == "ok"
    assert outcome.critique is not None
    assert outcome.raw == outcome.critique.model_dump_json()
    return outcome.critique


def callout(kind: str, dimension: str = "accuracy") -> Callout:
    return Callout.model_validate(
        {"dimension": dimension, "kind": kind, "claim": "c", "quote": "q", "rival": None}
    )


@pytest.mark.parametrize("lens", ["factual", "logical", "adversary", "custom"])
async def test_the_same_case_always_gets_the_same_critique(lens: str) -> None:
    first = run_offline_critic("c", lens, "mock", case(WRONG_FIGURE))
    second = run_offline_critic("c", lens, "mock", case(WRONG_FIGURE))
    assert first.critique == second.critique
    assert first.model == second.model == "mock"
    assert first.usage is not None
    assert first.usage.input_tokens == first.usage.output_tokens == 0


async def test_a_mock_critic_of_a_jury_calls_no_provider() -> None:
    spy = MockProvider()
    jury = Jury([CriticSpec(name="factual")], provider_factory=lambda name: spy)
    verdict = await jury.judge_async(case(WRONG_FIGURE))
    assert spy.requests == []
    assert verdict.critiques[0].critique is not None
    assert verdict.critiques[0].critique.accuracy == CONTRADICTED_SCORE


@pytest.mark.parametrize("output", [CLEAN, WRONG_FIGURE, FLIPPED, CLAIM])
async def test_the_answer_is_valid_critique_json_with_verbatim_quotes(output: str) -> None:
    parsed = await critique(output, "adversary")
    assert all(c.quote in output for c in parsed.callouts)


async def test_a_faithful_output_scores_five_everywhere() -> None:
    parsed = await critique(CLEAN)
    assert (parsed.accuracy, parsed.consistency, parsed.completeness) == (5, 5, 5)
    assert parsed.callouts == []


async def test_a_contradicted_figure_scores_accuracy_two_and_names_the_rival() -> None:
    parsed = await critique(WRONG_FIGURE)
    assert parsed.accuracy == CONTRADICTED_SCORE
    assert (parsed.consistency, parsed.completeness) == (5, 5)
    (finding,) = parsed.callouts
    assert finding.kind == "contradicted"
    assert finding.rival == "30 days"


async def test_an_unsupported_claim_scores_accuracy_three() -> None:
    parsed = await critique(CLAIM)
    assert parsed.accuracy == UNSUPPORTED_SCORE
    assert [c.kind for c in parsed.callouts] == ["unsupported"]


async def test_the_lens_reaches_the_detectors() -> None:
    flipped = "Refunds are accepted within 30 days of delivery. Exchanges are offered."
    logical = await critique(flipped, "logical")
    factual = await critique(flipped, "factual")
    assert logical.consistency == CONTRADICTED_SCORE
    assert factual.consistency == 5


@pytest.mark.parametrize(
    ("kinds", "scores"),
    [
        ([], (5, 5, 5)),
        ([("unsupported", "accuracy")], (3, 5, 5)),
        ([("contradicted", "accuracy")], (2, 5, 5)),
        ([("unsupported", "accuracy"), ("contradicted", "accuracy")], (2, 5, 5)),
        ([("contradicted", "consistency"), ("unsupported", "completeness")], (5, 2, 3)),
    ],
)
def test_each_dimension_takes_the_score_of_its_worst_callout(
    kinds: list[tuple[str, str]], scores: tuple[int, int, int]
) -> None:
    result = critique_of([callout(kind, dimension) for kind, dimension in kinds])
    assert (result.accuracy, result.consistency, result.completeness) == scores
    assert len(result.callouts) == len(kinds)
