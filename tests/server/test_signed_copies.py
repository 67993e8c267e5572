"""The stored copies pages show beside a signed record are covered by its verification,
and a run page never shows a kept report that differs from the signed one.

Each copy is edited in the database behind Arbiter's back, as in docs/signing.md's
``tamper.py``: the kept report, its outcome counts and 0/1 scorers, the run's summary,
tags, the dataset's example index, the claim digest beside the signature, and a stored
agent run's verdict, band and per-scorer columns.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update

from arbiter.attest import SigningKey, create_signing_key
from arbiter.contract import RunConfig, Trajectory
from arbiter.contract.trajectory import AgentIdentity
from arbiter.service.run_pages import ReportKeeper
from arbiter.service.runs import load_run, start_run
from arbiter.service.verification import verify_stored
from arbiter.store import Store
from arbiter.store.models import RunRow
from arbiter.store.report_models import DatasetExampleRow, RunReportRow
from arbiter.store.report_repository import index_examples
from arbiter.store.signature_models import SignatureRow
from arbiter.store.trajectory_models import TrajectoryRow, TrajectoryScoreRow
from arbiter.systems.python import PythonSystem
from tests.helpers.data import yes_no_dataset


@pytest.fixture
def key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SigningKey:
    monkeypatch.chdir(tmp_path)  # no .env
    monkeypatch.delenv("ARBITER_SIGNING_KEY", raising=False)
    return create_signing_key(tmp_path / "signing-key.pem")


def _signed_run(store: Store, key: SigningKey) -> str:
    report = asyncio.run(
        start_run(
            PythonSystem("tests.helpers.systems:mostly_right"),
            yes_no_dataset(12),
            config=RunConfig(concurrency=4),
            store=store,
            signer=key,
            tags={"team": "risk"},
        )
    )
    assert report.run_id
    ReportKeeper().view(store, report.run_id, viewer=None)  # the page keeps its report
    index_examples(store, report.dataset_hash)  # and indexes the dataset's examples
    return report.run_id


def _problems(store: Store, target: str, key: SigningKey) -> list[str]:
    return [p for check in verify_stored(store, target, key.public_key) for p in check.problems]


def _edit(store: Store, statement: Any) -> None:
    with store.session() as session, session.begin():
        session.execute(statement)


def _kept_report(store: Store, run_id: str) -> dict[str, Any]:
    with store.session() as session:
        document = session.scalar(select(RunReportRow.report).where(RunReportRow.run_id == run_id))
    assert document is not None
    return json.loads(json.dumps(document))


def test_the_untouched_copies_of_a_signed_run_verify(store: Store, key: SigningKey) -> None:
    run_id = _signed_run(store, key)
    assert _problems(store, run_id, key) == []


def _higher_accuracy(store: Store, run_id: str) -> Any:
    report = _kept_report(store, run_id)
    report["accuracy"]["estimate"] = 0.99
    return update(RunReportRow).where(RunReportRow.run_id == run_id).values(report=report)


def _more_passed(store: Store, run_id: str) -> Any:
    return (
        update(RunReportRow)
        .where(RunReportRow.run_id == run_id)
        .values(n_passed=RunReportRow.n_passed + 1, n_failed=RunReportRow.n_failed - 1)
    )


def _binary(store: Store, run_id: str) -> Any:
    return update(RunReportRow).where(RunReportRow.run_id == run_id).values(binary_scorers=["x"])


def _summary(store: Store, run_id: str) -> Any:
    with store.session() as session:
        summary = dict(session.scalar(select(RunRow.summary).where(RunRow.id == run_id)) or {})
    summary["accuracy"] = 0.99
    return update(RunRow).where(RunRow.id == run_id).values(summary=summary)


def _tags(store: Store, run_id: str) -> Any:
    return update(RunRow).where(RunRow.id == run_id).values(tags={"team": "ops"})


def _index(store: Store, run_id: str) -> Any:
    with store.session() as session:
        example = session.scalar(
            select(DatasetExampleRow.example).where(DatasetExampleRow.example_id == "ex-0003")
        )
    edited = {**json.loads(json.dumps(example)), "expected_label": "maybe"}
    return (
        update(DatasetExampleRow)
        .where(DatasetExampleRow.example_id == "ex-0003")
        .values(example=edited)
    )


def _claim_digest(store: Store, run_id: str) -> Any:
    return (
        update(SignatureRow)
        .where(SignatureRow.kind == "run_report", SignatureRow.record_id == run_id)
        .values(claim_sha256="0" * 64)
    )


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (_higher_accuracy, "kept report field accuracy.estimate: signed"),
        (_more_passed, "kept report: its counts (failed, undecided, passed)"),
        (_binary, "kept report: its 0/1-valued scorers ['x']"),
        (_summary, "summary field accuracy: signed"),
        (_tags, "subject field tags.team: signed 'risk', now 'ops'"),
        (_index, "dataset index: example 'ex-0003' differs from the stored dataset"),
        (_claim_digest, "the claim digest kept beside the signature is not the signed claim's"),
    ],
    ids=["kept-report", "counts", "binary-scorers", "summary", "tags", "index", "claim-digest"],
)
def test_an_edited_copy_of_a_signed_run_fails_verification(
    store: Store, key: SigningKey, edit: Callable[[Store, str], Any], named: str
) -> None:
    run_id = _signed_run(store, key)
    _edit(store, edit(store, run_id))
    problems = _problems(store, run_id, key)
    assert any(problem.startswith(named) for problem in problems), problems


def test_a_run_page_never_shows_a_kept_report_that_differs_from_the_signed_one(
    store: Store, key: SigningKey
) -> None:
    run_id = _signed_run(store, key)
    signed = load_run(store, run_id).report.accuracy.estimate
    assert signed != 0.99
    _edit(store, _higher_accuracy(store, run_id))
    _edit(store, _more_passed(store, run_id))
    view = ReportKeeper().view(store, run_id, viewer=None)
    assert view.report is not None
    assert view.report.accuracy.estimate == signed
    assert _kept_report(store, run_id)["accuracy"]["estimate"] == signed  # kept again, right
    assert _problems(store, run_id, key) == []
    # A kept report of the signed figures but counts that do not follow from them: the
    # counts are not used (the page counts the results again).
    _edit(store, _more_passed(store, run_id))
    assert ReportKeeper().view(store, run_id, viewer=None).counts is None


def test_a_signature_made_before_claim_digests_has_its_digest_kept_on_first_view(
    store: Store, key: SigningKey
) -> None:
    run_id = _signed_run(store, key)
    _edit(
        store,
        update(SignatureRow)
        .where(SignatureRow.kind == "run_report", SignatureRow.record_id == run_id)
        .values(claim_sha256=None),
    )
    _edit(store, _higher_accuracy(store, run_id))
    view = ReportKeeper().view(store, run_id, viewer=None)
    assert view.report is not None
    assert view.report.accuracy.estimate != 0.99
    with store.session() as session:
        kept = session.scalar(
            select(SignatureRow.claim_sha256).where(SignatureRow.record_id == run_id)
        )
    assert kept is not None
    assert _problems(store, run_id, key) == []


def _signed_agent_run(store: Store, key: SigningKey, monkeypatch: pytest.MonkeyPatch) -> str:
    from arbiter.service.trajectories import agent_run_scoring, run_of, score_and_store

    monkeypatch.setenv("ARBITER_SIGNING_KEY", str(key.path))
    trajectory = Trajectory(
        agent=AgentIdentity(name="helper"), final_answer="42", status="completed"
    )
    (stored,) = asyncio.run(
        score_and_store(store, [run_of(trajectory)], scoring=agent_run_scoring())
    )
    return stored.id


def _seq(store: Store, run_id: str) -> int:
    with store.session() as session:
        seq = session.scalar(select(TrajectoryRow.seq).where(TrajectoryRow.id == run_id))
    assert seq is not None
    return seq


@pytest.mark.parametrize(
    ("values", "named"),
    [
        ({"band": "healthy", "passed": True}, "column field band: signed"),
        ({"passed": False}, "column field passed: signed"),
        ({"agent": "someone-else"}, "column field agent: signed 'helper'"),
        ({"cost_usd": 0.5}, "column field cost_usd: signed None, now 0.5"),
    ],
    ids=["band", "passed", "agent", "cost"],
)
def test_an_edited_agent_run_column_fails_verification(
    store: Store,
    key: SigningKey,
    monkeypatch: pytest.MonkeyPatch,
    values: dict[str, Any],
    named: str,
) -> None:
    run_id = _signed_agent_run(store, key, monkeypatch)
    assert _problems(store, run_id, key) == []
    record = verify_stored(store, run_id, key.public_key)[0].payload
    assert record is not None
    if "band" in values:  # make the band differ from whatever was signed
        values = {**values, "band": "healthy" if record["claim"]["band"] != "healthy" else "danger"}
    if "passed" in values and "band" not in values:
        values = {"passed": not record["claim"]["passed"]}
    _edit(store, update(TrajectoryRow).where(TrajectoryRow.id == run_id).values(**values))
    problems = _problems(store, run_id, key)
    assert any(problem.startswith(named) for problem in problems), problems


def test_an_edited_per_scorer_row_of_an_agent_run_fails_verification(
    store: Store, key: SigningKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = _signed_agent_run(store, key, monkeypatch)
    seq = _seq(store, run_id)
    with store.session() as session:
        first = session.scalars(
            select(TrajectoryScoreRow)
            .where(TrajectoryScoreRow.trajectory_seq == seq)
            .order_by(TrajectoryScoreRow.id)
        ).first()
        assert first is not None
        first_id, was = first.id, first.passed
    _edit(
        store,
        update(TrajectoryScoreRow)
        .where(TrajectoryScoreRow.id == first_id)
        .values(passed=not was, band="danger"),
    )
    problems = _problems(store, run_id, key)
    assert any(p.startswith("score row field [0].passed") for p in problems), problems
