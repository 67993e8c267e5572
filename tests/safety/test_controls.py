"""The assurance pack's control map: the shipped requirements, statuses that follow from the
evidence alone (never a claim of conformity), and a map file's errors naming the field."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arbiter.contract.assurance import MemberEvidence
from arbiter.errors import InputError
from arbiter.safety.controls import control_map, parse_controls, shipped_controls

FILES = sorted({name for control in shipped_controls() for name in control.evidence})


def test_the_shipped_map_covers_the_eu_ai_act_articles_and_the_nist_functions() -> None:
    references = {(c.framework, c.reference) for c in shipped_controls()}
    assert references == {
        *(("EU AI Act", f"Article {n}") for n in (9, 10, 12, 13, 14, 15)),
        *(("NIST AI RMF 1.0", name) for name in ("GOVERN", "MAP", "MEASURE", "MANAGE")),
    }
    for control in shipped_controls():
        assert set(control.why) == set(control.evidence), control.id


def test_a_control_without_evidence_says_no_evidence() -> None:
    found = control_map(shipped_controls(), {})
    assert {entry.status for entry in found.controls} == {"no evidence"}
    assert all(item.summary == "not in this pack" for e in found.controls for item in e.evidence)


def test_one_member_with_evidence_makes_its_controls_partial_and_leaves_the_others() -> None:
    members = {"gate-bench.json": MemberEvidence(present=True, summary="37 cases")}
    found = {entry.id: entry for entry in control_map(shipped_controls(), members).controls}
    assert found["eu-ai-act-art-13"].status == "partial evidence"
    assert found["eu-ai-act-art-13"].evidence[2].summary == "37 cases"
    assert found["eu-ai-act-art-9"].status == "no evidence"


@given(st.fixed_dictionaries({name: st.booleans() for name in FILES}))
def test_a_status_follows_from_the_cited_members_alone(present: dict[str, bool]) -> None:
    members = {name: MemberEvidence(present=held, summary="s") for name, held in present.items()}
    found = control_map(shipped_controls(), members)
    assert [entry.id for entry in found.controls] == [c.id for c in shipped_controls()]
    for control, entry in zip(shipped_controls(), found.controls, strict=True):
        held = [present[name] for name in control.evidence]
        expected = "evidence" if all(held) else "partial evidence" if any(held) else "no evidence"
        assert entry.status == expected
        assert [item.file for item in entry.evidence] == control.evidence
        assert "compliant" not in entry.model_dump_json().lower()
    assert "compliant" not in found.note.lower()


_GOOD = """
[[control]]
id = "a"
framework = "F"
reference = "R"
title = "T"
requirement = "Q"
evidence = ["x.json"]
"""


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[[control]\n", "map.toml: not TOML"),
        ("title = 1\n", "map.toml: control: no [[control]] table"),
        (_GOOD + _GOOD, "map.toml: control 2: id: 'a' is given twice"),
        (_GOOD.replace('title = "T"\n', ""), "map.toml: control 1: title: Field required"),
        (_GOOD.replace('["x.json"]', "[]"), "map.toml: control 1: evidence:"),
        (_GOOD + '[control.why]\n"y.json" = "z"\n', "map.toml: control 1: why: 'y.json'"),
    ],
)
def test_a_bad_map_is_one_line_naming_the_control_and_field(text: str, needle: str) -> None:
    with pytest.raises(InputError) as raised:
        parse_controls(text, "map.toml")
    assert str(raised.value).startswith(needle)
    assert "\n" not in str(raised.value)
