"""Signed records in the store: a run's report, its gate decisions, jury verdicts and agent
runs' score sets; verification re-derives each from the store and names what changed."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from sqlalchemy import delete, select, update

from arbiter.attest import SigningKey, create_signing_key
from arbiter.contract import RunConfig, Trajectory
from arbiter.contract.trajectory import AgentIdentity
from arbiter.service.attestation import Signer, verdict_record_id
from arbiter.service.runs import GateFloors, gate_run, start_run
from arbiter.service.verification import verify_stored
from arbiter.store import Store
from arbiter.store.jury_models import VerdictRow
from arbiter.store.models import ResultRow
from arbiter.store.signature_repository import get_signature
from arbiter.systems.python import PythonSystem
from tests.helpers.data import yes_no_dataset


@pytest.fixture
def key(tmp_path: Path) -> SigningKey:
    return create_signing_key(tmp_path / "signing-key.pem")


@pytest.fixture(autouse=True)
def no_configured_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no .env
    monkeypatch.delenv("ARBITER_SIGNING_KEY", raising=False)


def _run(store: Store, key: Signer, n: int = 12) -> str:
    report = asyncio.run(
        start_run(
            PythonSystem("tests.helpers.systems:mostly_right"),
            yes_no_dataset(n),
            config=RunConfig(concurrency=4),
            store=store,
            signer=key,
        )
    )
    assert report.run_id
    return report.run_id


def _problems(store: Store, target: str, key: SigningKey) -> list[str]:
    return [p for check in verify_stored(store, target, key.public_key) for p in check.problems]


def test_a_finished_run_is_signed_and_verifies_against_the_store(
    store: Store, key: SigningKey
) -> None:
    run_id = _run(store, key)
    (check,) = verify_stored(store, run_id, key.public_key)
    assert check.ok, check.problems
    assert (check.kind, check.record_id, check.key_id) == ("run_report", run_id, key.key_id)
    assert check.notes == ["12 results and the report match the store"]
    payload = check.payload
    assert payload is not None
    assert payload["subject"]["dataset_hash"] == yes_no_dataset(12).content_hash
    assert [p["example_id"] for p in payload["subject"]["pairs"]][:2] == ["ex-0000", "ex-0001"]
    assert payload["scorers"][0]["name"] == "label"
    assert payload["scorers"][0]["version"]


def test_the_configured_key_signs_and_no_key_signs_nothing(
    store: Store, key: SigningKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    from arbiter.service.attestation import CONFIGURED

    unsigned = _run(store, CONFIGURED)
    assert get_signature(store, "run_report", unsigned) is None
    assert _problems(store, unsigned, key) == [
        f"run_report {unsigned} is not signed (was a signing key configured then?)"
    ]
    monkeypatch.setenv("ARBITER_SIGNING_KEY", str(key.path))
    signed = _run(store, CONFIGURED)
    assert get_signature(store, "run_report", signed) is not None
    assert _problems(store, signed, key) == []


def test_a_changed_output_is_named_by_its_example(store: Store, key: SigningKey) -> None:
    run_id = _run(store, key)
    with store.session() as session, session.begin():
        row = session.scalars(
            select(ResultRow).where(ResultRow.run_id == run_id, ResultRow.example_id == "ex-0004")
        ).one()
        session.execute(
            update(ResultRow)
            .where(ResultRow.id == row.id)
            .values(output={**(row.output or {}), "label": "maybe"})
        )
    assert _problems(store, run_id, key) == [
        "example 'ex-0004' repetition 0: the stored output differs from the signed one"
    ]


def test_a_changed_score_moves_the_report_and_both_are_named(store: Store, key: SigningKey) -> None:
    run_id = _run(store, key)
    with store.session() as session, session.begin():
        row = session.scalars(
            select(ResultRow).where(ResultRow.run_id == run_id, ResultRow.passed.is_(False))
        ).first()
        assert row is not None
        scores = [{**s, "passed": True, "value": 1.0} for s in row.scores or []]
        session.execute(
            update(ResultRow).where(ResultRow.id == row.id).values(passed=True, scores=scores)
        )
        example = row.example_id
    problems = _problems(store, run_id, key)
    assert problems[0] == (
        f"example {example!r} repetition 0: the stored scores or outcome differ from the "
        "signed ones"
    )
    assert any(p.startswith("report field accuracy.estimate: signed ") for p in problems)


def test_a_deleted_result_is_named(store: Store, key: SigningKey) -> None:
    run_id = _run(store, key)
    with store.session() as session, session.begin():
        session.execute(
            delete(ResultRow).where(ResultRow.run_id == run_id, ResultRow.example_id == "ex-0007")
        )
    assert "example 'ex-0007' repetition 0: signed, but no longer in the store" in _problems(
        store, run_id, key
    )


def test_a_signature_checked_with_another_key_names_the_wrong_key(
    store: Store, key: SigningKey, tmp_path: Path
) -> None:
    run_id = _run(store, key)
    other = create_signing_key(tmp_path / "other.pem")
    (check,) = verify_stored(store, run_id, other.public_key)
    assert any(f"wrong key: signed with key {key.key_id}" in p for p in check.problems)
    assert any("bad signature" in p for p in check.problems)


def test_a_gate_decision_is_signed_with_its_floors_and_bound_to_the_results(
    store: Store, key: SigningKey
) -> None:
    run_id = _run(store, key)
    floors = GateFloors(min_accuracy=0.5, cohorts={"a": 0.4})
    result = gate_run(store, run_id, floors, signer=key)
    checks = verify_stored(store, run_id, key.public_key)
    assert [c.kind for c in checks] == ["run_report", "gate_decision"]
    decision = checks[1]
    assert decision.ok, decision.problems
    assert decision.payload is not None
    assert decision.payload["claim"]["passed"] is result.passed
    assert decision.payload["subject"]["floors"]["cohorts"] == {"a": 0.4}
    with store.session() as session, session.begin():
        session.execute(
            update(ResultRow)
            .where(ResultRow.run_id == run_id, ResultRow.example_id == "ex-0001")
            .values(error_message="edited")
        )
    problems = [p for c in verify_stored(store, run_id, key.public_key) for p in c.problems]
    assert "the run's stored results differ from those the gate decided on" in problems


def _judge(store: Store, key: SigningKey) -> str:
    from arbiter.jury.cases import bundled_cases_path, load_cases
    from arbiter.jury.critics import DEFAULT_ROSTER
    from arbiter.service.jury import judge_cases

    bundled = {c.id: c for c in load_cases(bundled_cases_path())}
    judged = asyncio.run(
        judge_cases(
            store,
            "judge",
            list(DEFAULT_ROSTER),
            [bundled["clean_01"], bundled["multi_02"]],
            config={},
            audit_root=None,
            concurrency=2,
            signer=key,
        )
    )
    return judged.run_id


def test_every_verdict_is_signed_bound_to_its_case_and_output(
    store: Store, key: SigningKey
) -> None:
    jury_run = _judge(store, key)
    checks = verify_stored(store, jury_run, key.public_key)
    assert [(c.record_id, c.ok) for c in checks] == [
        (verdict_record_id(jury_run, "clean_01"), True),
        (verdict_record_id(jury_run, "multi_02"), True),
    ]
    payload = checks[1].payload
    assert payload is not None
    assert payload["claim"]["decision"] == "REJECT"
    assert {"case_sha256", "output_sha256", "critiques_sha256"} <= set(payload["subject"])
    with store.session() as session:
        number = session.scalar(
            select(VerdictRow.id).where(
                VerdictRow.run_id == jury_run, VerdictRow.case_id == "multi_02"
            )
        )
    (by_number,) = verify_stored(store, str(number), key.public_key)
    assert by_number.record_id == verdict_record_id(jury_run, "multi_02")


def test_a_changed_verdict_or_judged_output_is_named(store: Store, key: SigningKey) -> None:
    jury_run = _judge(store, key)
    with store.session() as session, session.begin():
        row = session.scalars(
            select(VerdictRow).where(
                VerdictRow.run_id == jury_run, VerdictRow.case_id == "clean_01"
            )
        ).one()
        session.execute(
            update(VerdictRow)
            .where(VerdictRow.id == row.id)
            .values(
                verdict={**row.verdict, "decision": "REJECT"},
                case_data={**row.case_data, "output": row.case_data["output"] + " (edited)"},
            )
        )
    problems = _problems(store, verdict_record_id(jury_run, "clean_01"), key)
    assert "verdict field decision: signed 'ACCEPT', now 'REJECT'" in problems
    assert any(p.startswith("case field output_sha256: signed ") for p in problems)


def test_an_agent_runs_score_set_is_signed_bound_to_its_hash(
    store: Store, key: SigningKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    from arbiter.service.trajectories import agent_run_scoring, run_of, score_and_store
    from arbiter.store.trajectory_models import TrajectoryRow

    monkeypatch.setenv("ARBITER_SIGNING_KEY", str(key.path))
    trajectory = Trajectory(
        agent=AgentIdentity(name="helper"), final_answer="42", status="completed"
    )
    (stored,) = asyncio.run(
        score_and_store(store, [run_of(trajectory)], scoring=agent_run_scoring())
    )
    (check,) = verify_stored(store, stored.id, key.public_key)
    assert check.ok, check.problems
    assert check.kind == "trajectory_scores"
    assert check.payload is not None
    assert check.payload["subject"]["trajectory_sha256"] == stored.trajectory_hash
    assert check.payload["scorers"]
    with store.session() as session, session.begin():
        document = session.scalar(select(TrajectoryRow.record).where(TrajectoryRow.id == stored.id))
        assert document is not None
        edited = json.loads(json.dumps(document))
        edited["trajectory"]["final_answer"] = "41"
        session.execute(
            update(TrajectoryRow).where(TrajectoryRow.id == stored.id).values(record=edited)
        )
    (changed,) = verify_stored(store, stored.id, key.public_key)
    assert changed.problems == ["the stored trajectory no longer has the hash it was scored with"]


def test_a_grounding_gate_decision_is_signed_bound_to_the_text_it_parked(
    store: Store, key: SigningKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    from arbiter.contract import ToolCall
    from arbiter.contract.gate import GateScope
    from arbiter.judges.grounding_gate import ScopeRuling
    from arbiter.service.grounding_gate import check_answer
    from arbiter.store.gate_models import GateDecisionRow

    async def drifted(*, question: str, answer: str, scope: GateScope) -> ScopeRuling:
        return ScopeRuling(verdict="drifted", reasoning="about finance")

    monkeypatch.setenv("ARBITER_SIGNING_KEY", str(key.path))
    decision = asyncio.run(
        check_answer(
            store,
            "T-118 costs the most: the finance_ledger database shows $18,400 in invoices.",
            question="Which vehicle costs most?",
            tool_calls=[ToolCall(name="run_sql", arguments={"database": "fleet_ops"})],
            scope=GateScope(databases=("fleet_ops",), description="Fleet maintenance."),
            mode="review",
            judge=drifted,
        )
    )
    (check,) = verify_stored(store, decision.id, key.public_key)
    assert check.ok, check.problems
    assert check.kind == "grounding_gate"
    assert check.payload is not None
    assert check.payload["subject"]["parked_answer_sha256"]
    with store.session() as session, session.begin():
        row = session.scalars(
            select(GateDecisionRow).where(GateDecisionRow.id == decision.id)
        ).one()
        document = json.loads(json.dumps(row.decision))
        document["action"] = "deliver"
        session.execute(
            update(GateDecisionRow)
            .where(GateDecisionRow.id == decision.id)
            .values(decision=document)
        )
    (changed,) = verify_stored(store, decision.id, key.public_key)
    assert any(p.startswith("decision field claim.action: signed ") for p in changed.problems)


def test_a_verdict_arbitrated_through_the_api_service_is_signed(
    store: Store, key: SigningKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    from arbiter.jury.cases import bundled_cases_path, load_cases
    from arbiter.jury.critics import DEFAULT_ROSTER
    from arbiter.jury.jury import Jury
    from arbiter.service.arbitrate import arbitrate

    monkeypatch.setenv("ARBITER_SIGNING_KEY", str(key.path))
    case = next(c for c in load_cases(bundled_cases_path()) if c.id == "multi_02")

    async def judge() -> int:
        jury = Jury(list(DEFAULT_ROSTER))
        try:
            return (await arbitrate(store, jury, case, owner=None)).id
        finally:
            await jury.aclose()

    verdict_id = asyncio.run(judge())
    (check,) = verify_stored(store, str(verdict_id), key.public_key)
    assert check.ok, check.problems
    assert check.payload is not None
    assert check.payload["claim"]["decision"] == "REJECT"


def test_many_changed_results_are_named_twenty_at_a_time(store: Store, key: SigningKey) -> None:
    run_id = _run(store, key, n=30)
    with store.session() as session, session.begin():
        session.execute(
            update(ResultRow).where(ResultRow.run_id == run_id).values(error_message="edited")
        )
    problems = _problems(store, run_id, key)
    assert len([p for p in problems if p.startswith("example ")]) == 20
    assert "and 10 more examples that differ" in problems


def test_a_key_named_in_dot_env_signs(store: Store, key: SigningKey, tmp_path: Path) -> None:
    from arbiter.service.attestation import CONFIGURED, configured_signer

    assert configured_signer() is None
    (tmp_path / ".env").write_text(f"ARBITER_SIGNING_KEY={key.path}\n", encoding="utf-8")
    signer = configured_signer()
    assert signer is not None
    assert signer.key_id == key.key_id
    run_id = _run(store, CONFIGURED)
    assert _problems(store, run_id, key) == []
