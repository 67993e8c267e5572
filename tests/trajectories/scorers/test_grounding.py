"""Grounding scorers: retrieval expected and relevant, citations, claims and numbers backed."""

from __future__ import annotations

from typing import Any

import pytest

from arbiter.contract import (
    ChatMessage,
    Chunk,
    Handoff,
    LlmCall,
    Retrieval,
    ToolCall,
    Trajectory,
)
from arbiter.errors import InputError
from arbiter.trajectories.scorers.grounding import (
    citation_present,
    expect_retrieval,
    grounded_overlap,
    numeric_fidelity,
    retrieval_relevance,
)
from tests.trajectories.scorers.case_runs import score_run


def lookup(*similarities: float | None, sources: tuple[str, ...] = (), text: str = "") -> Retrieval:
    """A retrieval whose chunks carry these similarities (and sources, and one text)."""
    names = list(sources) + [None] * (len(similarities) - len(sources))
    return Retrieval(
        query="q",
        chunks=[
            Chunk(source=s, similarity=v, text=text or None)
            for v, s in zip(similarities, names, strict=True)
        ],
    )


def rag(*steps: Any, answer: str | None = "An answer.", **fields: Any) -> Trajectory:
    return Trajectory(
        agent={"agent_class": "rag_focused"}, steps=list(steps), final_answer=answer, **fields
    )


# --- expect_retrieval -------------------------------------------------------------


@pytest.mark.parametrize(
    ("expected", "steps", "passed"),
    [
        (True, [lookup(0.9)], True),
        (True, [], False),
        (False, [lookup()], False),  # a lookup with no chunk still happened
        (False, [], True),
        (True, [Handoff(trajectory=Trajectory(steps=[lookup(0.5)]))], True),
    ],
)
def test_expect_retrieval_compares_what_happened_with_the_case(
    expected: bool, steps: list[Any], passed: bool
) -> None:
    score = score_run(expect_retrieval, rag(*steps), {"expect_retrieval": expected})
    assert score.passed is passed
    assert score.value == (1.0 if passed else 0.0)


def test_expect_retrieval_abstains_without_the_assertion_and_refuses_a_non_boolean() -> None:
    assert score_run(expect_retrieval, rag(lookup(0.9))).passed is None
    with pytest.raises(InputError, match="'expect_retrieval' must be true or false"):
        score_run(expect_retrieval, rag(), {"expect_retrieval": "yes"})


# --- retrieval_relevance ----------------------------------------------------------


@pytest.mark.parametrize(
    ("statistic", "value", "band"),
    [("mean", (0.9 + 0.1 + 0.1) / 3, "danger"), ("top", (0.9 + 0.1) / 2, "review")],
)
def test_retrieval_relevance_bands_the_mean_or_each_lookups_best_similarity(
    statistic: str, value: float, band: str
) -> None:
    run = rag(lookup(0.9, 0.1), lookup(0.1), lookup(None))
    score = score_run(retrieval_relevance, run, statistic=statistic)
    assert score.value == pytest.approx(value)
    assert score.band == band
    assert score.metadata["chunks"] == 3
    assert score.metadata["retrievals"] == 2


def test_retrieval_relevance_takes_the_case_cut_points() -> None:
    run = rag(lookup(0.3))
    assert score_run(retrieval_relevance, run).band == "danger"
    relaxed = score_run(retrieval_relevance, run, {"min_retrieval_similarity": 0.2})
    assert (relaxed.band, relaxed.passed) == ("healthy", True)


@pytest.mark.parametrize("steps", [[], [lookup()], [lookup(None, None)]])
def test_retrieval_relevance_abstains_without_a_scored_chunk(steps: list[Any]) -> None:
    score = score_run(retrieval_relevance, rag(*steps))
    assert (score.passed, score.band, score.value) == (None, None, None)


# --- citation_present -------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "cited"),
    [
        ("Refunds take 30 days [2].", True),
        ("Refunds take 30 days [^1].", True),
        ("Refunds take 30 days [1, 3].", True),
        ("Refunds take 30 days [7].", False),  # only three chunks were retrieved
        ("See refunds.md for details.", True),  # the last part of the source's path
        ("Source: https://help.example.com/kb/42.", True),
        ("As the refund policy says, 30 days.", True),  # a titled source, as a phrase
        ("Refunds take 30 days.", False),
        ("Our policy on refunds is generous.", False),  # 'refunds' is not a source's name
    ],
)
def test_citation_present_finds_markers_and_source_names(answer: str, cited: bool) -> None:
    run = rag(
        lookup(0.9, 0.8, sources=("docs/refunds.md", "https://help.example.com/kb/42")),
        lookup(0.5, sources=("Refund Policy",)),
        answer=answer,
    )
    score = score_run(citation_present, run)
    assert score.passed is cited
    if cited:
        assert score.evidence
        assert score.evidence[0].verified


