"""The audit trail: artifact contents, the judgment store round trip, and replay."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from arbiter.contract import Callout, Case, Critique, Usage, Verdict
from arbiter.errors import StoreError
from arbiter.jury.audit import artifact_path, replay_judgment, write_artifact
from arbiter.jury.critics import CriticSpec
from arbiter.jury.jury import Jury
from arbiter.providers.base import CompletionRequest, CompletionResponse
from arbiter.store import Store
from arbiter.store.jury_models import CritiqueRow
from arbiter.store.jury_repository import (
    create_jury_run,
    finish_jury_run,
    get_jury_run,
    latest_jury_run,
    list_jury_runs,
    load_judged_cases,
    load_judgments,
    save_judgment,
)

QUOTE = "Refunds are accepted within 45 days of delivery"
CASE = Case(
    id="refunds/45",
    task="Summarise the refund policy.",
    context="Refunds are accepted within 30 days of delivery.",
    output=f"{QUOTE}. Shipping is free.",
    expected="REJECT",
)
CLEAN = Case(
    id="clean",
    task="Summarise the refund policy.",
    context="Refunds are accepted within 30 days of delivery.",
    output="Refunds are accepted within 30 days of delivery.",
    expected="ACCEPT",
)


def _contradiction() -> Critique:
    callout = Callout(
        dimension="accuracy",
        kind="contradicted",
        claim="output says 45, context says 30",
        quote=QUOTE,
        rival="30 days",
    )
    return Critique(accuracy=2, consistency=5, completeness=5, callouts=[callout])


class ScriptedProvider:
    """Flags the 45-day output for critics named in ``finders``; ``broken`` critics raise."""

    name = "scripted"

    def __init__(self, finders: set[str], broken: set[str] = frozenset()) -> None:  # type: ignore[assignment]
        self.finders, self.broken = finders, broken

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        critic = request.metadata["critic"]
        if critic in self.broken:
            raise RuntimeError("connection reset")
        flagged = critic in self.finders and "45 days" in request.prompt
        critique = (
            _contradiction()
            if flagged
            else Critique(accuracy=5, consistency=5, completeness=5, callouts=[])
        )
        usage = Usage(input_tokens=100, output_tokens=20, cost_usd=0.002)
        return CompletionResponse(text=critique.model_dump_json(), model="m", usage=usage)


ROSTER = [
    CriticSpec(name=name, lens=lens, provider="scripted", model=f"model-{name}")  # type: ignore[arg-type]
    for name, lens in (("factual", "factual"), ("logical", "logical"), ("adversary", "adversary"))
]


def _judge(case: Case, finders: set[str], broken: set[str] = frozenset()) -> Verdict:  # type: ignore[assignment]
    jury = Jury(ROSTER, providers={"scripted": ScriptedProvider(finders, broken)})
    return jury.judge(case)


# --------------------------------------------------------------------------- artifact


def test_artifact_holds_inputs_critiques_trace_verdict_timings_and_usage(tmp_path: Path) -> None:
    verdict = _judge(CASE, {"factual", "logical"}, broken={"adversary"})
    path = write_artifact(tmp_path, "run-1", CASE, verdict)
    record = json.loads(path.read_text(encoding="utf-8"))

    assert path == artifact_path(tmp_path, "run-1", CASE.id)
    assert path.parent == tmp_path / "run-1"
    assert path.name.startswith("refunds_45-")
    assert record["inputs"] == {
        "task": CASE.task,
        "context": CASE.context,
        "output": CASE.output,
        "expected": "REJECT",
        "defective": True,
    }
    factual, _, adversary = record["critiques"]
    assert json.loads(factual["raw"]) == factual["parsed"]
    assert factual["parsed"]["callouts"][0]["quote"] == QUOTE
    assert adversary["status"] == "dead"
    assert adversary["parsed"] is None
    assert "connection reset" in adversary["error"]
    (finding,) = record["synthesis"]["findings"]
    assert finding["critics"] == ["factual", "logical"]
    assert finding["corroborated"] is True
    assert record["synthesis"]["scores"]["accuracy"] == 2.0
    assert any("dead: adversary" in r for r in record["synthesis"]["reasons"])
    assert record["verdict"]["decision"] == "REJECT"
    assert record["verdict"]["confidence"] == verdict.confidence
    assert set(record["timings"]["per_critic_ms"]) == {"factual", "logical", "adversary"}
    assert record["usage"] == {
        "calls": 3,
        "calls_with_usage": 2,
        "input_tokens": 200,
        "output_tokens": 40,
        "cost_usd": 0.004,
    }


def test_artifact_is_replaced_atomically_without_leftover_temporary_files(tmp_path: Path) -> None:
    first = write_artifact(tmp_path, "run-1", CASE, _judge(CASE, set()))
    second = write_artifact(tmp_path, "run-1", CASE, _judge(CASE, {"factual", "logical"}))
    assert first == second
    assert json.loads(second.read_text())["verdict"]["decision"] == "REJECT"
    assert [p.name for p in second.parent.iterdir()] == [second.name]


@pytest.mark.parametrize(
    ("run_id", "case_id", "prefix"),
    [("r1", "../../etc/passwd", "_.._etc_passwd-"), ("r1", "", "case-"), ("r1", ".x", "x-")],
)
def test_artifact_path_cannot_escape_its_directory(
    tmp_path: Path, run_id: str, case_id: str, prefix: str
) -> None:
    path = artifact_path(tmp_path, run_id, case_id)
    assert path.parent == tmp_path / run_id
    assert path.name.startswith(prefix)
    assert path.name.endswith(".json")


def test_ids_that_clean_up_alike_get_distinct_artifacts(tmp_path: Path) -> None:
    ids = ["a/b", "a_b", "a b", "a:b", "a\\b", "a?b"]
    verdict = _judge(CASE, set())
    cases = [CASE.model_copy(update={"id": i}) for i in ids]
    paths = {write_artifact(tmp_path, "run-1", case, verdict) for case in cases}
    assert len(paths) == len(ids)
    assert len(list((tmp_path / "run-1").iterdir())) == len(ids)


def test_a_very_long_id_gets_a_bounded_file_name(tmp_path: Path) -> None:
    case = CASE.model_copy(update={"id": "x" * 300})
    path = write_artifact(tmp_path, "run-1", case, _judge(case, set()))
    assert len(path.name) < 80
    assert json.loads(path.read_text())["case_id"] == "x" * 300


# --------------------------------------------------------------------------- store


def test_judgments_round_trip_through_the_store(store: Store) -> None:
    verdicts = {
        CASE.id: _judge(CASE, {"factual", "logical"}, broken={"adversary"}),
        CLEAN.id: _judge(CLEAN, set()),
    }
    run_id = create_jury_run(store, kind="eval", roster=ROSTER, n_cases=2, config={"k": 1})
    for case in (CASE, CLEAN):
        save_judgment(store, run_id, case, verdicts[case.id])
    finish_jury_run(store, run_id)

    judgments = load_judgments(store, run_id)
    assert [j.case_id for j in judgments] == [CASE.id, CLEAN.id]
    for judgment in judgments:
        assert judgment.verdict == verdicts[judgment.case_id]
        assert judgment.outcomes == verdicts[judgment.case_id].critiques
    assert judgments[0].outcomes[2].usage is None  # the dead critic reported none
    assert load_judged_cases(store, run_id) == [CASE, CLEAN]
    info = get_jury_run(store, run_id[:12])
    assert (info.kind, info.status, info.n_cases, info.n_judged) == ("eval", "completed", 2, 2)
    assert [c["name"] for c in info.roster] == ["factual", "logical", "adversary"]


def test_latest_jury_run_is_the_newest_and_can_be_filtered_by_kind(store: Store) -> None:
    assert latest_jury_run(store) is None
    first = create_jury_run(store, kind="judge", roster=ROSTER, n_cases=1)
    second = create_jury_run(store, kind="eval", roster=ROSTER, n_cases=1)
    assert [r.id for r in list_jury_runs(store)] == [second, first]
    latest = latest_jury_run(store)
    assert latest is not None
    assert latest.id == second
    judge_run = latest_jury_run(store, kind="judge")
    assert judge_run is not None
    assert judge_run.id == first
    with pytest.raises(StoreError, match="no jury run matches"):
        get_jury_run(store, "nope")


# --------------------------------------------------------------------------- replay


def _stored(store: Store, verdict: Verdict, case: Case = CASE) -> str:
    run_id = create_jury_run(store, kind="judge", roster=ROSTER, n_cases=1)
    save_judgment(store, run_id, case, verdict)
    return run_id


def test_replay_of_fresh_judgments_changes_nothing(store: Store) -> None:
    run_id = _stored(store, _judge(CASE, {"factual"}))
    (judgment,) = load_judgments(store, run_id)
    assert replay_judgment(CASE, judgment.outcomes, judgment.verdict) is None


def test_replay_finds_the_verdict_a_tampered_critique_changes(store: Store) -> None:
    run_id = _stored(store, _judge(CASE, {"factual"}))  # uncorroborated: REVISE + escalate
    with Session(store.engine) as session, session.begin():
        session.execute(
            update(CritiqueRow)
            .where(CritiqueRow.run_id == run_id, CritiqueRow.critic == "logical")
            .values(critique=_contradiction().model_dump(mode="json"))
        )
    (judgment,) = load_judgments(store, run_id)
    change = replay_judgment(
        load_judged_cases(store, run_id)[0], judgment.outcomes, judgment.verdict
    )
    assert change is not None
    assert (change.old.decision, change.old.escalate) == ("REVISE", True)
    assert (change.new.decision, change.new.escalate) == ("REJECT", False)


def test_a_stored_critique_that_no_longer_validates_is_a_store_error(store: Store) -> None:
    run_id = _stored(store, _judge(CASE, set()))
    with Session(store.engine) as session, session.begin():
        row = session.scalars(select(CritiqueRow).where(CritiqueRow.run_id == run_id)).first()
        assert row is not None
        row.critique = {"accuracy": 9}
    with pytest.raises(StoreError, match="critique is invalid: field 'accuracy'"):
        load_judgments(store, run_id)
