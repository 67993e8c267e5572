"""Layer 1b: narrative grounding — citation claims, keywords, normalisation, stage 3."""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Sequence
from typing import Any

import pytest

from arbiter.online.grounding import (
    GroundingConfig,
    check_grounding,
    check_grounding_stage3,
    grounding_text,
    normalise_reference,
)
from arbiter.online.rules import Condition
from arbiter.vectors.base import VectorItem
from arbiter.vectors.stores import EmbeddedVectorStore

CONFIG = GroundingConfig()


def sentinel(narrative: Any, refs: Any = None) -> dict[str, Any]:
    raw: dict[str, Any] = {"risk_level": "high", "narrative": narrative}
    if refs is not None:
        raw["policy_refs"] = refs
    return {"id": "tx-1", "label": "high", "confidence": 0.8, "raw_output": raw}


def test_a_cited_policy_that_is_declared_is_grounded() -> None:
    result = check_grounding(
        sentinel("Escalated per policy AML-2024-03 after structuring.", ["AML-2024-03"]), CONFIG
    )
    assert result.claims == ["aml-2024-03"]
    assert (result.flagged, result.ungrounded, result.stages) == (False, [], [1, 2])


def test_a_cited_policy_that_is_not_declared_is_ungrounded() -> None:
    result = check_grounding(sentinel("Escalated per policy AML-2024-07.", ["AML-2024-03"]), CONFIG)
    assert (result.flagged, result.ungrounded) == (True, ["aml-2024-07"])


@pytest.mark.parametrize(
    ("narrative", "refs"),
    [
        # Unicode hyphens in the narrative, ASCII in the declared reference ...
        ("Escalated per policy AML‑2024‑03 (non-breaking hyphens).", ["AML-2024-03"]),
        ("Escalated per policy AML–2024–03 (en dashes).", ["AML-2024-03"]),
        # ... and the other way round.
        ("Escalated per policy AML-2024-03.", ["AML‐2024‐03"]),
        # A trailing " Section N" on either side.
        ("Escalated per policy AML-2024-03 Section 4.", ["AML-2024-03"]),
        ("Escalated per policy AML-2024-03.", ["AML-2024-03 Section 4"]),
        # Case and whitespace.
        ("Escalated per policy aml-2024-03.", ["  AML-2024-03  "]),
        # A bare section that the declared reference carries.
        ("See Section 4 of the policy.", ["AML-2024-03 Section 4"]),
    ],
)
def test_normalisation_grounds_the_spellings_verbatim_matching_misses(
    narrative: str, refs: list[str]
) -> None:
    result = check_grounding(sentinel(narrative, refs), CONFIG)
    assert result.claims
    assert result.ungrounded == []


@pytest.mark.parametrize(
    ("narrative", "refs", "ungrounded"),
    [
        # Hard negatives: normalisation must not make different references equal.
        ("Escalated per policy AML‑2024‑04.", ["AML-2024-03"], ["aml-2024-04"]),
        ("See Section 4 of the policy.", ["AML-2024-03 Section 14"], ["section 4"]),
        ("See Section 1 of the policy.", ["AML-2024-03 Section 14"], ["section 1"]),
        ("Escalated per policy AML-2024-031.", ["AML-2024-03"], ["aml-2024-031"]),
        ("See Section 4 of the policy.", [], ["section 4"]),
    ],
)
def test_normalisation_keeps_different_references_apart(
    narrative: str, refs: list[str], ungrounded: list[str]
) -> None:
    result = check_grounding(sentinel(narrative, refs), CONFIG)
    assert (result.flagged, result.ungrounded) == (True, ungrounded)


@pytest.mark.parametrize(
    ("narrative", "claim"),
    [
        ("as required by § 1020.320(a)", "§ 1020.320(a)"),
        ("under Article 11 of the directive", "article 11"),
        ("per Regulation (EU) 2015/847", "regulation (eu) 2015/847"),
        ("see 31 CFR 1010.311", "31 cfr 1010.311"),
        ("see Sec. 5.2", "sec. 5.2"),
    ],
)
def test_stage1_finds_citation_shaped_claims(narrative: str, claim: str) -> None:
    assert check_grounding(sentinel(narrative, []), CONFIG).claims == [claim]


def test_a_claim_inside_a_word_is_not_a_claim() -> None:
    assert check_grounding(sentinel("intersection 5 and cart 3", []), CONFIG).claims == []


def test_stage2_keywords_are_grounded_only_by_a_reference_that_names_them() -> None:
    result = check_grounding(
        sentinel("AML checks and OFAC sanctions screening; anti‑money  laundering.", ["AML-01"]),
        CONFIG,
    )
    assert result.keywords == ["AML", "OFAC", "sanctions", "anti-money laundering"]
    assert result.ungrounded == ["OFAC", "sanctions", "anti-money laundering"]


def test_keywords_match_whole_words_only() -> None:
    result = check_grounding(sentinel("Caesar's ambulance passed the kycline.", []), CONFIG)
    assert (result.keywords, result.flagged) == ([], False)


def test_custom_keywords_and_patterns_are_configurable() -> None:
    config = GroundingConfig(keywords=["Basel III"], citation_patterns=[r"\b[A-Z]{3}-\d{2}\b"])
    result = check_grounding(
        sentinel("Under Basel III and POL-12 this is fine.", ["POL-12"]), config
    )
    assert (result.claims, result.keywords, result.ungrounded) == (
        ["pol-12"],
        ["Basel III"],
        ["Basel III"],
    )