def test_citation_present_applies_only_to_rag_agents() -> None:
    run = Trajectory(agent={"agent_class": "tool_enabled"}, steps=[lookup(0.9)], final_answer="[1]")
    score = score_run(citation_present, run)
    assert (score.passed, score.metadata) == (None, {"applicable": False})


@pytest.mark.parametrize(
    ("run", "assertions", "why"),
    [
        (rag(answer="[1]"), {}, "nothing was retrieved"),
        (rag(lookup(0.9), answer=None), {}, "no answer"),
        (rag(lookup(0.9), answer="  "), {}, "no answer"),
        (rag(lookup(0.9), answer="x", metadata={"answer_kind": "withheld"}), {}, "notice"),
        (rag(lookup(0.9), answer="x"), {"require_citations": False}, "does not require"),
    ],
)
def test_citation_present_abstains_where_there_is_nothing_to_cite_or_no_claim(
    run: Trajectory, assertions: dict[str, Any], why: str
) -> None:
    score = score_run(citation_present, run, assertions)
    assert score.passed is None
    assert why in score.explanation


# --- grounded_overlap -------------------------------------------------------------

POLICY = "Refunds are accepted within 30 days of delivery for unused items."


def test_grounded_overlap_counts_claims_the_retrieved_chunks_support() -> None:
    answer = (
        "Refunds are accepted within 30 days of delivery. Unused items qualify. "
        "Shipping to Mars is free for platinum members."
    )
    run = rag(lookup(0.9, text=POLICY), answer=answer)
    score = score_run(grounded_overlap, run)
    assert score.value == pytest.approx(2 / 3)
    assert score.band == "review"
    assert [e.quote for e in score.evidence] == ["Shipping to Mars is free for platinum members."]
    assert (score.metadata["claims"], score.metadata["unsupported"]) == (3, 1)


def test_grounded_overlap_fails_a_fluent_fabrication() -> None:
    run = rag(lookup(0.9, text=POLICY), answer="Our headquarters moved to Lisbon in spring.")
    score = score_run(grounded_overlap, run)
    assert (score.value, score.band, score.passed) == (0.0, "danger", False)


def test_grounded_overlap_takes_support_from_tool_results_sub_agents_and_the_question() -> None:
    run = Trajectory(
        steps=[
            ToolCall(name="sql", result={"avg_delivery_days": 4.2, "rows": [["warehouse", "EU"]]}),
            Handoff(trajectory=Trajectory(final_answer="Carrier delays hit Berlin hardest.")),
        ],
        final_answer=(
            "The average delivery time was 4.2 days.\n"
            "- EU warehouse shipments\n"
            "- Carrier delays were worst in Berlin.\n"
            "I hope this helps!"
        ),
    )
    score = score_run(grounded_overlap, run, query="What is the average delivery time?")
    assert score.value == 1.0
    assert score.metadata["claims"] == 3  # the pleasantry makes no claim


def test_grounded_overlap_reads_the_question_from_user_messages_without_a_case_query() -> None:
    call = LlmCall(input_messages=[ChatMessage(role="user", content="Compare Lisbon and Porto.")])
    run = Trajectory(
        steps=[call, ToolCall(name="weather", result={"lisbon": "sunny"})],
        final_answer="Lisbon and Porto compared. Porto is rainy and cold.",
    )
    score = score_run(grounded_overlap, run)
    assert score.value == 0.5  # rain and cold are nowhere; the rest echoes the question


def test_grounded_overlap_abstains_when_the_question_is_all_the_support() -> None:
    run = Trajectory(agent={"agent_class": "llm_only"}, final_answer="Paris is in France.")
    score = score_run(grounded_overlap, run, query="Where is Paris?")
    assert score.passed is None
    assert "nothing was retrieved or returned" in score.explanation


@pytest.mark.parametrize("kind", ["withheld", "annotated", "rewritten"])
def test_grounded_overlap_abstains_on_a_platform_notice(kind: str) -> None:
    run = rag(
        lookup(0.9, text=POLICY),
        answer="This answer was withheld: 'Shipping to Mars' is not supported.",
        metadata={"answer_kind": kind},
    )
    score = score_run(grounded_overlap, run)
    assert score.passed is None
    assert score.metadata["answer_kind"] == kind


@pytest.mark.parametrize(
    ("run", "why"),
    [
        (rag(lookup(0.9, text=POLICY), answer=None), "no answer"),
        (rag(answer="Refunds take 30 days."), "no support text"),
        (rag(lookup(0.9, text=POLICY), answer="Sure! Thanks, I hope it helps."), "no claim"),
    ],
)
def test_grounded_overlap_abstains_without_answer_support_or_claim(
    run: Trajectory, why: str
) -> None:
    score = score_run(grounded_overlap, run)
    assert (score.passed, score.band) == (None, None)
    assert why in score.explanation


