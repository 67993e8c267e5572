"""The mock provider: the detectors as a deterministic critic behind the Provider seam."""

from __future__ import annotations

import pytest

from arbiter.config import Settings
from arbiter.contract import Callout, Critique
from arbiter.errors import InvalidResponse
from arbiter.providers.base import CompletionRequest, Provider, Subject
from arbiter.providers.mock import (
    CONTRADICTED_SCORE,
    UNSUPPORTED_SCORE,
    MockProvider,
    critique_of,
)
from arbiter.providers.registry import make_provider
from arbiter.providers.schema import strict_json_schema

CONTEXT = (
    "Refunds are accepted within 30 days of delivery. A receipt is required. "
    "Exchanges are not offered."
)
CLEAN = "Refunds are accepted within 30 days of delivery, and a receipt is required."
WRONG_FIGURE = "Refunds are accepted within 45 days of delivery, and a receipt is required."
FLIPPED = "Refunds are accepted within 30 days of delivery, and a receipt is optional."
CLAIM = "Refunds are accepted within 30 days of delivery. Studies show customers love it."


def request(output: str, lens: str = "factual", *, context: str = CONTEXT) -> CompletionRequest:
    return CompletionRequest(
        model="mock",
        system="You are a strict reviewer.",
        prompt="(the mock reads the subject)",
        json_schema=strict_json_schema(Critique),
        subject=Subject(task="Summarise the policy.", context=context, output=output, lens=lens),
    )


async def critique(output: str, lens: str = "factual") -> Critique:
    response = await MockProvider().complete(request(output, lens))
    return Critique.model_validate_json(response.text)


def callout(kind: str, dimension: str = "accuracy") -> Callout:
    return Callout.model_validate(
        {"dimension": dimension, "kind": kind, "claim": "c", "quote": "q", "rival": None}
    )


def test_it_is_a_provider_named_mock() -> None:
    provider = MockProvider()
    assert isinstance(provider, Provider)
    assert provider.name == "mock"


def test_the_registry_builds_it_by_name() -> None:
    assert isinstance(make_provider("mock", Settings(_env_file=None)), MockProvider)


@pytest.mark.parametrize("lens", ["factual", "logical", "adversary", "custom"])
async def test_the_same_request_always_gets_the_same_answer(lens: str) -> None:
    provider = MockProvider()
    first = await provider.complete(request(WRONG_FIGURE, lens))
    second = await provider.complete(request(WRONG_FIGURE, lens))
    assert first.text == second.text
    assert first.model == second.model == "mock"
    assert first.usage.input_tokens == first.usage.output_tokens == 0


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


async def test_a_request_without_a_subject_is_an_invalid_response() -> None:
    bare = request(CLEAN).model_copy(update={"subject": None})
    with pytest.raises(InvalidResponse, match="subject"):
        await MockProvider().complete(bare)


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