def test_references_may_be_a_string_or_objects() -> None:
    text = "Escalated per policy AML-2024-03."
    assert not check_grounding(sentinel(text, "AML-2024-03"), CONFIG).flagged
    assert not check_grounding(sentinel(text, [{"id": "AML-2024-03", "v": 2}]), CONFIG).flagged


@pytest.mark.parametrize(
    "prediction",
    [
        {"label": "high"},
        sentinel(None),
        sentinel(12345),
        sentinel(""),
        {"raw_output": "narrative as a string"},
    ],
)
def test_no_text_to_scan_means_no_stage_ran(prediction: dict[str, Any]) -> None:
    result = check_grounding(prediction, CONFIG)
    assert (result.flagged, result.stages) == (False, [])


def test_skip_when_no_ops_for_fallback_predictions() -> None:
    config = GroundingConfig(
        skip_when=Condition(field="raw_output.source", op="==", value="fallback")
    )
    prediction = sentinel("per policy X-1", [])
    prediction["raw_output"]["source"] = "fallback"
    assert check_grounding(prediction, config).stages == []


def test_several_text_fields_and_lists_of_strings_are_scanned() -> None:
    config = GroundingConfig(text_fields=["raw_output.narrative", "raw_output.notes"])
    prediction = sentinel(["first part", "per policy P-1"], [])
    prediction["raw_output"]["notes"] = "see Article 5"
    assert check_grounding(prediction, config).claims == ["p-1", "article 5"]


def test_normalise_reference_folds_hyphens_case_space_and_section() -> None:
    assert normalise_reference("  AML‑2024‑03 \t SECTION 4 ") == "aml-2024-03"
    assert normalise_reference("Section 4") == "section 4"


def test_a_5mb_narrative_is_scanned_up_to_the_cap_and_the_cut_is_recorded() -> None:
    narrative = "routine transfer between own accounts. " * 135_000 + "per policy LATE-1"
    assert len(narrative) > 5_000_000
    notes: list[str] = []
    tracemalloc.start()
    started = time.perf_counter()
    result = check_grounding(sentinel(narrative, []), CONFIG, notes=notes)
    elapsed = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert notes == [f"raw_output.narrative truncated: scanned 100,000 of {len(narrative):,} chars"]
    assert "late-1" not in result.claims  # beyond the cap: never read
    assert peak < 5_000_000  # no copy of the whole narrative was made
    assert elapsed < 5.0  # generous: scanning the cap takes milliseconds


def test_grounding_text_caps_each_field() -> None:
    config = GroundingConfig(max_scan_chars=10)
    assert grounding_text(sentinel("x" * 50), config) == "x" * 10


class TableEmbedder:
    """Embeds each text as the vector of the first table key it contains."""

    name = "table"
    dimension = 3

    def __init__(self, table: dict[str, list[float]], default: Sequence[float]) -> None:
        self.table = table
        self.default = list(default)
        self.calls: list[list[str]] = []

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return [
            next((v for k, v in self.table.items() if k in text), self.default) for text in texts
        ]


@pytest.fixture
async def policies() -> EmbeddedVectorStore:
    store = EmbeddedVectorStore()
    await store.upsert(
        "policies",
        [
            VectorItem(id="AML-2024-03", vector=[1.0, 0.0, 0.0], metadata={"title": "structuring"}),
            VectorItem(id="KYC-2023-01", vector=[0.0, 1.0, 0.0], metadata={"title": "onboarding"}),
        ],
    )
    return store


async def test_stage3_grounds_text_close_to_a_real_policy(policies: EmbeddedVectorStore) -> None:
    embedder = TableEmbedder({"structuring": [0.9, 0.1, 0.0]}, default=[0.0, 0.0, 1.0])
    stage12 = check_grounding(sentinel("Structuring under AML rules.", ["AML-1"]), CONFIG)
    result = await check_grounding_stage3(
        stage12,
        "structuring under aml rules",
        embedder=embedder,
        store=policies,
        namespace="policies",
        threshold=0.70,
    )
    assert result.stages == [1, 2, 3]
    assert result.best_policy_similarity == pytest.approx(0.9 / (0.82**0.5), abs=1e-6)
    assert result.flagged is False


async def test_stage3_flags_text_far_from_every_policy(policies: EmbeddedVectorStore) -> None:
    embedder = TableEmbedder({}, default=[0.0, 0.0, 1.0])
    stage12 = check_grounding(sentinel("AML checks.", ["AML-1"]), CONFIG)
    assert stage12.flagged is False
    result = await check_grounding_stage3(
        stage12,
        "aml checks",
        embedder=embedder,
        store=policies,
        namespace="policies",
        threshold=0.7,
    )
    assert result.best_policy_similarity == pytest.approx(0.0, abs=1e-6)
    assert result.flagged is True


async def test_stage3_on_an_empty_namespace_flags_with_no_similarity() -> None:
    stage12 = check_grounding(sentinel("AML checks.", ["AML-1"]), CONFIG)
    result = await check_grounding_stage3(
        stage12,
        "aml checks",
        embedder=TableEmbedder({}, default=[1.0, 0.0, 0.0]),
        store=EmbeddedVectorStore(),
        namespace="policies",
        threshold=0.7,
    )
    assert (result.best_policy_similarity, result.flagged, result.stages) == (None, True, [1, 2, 3])
