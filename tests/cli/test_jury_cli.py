"""``arbiter judge`` and ``arbiter jury eval | baseline | replay``, end to end in-process.

The critics run on the deterministic ``mock`` provider, so the texts below are written
for its string detectors: a figure the context contradicts, a claim with an
unsupported-claim marker, a faithful copy.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update
from sqlalchemy.orm import Session

from arbiter.contract import Callout, CriticOutcome, Critique
from arbiter.jury.audit import artifact_path
from arbiter.jury.synthesis import synthesize
from arbiter.service.jury import verdict_exit_code
from arbiter.store import Store
from arbiter.store.jury_models import CritiqueRow
from arbiter.store.jury_repository import latest_jury_run, load_judgments

CONTEXT = "Refunds are accepted within 30 days of delivery. Shipping is free in the US."
TASK = "Summarise the refund policy for a customer."
CLEAN = "Refunds are accepted within 30 days of delivery. Shipping is free in the US."
WRONG_FIGURE = "Refunds are accepted within 45 days of delivery. Shipping is free in the US."
UNSUPPORTED = (
    "Refunds are accepted within 30 days of delivery. Shipping is free in the US. "
    "Studies show that customers love this policy."
)


def _store(tmp_path: Path) -> Store:
    return Store(f"sqlite:///{tmp_path / 'store.db'}")


def _texts(output: str) -> list[str]:
    return ["judge", "--task", TASK, "--context", CONTEXT, "--output", output]


def _case(case_id: str, output: str, **fields: Any) -> str:
    return json.dumps({"id": case_id, "task": TASK, "context": CONTEXT, "output": output, **fields})


# --------------------------------------------------------------------------- judge


@pytest.mark.parametrize(
    ("output", "code", "decision"),
    [(CLEAN, 0, "ACCEPT"), (UNSUPPORTED, 1, "REVISE"), (WRONG_FIGURE, 2, "REJECT")],
)
def test_judge_exit_code_follows_the_verdict(
    cli: Any, output: str, code: int, decision: str
) -> None:
    result = cli(*_texts(output))
    assert result.code == code, result.out + result.err
    assert f"VERDICT: {decision}  confidence" in result.out


def _critic(name: str, accuracy: int) -> CriticOutcome:
    critique = Critique(accuracy=accuracy, consistency=5, completeness=5, callouts=[])  # type: ignore[arg-type]
    return CriticOutcome(critic=name, lens="t", model="m", status="ok", critique=critique)


def test_an_accept_that_escalates_exits_1_like_a_revise() -> None:
    dissent = synthesize(CLEAN, [_critic("a", 5), _critic("b", 5), _critic("c", 2)])
    assert (dissent.decision, dissent.escalate) == ("ACCEPT", True)
    clean = synthesize(CLEAN, [_critic("a", 5), _critic("b", 5)])
    assert verdict_exit_code([clean]) == 0
    assert verdict_exit_code([clean, dissent]) == 1


def test_judge_prints_critics_corroborated_finding_rival_and_where_it_stored(
    cli: Any, tmp_path: Path
) -> None:
    result = cli(*_texts(WRONG_FIGURE))
    assert result.code == 2
    for header in ("critic", "model", "acc", "con", "cmp", "ms", "status", "AGGREGATE"):
        assert header in result.out
    assert "[3/3] CORROBORATED accuracy contradicted" in result.out
    assert "  > " in result.out
    assert "rival: " in result.out
    assert "(flip-margin 2, agreement" in result.out
    run = latest_jury_run(_store(tmp_path))
    assert run is not None
    assert (run.kind, run.n_judged) == ("judge", 1)
    assert f"stored as jury run {run.id}" in result.err
    artifact = artifact_path(tmp_path / "home" / "audit", run.id, "cli")
    assert json.loads(artifact.read_text())["verdict"]["decision"] == "REJECT"


def test_judge_no_audit_writes_no_artifact_and_json_prints_the_verdict(
    cli: Any, tmp_path: Path
) -> None:
    result = cli(*_texts(CLEAN), "--json", "--no-audit")
    assert result.code == 0
    payload = json.loads(result.out)
    (judgment,) = payload["judgments"]
    assert judgment["verdict"]["decision"] == "ACCEPT"
    assert not (tmp_path / "home" / "audit").exists()


def test_judge_a_bundled_case_by_id(cli: Any) -> None:
    result = cli("judge", "--case", "clean_01")
    assert result.code == 0, result.out
    assert "VERDICT: ACCEPT" in result.out


def test_judge_file_exits_with_the_most_severe_verdict(cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "mine.jsonl"
    path.write_text(f"{_case('ok', CLEAN)}\n{_case('bad', WRONG_FIGURE)}\n")
    result = cli("judge", "--file", str(path))
    assert result.code == 2
    assert "== ok" in result.out
    assert "== bad" in result.out
    assert "summary" in result.out


def test_judge_with_provider_keeps_the_three_lenses_on_that_model(cli: Any) -> None:
    result = cli(*_texts(CLEAN), "--provider", "mock", "--model", "mock-2", "--json")
    verdict = json.loads(result.out)["judgments"][0]["verdict"]
    assert [(c["critic"], c["model"]) for c in verdict["critiques"]] == [
        ("factual", "mock-2"),
        ("logical", "mock-2"),
        ("adversary", "mock-2"),
    ]


def test_judge_with_a_roster_file_runs_those_critics(cli: Any, tmp_path: Path) -> None:
    roster = tmp_path / "roster.json"
    roster.write_text(json.dumps([{"name": "only", "lens": "factual"}]))
    result = cli(*_texts(WRONG_FIGURE), "--roster", str(roster), "--json")
    verdict = json.loads(result.out)["judgments"][0]["verdict"]
    assert [c["critic"] for c in verdict["critiques"]] == ["only"]


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["judge"], "give one of --case ID, --file CASES.jsonl, or --task/--context/--output"),
        (["judge", "--case", "clean_1"], "no case with id 'clean_1'; did you mean clean_01"),
        (["judge", "--task", "t", "--output", "o"], "--task, --context and --output go together"),
        (["judge", "--case", "clean_01", "--provider", "nope"], "must be one of"),
        (["judge", "--case", "clean_01", "--provider", "openai"], "needs --model"),
        (["jury", "replay"], "no jury runs in"),
        (["jury", "replay", "nope"], "no jury run matches id 'nope'"),
    ],
)
def test_bad_input_exits_3_in_one_line(cli: Any, args: list[str], message: str) -> None:
    result = cli(*args)
    assert result.code == 3, result.out + result.err
    assert message in result.err
    assert result.err.strip().count("\n") == 0


@pytest.mark.parametrize("command", [["judge", "--file"], ["jury", "eval", "--cases"]])
def test_a_bad_case_file_exits_3_naming_file_line_and_field(
    cli: Any, tmp_path: Path, command: list[str]
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(f"{_case('a', CLEAN)}\n{_case('b', CLEAN, expected='MAYBE')}\n")
    result = cli(*command, str(path))
    assert result.code == 3
    assert result.err.strip() == (
        f"arbiter: error: {path}:2: field 'expected': Input should be 'ACCEPT', 'REVISE' "
        "or 'REJECT'"
    )


@pytest.mark.parametrize(
    ("roster", "message"),
    [
        ("[]", "a roster must be a non-empty JSON list"),
        ('[{"name": "a", "lens": "cynic"}]', "[0]: field 'lens'"),
        ('[{"name": "a"}, {"name": "a"}]', "critic name 'a' appears twice"),
        ('[{"name": "a", "provider": "nope"}]', "[0]: field 'provider': 'nope' is not one of"),
        ("{not json", "roster.json:1:2: invalid JSON"),
    ],
)
def test_a_bad_roster_file_exits_3(cli: Any, tmp_path: Path, roster: str, message: str) -> None:
    path = tmp_path / "roster.json"
    path.write_text(roster)
    result = cli("judge", "--case", "clean_01", "--roster", str(path))
    assert result.code == 3
    assert message in result.err


# --------------------------------------------------------------------------- jury eval


def test_eval_prints_every_figure_and_exits_per_its_gates(cli: Any) -> None:
    result = cli("jury", "eval", "--quiet")
    figures = cli("jury", "eval", "--quiet", "--json", "--no-audit")
    evaluation = json.loads(figures.out)["evaluation"]
    assert result.code == (1 if evaluation["gate_failures"] else 0)
    for label in (
        "detection precision",
        "detection recall",
        "recall (string-detectable defects)",
        "recall (semantic-only defects)",
        "exact-verdict accuracy",
        "expected \\ decided",
        "escalate rate",
        "corroboration rate",
        "risk-coverage",
        "accuracy@coverage",
        "calibration",
        "bootstrap 95% CI",
        "discrimination",
        "ablation (does the jury beat one critic?)",
        "factual+logical+adversary",
        "factual vs logical: κ",
    ):
        assert label in result.out, label
    for failure in evaluation["gate_failures"]:
        assert f"GATE FAILED: {failure}" in result.out


def test_eval_gate_failure_exits_1_and_names_the_gate(cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "clean.jsonl"
    path.write_text("".join(f"{_case(f'c{i}', CLEAN, expected='ACCEPT')}\n" for i in range(5)))
    result = cli("jury", "eval", "--cases", str(path), "--quiet")
    assert result.code == 1
    assert "GATE FAILED: escalate rate 0.000 is outside [0.05, 0.4]" in result.out


def test_eval_on_defective_only_labels_gives_detection_figures_per_group(
    cli: Any, tmp_path: Path
) -> None:
    path = tmp_path / "summedits.jsonl"
    rows = [
        _case("a", CLEAN, defective=False, metadata={"domain": "news", "edit_types": []}),
        _case(
            "b", WRONG_FIGURE, defective=True, metadata={"domain": "news", "edit_types": ["num"]}
        ),
        _case("c", CLEAN, defective=False, metadata={"domain": "legal", "edit_types": []}),
    ]
    path.write_text("\n".join(rows) + "\n")
    for by, group in (("metadata.domain", "legal"), ("metadata.edit_types", "num")):
        result = cli("jury", "eval", "--cases", str(path), "--by", by, "--quiet")
        assert "detection precision" in result.out
        assert "exact-verdict accuracy" not in result.out
        assert f"detection by {by}" in result.out
        assert "bal. acc." in result.out
        assert group in result.out


# --------------------------------------------------------------------------- baseline, replay


def test_baseline_prints_both_arms_with_equal_call_counts(cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "few.jsonl"
    path.write_text(f"{_case('a', CLEAN, expected='ACCEPT')}\n{_case('b', WRONG_FIGURE)}\n")
    result = cli("jury", "baseline", "--cases", str(path), "--quiet")
    assert result.code == 0, result.err
    assert "3 samples of factual" in result.out
    assert "3 critics (factual, logical, adversary)" in result.out
    assert result.out.count("6") >= 2  # 3 calls × 2 cases, in each arm
    assert "answered identically on every case" in result.out


def test_replay_exits_0_then_1_once_a_stored_critique_is_tampered_with(
    cli: Any, tmp_path: Path
) -> None:
    assert cli(*_texts(CLEAN)).code == 0
    clean = cli("jury", "replay")
    assert clean.code == 0
    assert "1 judgments" in clean.out
    assert "0 changed" in clean.out
    store = _store(tmp_path)
    run = latest_jury_run(store)
    assert run is not None
    (judgment,) = load_judgments(store, run.id)
    finding = Callout(
        dimension="accuracy",
        kind="contradicted",
        claim="says 30, context says 60",
        quote="within 30 days",
        rival="60 days",
    )
    tampered = Critique(accuracy=1, consistency=5, completeness=5, callouts=[finding])
    with Session(store.engine) as session, session.begin():
        session.execute(
            update(CritiqueRow)
            .where(CritiqueRow.run_id == run.id)
            .values(critique=tampered.model_dump(mode="json"))
        )
    changed = cli("jury", "replay", run.id[:10])
    assert changed.code == 1
    assert f"cli: ACCEPT {judgment.verdict.confidence:.2f} -> REJECT" in changed.out
    as_json = json.loads(cli("jury", "replay", "--json").out)
    assert as_json["changed"][0]["new"]["decision"] == "REJECT"


def test_demo_also_judges_a_clean_and_a_broken_bundled_case(cli: Any) -> None:
    result = cli("demo", "--quiet")
    assert result.code == 0, result.err
    assert "jury: three offline critics" in result.out
    assert "clean_01" in result.out
    assert "multi_02" in result.out


def test_judge_works_on_every_bundled_case(cli: Any) -> None:
    from arbiter.jury import bundled_cases_path, load_cases

    cases = load_cases(bundled_cases_path())
    result = cli("judge", "--file", str(bundled_cases_path()), "--json", "--no-audit")
    assert result.code == 2  # the most severe verdict among them is a REJECT
    judgments = json.loads(result.out)["judgments"]
    assert [j["case_id"] for j in judgments] == [c.id for c in cases]
    decided = {j["verdict"]["decision"] for j in judgments}
    assert decided == {"ACCEPT", "REVISE", "REJECT"}
