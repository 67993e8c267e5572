"""Layer 1: heuristic rules as data, compiled once, checked per prediction."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from arbiter.errors import InputError
from arbiter.online.heuristics import check_heuristics, compile_rules
from arbiter.online.rules import (
    Condition,
    ConfidenceBelow,
    HeuristicRules,
    Implies,
    LabelIn,
    RequiredField,
    default_rules,
    load_rules,
    parse_rules,
)

SILENT_CONTRADICTION = {
    "kind": "implies",
    "name": "silent_contradiction",
    "when": {"field": "raw_output.anomaly_score", "op": ">=", "value": 0.8},
    "then": {"field": "label", "op": "==", "value": "critical"},
}


def synapse(label: str = "nominal", score: Any = 0.1, confidence: Any = 0.9) -> dict[str, Any]:
    return {
        "id": "ax-1",
        "label": label,
        "confidence": confidence,
        "raw_output": {"status": label, "anomaly_score": score},
    }


def fired(prediction: dict[str, Any], rules: HeuristicRules) -> list[str]:
    return [finding.rule for finding in check_heuristics(prediction, rules).findings]


def test_clean_prediction_passes_the_bundled_rules() -> None:
    result = check_heuristics(synapse(), compile_rules(default_rules()))
    assert (result.flagged, result.findings) == (False, [])


@pytest.mark.parametrize(
    ("label", "score", "fires"),
    [
        ("nominal", 0.93, True),  # the reference's silent contradiction
        ("degraded", 0.8, True),  # the boundary is inclusive
        ("critical", 0.93, False),
        ("nominal", 0.79, False),
        ("nominal", "0.93", False),  # not a number: the premise does not hold
        ("nominal", True, False),  # a bool is not a score
    ],
)
def test_silent_contradiction_fires_only_when_the_score_demands_critical(
    label: str, score: Any, fires: bool
) -> None:
    rules = HeuristicRules(rules=[Implies.model_validate(SILENT_CONTRADICTION)])
    assert fired(synapse(label, score), rules) == (["silent_contradiction"] if fires else [])


def test_silent_contradiction_message_names_the_requirement_and_what_was_found() -> None:
    rules = HeuristicRules(rules=[Implies.model_validate(SILENT_CONTRADICTION)])
    [finding] = check_heuristics(synapse("nominal", 0.9), rules).findings
    assert 'raw_output.anomaly_score >= 0.8 requires label == "critical"' in finding.message
    assert "got label = 'nominal'" in finding.message


@pytest.mark.parametrize(
    ("confidence", "fires"),
    [
        (0.49, True),
        (0.5, False),
        (0.9, False),
        (1.0, False),
        (7, True),
        (-0.1, True),
        (float("nan"), True),
        ("high", True),
        (None, False),
    ],
)
def test_confidence_below_fires_under_the_threshold_and_on_non_numbers(
    confidence: Any, fires: bool
) -> None:
    rules = HeuristicRules(rules=[ConfidenceBelow(threshold=0.5)])
    assert fired(synapse(confidence=confidence), rules) == (["confidence_below"] if fires else [])


def test_confidence_below_can_demand_a_confidence() -> None:
    rules = HeuristicRules(rules=[ConfidenceBelow(threshold=0.5, flag_missing=True)])
    prediction = synapse()
    del prediction["confidence"]
    [finding] = check_heuristics(prediction, rules).findings
    assert finding.message == "the prediction gives no confidence"


@pytest.mark.parametrize(
    ("raw_output", "problem"),
    [({}, "is missing"), ({"status": None}, "is null"), ({"status": "  "}, "is blank")],
)
def test_required_field_reports_missing_null_and_blank(
    raw_output: dict[str, Any], problem: str
) -> None:
    rules = HeuristicRules(rules=[RequiredField(field="raw_output.status")])
    [finding] = check_heuristics({"label": "x", "raw_output": raw_output}, rules).findings
    assert finding.rule == "required_field:raw_output.status"
    assert finding.message == f"required field 'raw_output.status' {problem}"


def test_required_field_follows_list_indices() -> None:
    rules = HeuristicRules(rules=[RequiredField(field="raw_output.items.1.id")])
    present = {"raw_output": {"items": [{"id": "a"}, {"id": "b"}]}}
    absent = {"raw_output": {"items": [{"id": "a"}]}}
    assert (fired(present, rules), fired(absent, rules)) == (
        [],
        ["required_field:raw_output.items.1.id"],
    )


@pytest.mark.parametrize(
    ("label", "fires"),
    [("nominal", False), ("reject", True), ("Nominal", True), (None, True), (3, True)],
)
def test_label_in_fires_outside_the_vocabulary(label: Any, fires: bool) -> None:
    rules = HeuristicRules(rules=[LabelIn(labels=["nominal", "degraded", "critical"])])
    assert fired({"label": label}, rules) == (["label_in"] if fires else [])


def test_findings_come_in_rule_order_and_a_broken_prediction_fires_everything() -> None:
    prediction = {"label": 5, "confidence": math.nan}
    assert fired(prediction, default_rules()) == [
        "label_in_vocabulary",
        "low_confidence",
        "required_field:raw_output.status",
        "required_field:raw_output.anomaly_score",
    ]


@pytest.mark.parametrize("prediction", [{}, {"raw_output": "not a dict"}, {"raw_output": [1, 2]}])
def test_malformed_predictions_are_reported_not_raised(prediction: dict[str, Any]) -> None:
    assert check_heuristics(prediction, default_rules()).flagged is True


@pytest.mark.parametrize(
    ("condition", "holds"),
    [
        (Condition(field="label", op="in", value=["critical", "degraded"]), True),
        (Condition(field="label", op="not_in", value=["critical"]), False),
        (Condition(field="label", op="!=", value="nominal"), True),
        (Condition(field="raw_output.anomaly_score", op="<", value=1), True),
        (Condition(field="raw_output.anomaly_score", op=">", value="x"), False),
        (Condition(field="raw_output.source", op="missing"), True),
        (Condition(field="raw_output.status", op="exists"), True),
        (Condition(field="label", op="in", value=[["unhashable"], "critical"]), True),
    ],
)
def test_conditions_compare_and_a_type_mismatch_is_false(condition: Condition, holds: bool) -> None:
    assert condition.compile()(synapse("critical", 0.9)) is holds


def test_rules_load_from_a_json_file(tmp_path: Path) -> None:
    path = tmp_path / "rules.json"
    path.write_text(
        json.dumps([SILENT_CONTRADICTION, {"kind": "label_in", "labels": ["nominal", "critical"]}])
    )
    rules = load_rules(path)
    assert [type(rule) for rule in rules.rules] == [Implies, LabelIn]
    assert rules.vocabulary == ["nominal", "critical"]
    assert fired(synapse("nominal", 0.95), rules) == ["silent_contradiction"]


@pytest.mark.parametrize(
    ("document", "named"),
    [
        ({"rules": [{"kind": "confidence_below", "threshold": "high"}]}, "rules[0].threshold"),
        ({"rules": [{"kind": "label_in", "labels": []}]}, "rules[0].labels"),
        ({"rules": [{"kind": "required_field"}]}, "rules[0].field"),
        ({"rules": [{"kind": "required_field", "field": "a..b"}]}, "rules[0].field"),
        ({"rules": [{"kind": "no_such_rule"}]}, "rules[0]"),
        (
            [SILENT_CONTRADICTION, {**SILENT_CONTRADICTION, "when": {"op": ">="}}],
            "rules[1].when.field",
        ),
        ({"rules": [], "extra": 1}, "extra"),
    ],
)
def test_a_bad_rules_file_is_an_input_error_naming_the_field(
    tmp_path: Path, document: Any, named: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document))
    with pytest.raises(InputError, match=re.escape(f"bad.json: field '{named}'")):
        load_rules(path)


def test_invalid_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{\n  "rules": [\n    {"kind": }\n  ]\n}')
    with pytest.raises(InputError, match=r"bad\.json:3:14: invalid JSON"):
        load_rules(path)


def test_a_missing_rules_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"absent\.json: no such file"):
        load_rules(tmp_path / "absent.json")


def test_parse_rules_accepts_a_bare_list() -> None:
    assert len(parse_rules([{"kind": "confidence_below", "threshold": 0.3}]).rules) == 1


def test_the_bundled_rules_declare_the_synapse_vocabulary() -> None:
    rules = default_rules()
    assert rules.vocabulary == ["nominal", "degraded", "critical"]
    assert {rule.kind for rule in rules.rules} == {
        "label_in",
        "implies",
        "confidence_below",
        "required_field",
    }