def test_grounded_overlap_claim_support_share_is_an_argument() -> None:
    run = rag(lookup(0.9, text=POLICY), answer="Refunds for damaged electronics ship overnight.")
    assert score_run(grounded_overlap, run).value == 0.0  # 1 of 5 content words
    assert score_run(grounded_overlap, run, min_claim_support=0.2).value == 1.0
    with pytest.raises(InputError, match="min_claim_support"):
        grounded_overlap(min_claim_support=1.5)


@pytest.mark.parametrize(
    "answer",
    [
        "word " * 200_000,  # one megabyte-long sentence
        "a. " * 300_000,  # sentences without a content word
        "x1. " * 250_000,  # a million-character answer of claims
        "." * 1_000_000,
        "a" + " " * 999_998 + "b",  # one run of spaces, no line break
        "a\n" + " \n" * 400_000,
    ],
)
def test_grounded_overlap_reads_a_megabyte_answer_of_hostile_text(answer: str) -> None:
    run = rag(lookup(0.9, text="word x1"), answer=answer)
    score = score_run(grounded_overlap, run)
    assert score.error is None
    assert score.value in (None, 1.0)


# --- numeric_fidelity -------------------------------------------------------------


def sql(result: Any) -> ToolCall:
    return ToolCall(name="sql", arguments={"sql": "SELECT 1"}, result=result)


@pytest.mark.parametrize(
    ("answer", "result"),
    [
        ("Revenue was $1,234.50.", {"revenue": 1234.5}),
        ("Revenue was 1234.5 dollars.", "total: 1,234.50"),
        ("Growth was 12.3% this year.", {"growth": 0.1234}),
        ("Growth was 12.3 percent.", [12.34]),
        ("We served 1.2 million users.", {"users": "1,203,400"}),
        ("Churn fell 5%.", {"churn_delta": -0.05}),
        ("About 4.5K tickets.", {"tickets": 4512}),
        ("1. Revenue was 7.", {"revenue": 7}),  # the list marker is not a figure
    ],
)
def test_numeric_fidelity_finds_each_figure_at_its_written_precision(
    answer: str, result: Any
) -> None:
    score = score_run(numeric_fidelity, Trajectory(steps=[sql(result)], final_answer=answer))
    assert score.value == 1.0, score.explanation
    assert score.band == "healthy"


def test_numeric_fidelity_names_the_numbers_no_tool_returned() -> None:
    run = Trajectory(
        steps=[sql({"orders": 42})], final_answer="There were 42 orders worth 9,999.99 in total."
    )
    score = score_run(numeric_fidelity, run)
    assert score.value == 0.5
    assert score.band == "review"
    assert [e.quote for e in score.evidence] == ["9,999.99"]
    strict = score_run(numeric_fidelity, run, {"min_numeric_fidelity": 1.0})
    assert (strict.band, strict.passed) == ("danger", False)


def test_numeric_fidelity_takes_numbers_from_the_question_and_sub_agents() -> None:
    expert = Trajectory(steps=[sql({"x": 1})], final_answer="Margin was 18.5%.")
    run = Trajectory(
        steps=[Handoff(trajectory=expert)], final_answer="In 2024 the margin was 18.5%."
    )
    score = score_run(numeric_fidelity, run, query="What was the 2024 margin?")
    assert score.value == 1.0


def test_numeric_fidelity_takes_numbers_from_retrieved_chunks_too() -> None:
    run = Trajectory(
        steps=[lookup(0.9, text="Refunds within 30 days."), sql({"total": 45.2})],
        final_answer="Refunds take 30 days; your order came to $45.20.",
    )
    assert score_run(numeric_fidelity, run).value == 1.0


def test_numeric_fidelity_counts_numbers_of_a_failed_call_as_unfound() -> None:
    run = Trajectory(
        steps=[ToolCall(name="sql", error="timeout")], final_answer="Revenue was 5.2M."
    )
    assert score_run(numeric_fidelity, run).value == 0.0


@pytest.mark.parametrize(
    ("run", "why"),
    [
        (Trajectory(steps=[sql(3)], final_answer="No numbers here."), "no number"),
        (Trajectory(final_answer="Revenue was 5."), "called no tool and retrieved nothing"),
        (Trajectory(steps=[sql(3)]), "no answer"),
        (
            Trajectory(steps=[sql(3)], final_answer="5", metadata={"answer_kind": "rewritten"}),
            "platform notice",
        ),
    ],
)
def test_numeric_fidelity_abstains_without_figures_tools_or_a_model_answer(
    run: Trajectory, why: str
) -> None:
    score = score_run(numeric_fidelity, run)
    assert score.passed is None
    assert why in score.explanation
