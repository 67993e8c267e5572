"""The shape of ``OnlineResult``: payloads inside ``layers``, typed accessors, version 1 read."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from arbiter.contract import (
    ConsistencyResult,
    DisagreementResult,
    GroundingResult,
    HeuristicFinding,
    HeuristicResult,
    JudgeOutcome,
    LayerResult,
    OnlineResult,
)

FINDING = HeuristicFinding(rule="low_confidence", message="confidence 0.2 is below 0.5")


def ran(payload: Any) -> LayerResult:
    return LayerResult(status="ran", latency_ms=0.1, payload=payload)


def full_result() -> OnlineResult:
    return OnlineResult(
        prediction_id="p",
        label="nominal",
        escalated=True,
        escalation_reasons=["heuristics: low_confidence"],
        layers={
            "heuristics": ran(HeuristicResult(flagged=True, findings=[FINDING])),
            "grounding": ran(GroundingResult(flagged=False, stages=[1, 2])),
            "disagreement": ran(DisagreementResult(labels_by_provider={"a": "x"}, agreed=True)),
            "consistency": ran(ConsistencyResult(threshold=0.9)),
            "judge": ran(JudgeOutcome(label="critical", source="local", agrees=False)),
        },
    )


def test_the_json_holds_each_payload_inside_its_layer_and_no_field_per_layer() -> None:
    document = json.loads(full_result().model_dump_json())
    assert document["schema_version"] == 2
    assert set(document) == {
        "schema_version",
        "prediction_id",
        "label",
        "escalated",
        "escalation_reasons",
        "layers",
        "errors",
        "total_ms",
        "metadata",
    }
    assert document["layers"]["judge"] == {
        "status": "ran",
        "reason": None,
        "latency_ms": 0.1,
        "cut_off": False,
        "payload": {
            "label": "critical",
            "source": "local",
            "agrees": False,
            "attempts": [],
            # The judge chain's calls, in the shape every judged thing reports.
            "model": {
                "calls": 0,
                "cached": 0,
                "input_tokens": 0,
                "output_tokens": 0,
                "latency_ms": 0.0,
                "cost_usd": None,
            },
        },
    }


def test_built_in_payloads_come_back_from_json_as_their_models() -> None:
    result = full_result()
    back = OnlineResult.model_validate_json(result.model_dump_json())
    assert back == result
    assert isinstance(back.layers["consistency"].payload, ConsistencyResult)
    assert back.heuristics == HeuristicResult(flagged=True, findings=[FINDING])
    assert back.disagreement is not None
    assert back.disagreement.agreed is True


def test_the_typed_accessors_are_none_for_a_layer_that_found_nothing() -> None:
    result = OnlineResult(
        prediction_id="p",
        label=None,
        layers={"judge": LayerResult(status="not_escalated", reason="not escalated")},
    )
    assert (result.heuristics, result.grounding, result.judge) == (None, None, None)
    assert result.payload("tone", HeuristicResult) is None


def test_a_payload_asked_for_as_another_model_is_a_type_error() -> None:
    with pytest.raises(
        TypeError, match="layer 'judge' holds a JudgeOutcome, not a GroundingResult"
    ):
        full_result().payload("judge", GroundingResult)


def test_a_payload_that_is_neither_a_model_nor_a_dict_is_refused() -> None:
    with pytest.raises(ValidationError, match="must be a model, a dict or null, not list"):
        LayerResult(status="ran", payload=[1, 2])


@pytest.mark.parametrize(
    ("layers", "flagged"),
    [
        ({}, False),
        ({"heuristics": ran(HeuristicResult(flagged=False))}, False),
        ({"heuristics": ran(HeuristicResult(flagged=True))}, True),
        ({"grounding": ran(GroundingResult(flagged=True))}, True),
        ({"shouting": ran({"flagged": True})}, True),
        ({"judge": ran(JudgeOutcome(label="x", source="local"))}, False),
    ],
)
def test_flagged_means_a_free_layer_flagged(layers: dict[str, LayerResult], flagged: bool) -> None:
    assert OnlineResult(prediction_id="p", label=None, layers=layers).flagged is flagged


VERSION_1: dict[str, Any] = {
    "schema_version": 1,
    "prediction_id": "evt-2",
    "label": "nominal",
    "heuristics": {"flagged": True, "findings": [FINDING.model_dump()]},
    "grounding": {"flagged": False, "claims": [], "stages": [1, 2]},
    "disagreement": None,
    "consistency": None,
    "judge": {"label": None, "source": "heuristics_fallback", "agrees": None, "attempts": []},
    "escalated": True,
    "escalation_reasons": ["heuristics: low_confidence"],
    "layers": {
        "heuristics": {"status": "ran", "reason": None, "latency_ms": 0.04, "cut_off": False},
        "grounding": {"status": "ran", "reason": None, "latency_ms": 0.03, "cut_off": False},
        "disagreement": {"status": "not_configured", "reason": "not configured"},
        "consistency": {"status": "abstained", "reason": "cut off at 25s budget", "cut_off": True},
        "judge": {"status": "ran", "reason": None, "latency_ms": 5.0, "cut_off": False},
    },
    "errors": ["judge: ollama: TimeoutError: no verdict within 5s"],
    "total_ms": 5.2,
    "metadata": {"line": 2},
}


def test_a_version_1_document_is_read_into_the_new_shape() -> None:
    result = OnlineResult.model_validate_json(json.dumps(VERSION_1))
    assert result.schema_version == 2
    assert list(result.layers) == list(VERSION_1["layers"])
    assert result.layers["heuristics"].latency_ms == 0.04
    assert result.heuristics == HeuristicResult(flagged=True, findings=[FINDING])
    assert result.judge == JudgeOutcome(label=None, source="heuristics_fallback")
    assert result.layers["consistency"].cut_off is True
    assert result.layers["consistency"].payload is None
    assert (result.flagged, result.error_kinds()) == (True, ["judge"])
    assert OnlineResult.model_validate_json(result.model_dump_json()) == result


def test_a_version_1_payload_without_a_layer_report_is_a_layer_that_ran() -> None:
    result = OnlineResult(prediction_id="p", label=None, heuristics=HeuristicResult(flagged=True))
    assert result.layers["heuristics"].status == "ran"
    assert result.flagged
