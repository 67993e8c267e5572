"""``arbiter gate-check`` stores decisions; ``arbiter gate-review`` resolves parked answers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from arbiter.contract.gate import GateDecision, GateScope
from arbiter.judges.grounding_gate import ScopeRuling
from arbiter.service.grounding_gate import check_answer, list_gate_decisions
from arbiter.store import Store
from tests.conftest import Result

Cli = Callable[..., Result]
SCOPE = {"databases": ["fleet_ops"], "description": "Fleet maintenance."}
DRIFTED = "T-118 costs the most: the finance_ledger database shows $18,400 in invoices."
REQUESTS = [
    {"id": "turn-1", "question": "Which vehicle costs most?", "answer": DRIFTED, "scope": SCOPE},
    {"id": "turn-2", "answer": "There are 42 open work orders.", "scope": SCOPE},
]


def write(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return path


def store_of(tmp_path: Path) -> Store:
    return Store(f"sqlite:///{tmp_path / 'store.db'}")


async def drifted(*, question: str, answer: str, scope: GateScope) -> ScopeRuling:
    return ScopeRuling(verdict="drifted", reasoning="about invoices")


def park(tmp_path: Path, owner: str | None = None) -> GateDecision:
    store = store_of(tmp_path)
    decision = asyncio.run(
        check_answer(
            store,
            DRIFTED,
            question="Which vehicle costs most?",
            scope=GateScope(databases=("fleet_ops",)),
            mode="review",
            judge=drifted,
            owner=owner,
        )
    )
    store.close()
    assert decision.action == "park_for_review"
    return decision


def test_gate_check_stores_every_decision_and_prints_each(cli: Cli, tmp_path: Path) -> None:
    result = cli("gate-check", str(write(tmp_path / "requests.jsonl", REQUESTS)))
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0] == "turn-1: deliver; trigger: answer_reference_out_of_scope (finance_ledger)"
    assert lines[2] == f"  delivered: {DRIFTED}"
    assert lines[3] == "turn-2: deliver; trigger: none"
    assert lines[-1].startswith("2 of 2 decisions stored in sqlite:")
    stored = list_gate_decisions(store_of(tmp_path))
    assert {f"  decision {d.id}" for d in stored} == {lines[1], lines[4]}


def test_gate_check_in_enforce_asks_the_mock_panel_which_abstains(cli: Cli, tmp_path: Path) -> None:
    path = write(tmp_path / "requests.jsonl", REQUESTS[:1])
    result = cli("gate-check", str(path), "--mode", "enforce", "--json")
    assert result.code == 0, result.err
    (decision,) = json.loads(result.out)
    assert (decision["judge"], decision["action"]) == ("unknown", "deliver_annotated")
    assert decision["judge_calls"]["calls"] == 1


@pytest.mark.parametrize(
    ("rows", "args", "message"),
    [
        ([{"answer": "x"}], (), "requests.jsonl:1: field 'scope'"),
        (["text"], (), "requests.jsonl:1: expected a request object, got string"),
        (REQUESTS, ("--mode", "block"), "--mode must be one of"),
        (REQUESTS, ("--mode", "enforce", "--judge", "openai"), "needs a model"),
    ],
)
def test_gate_check_bad_input_exits_3_storing_nothing(
    cli: Cli, tmp_path: Path, rows: list[Any], args: tuple[str, ...], message: str
) -> None:
    result = cli("gate-check", str(write(tmp_path / "requests.jsonl", rows)), *args)
    assert result.code == 3
    assert message in result.err
    assert list_gate_decisions(store_of(tmp_path)) == []


def test_gate_review_lists_the_clis_parked_answers_only(cli: Cli, tmp_path: Path) -> None:
    mine = park(tmp_path)
    theirs = park(tmp_path, owner="key-ana")
    listed = cli("gate-review")
    assert listed.code == 0, listed.err
    assert listed.out.startswith(f"{mine.id[:8]}  ")
    assert f"  answer:   {DRIFTED}\n" in listed.out
    assert "  out of scope: finance_ledger\n" in listed.out
    assert theirs.id[:8] not in listed.out
    assert f"{theirs.id[:8]}  " in cli("gate-review", "--all").out


def test_gate_review_releases_once_and_hands_back_the_original(cli: Cli, tmp_path: Path) -> None:
    decision = park(tmp_path)
    released = cli("gate-review", decision.id[:8], "--release", "--reviewer", "ops", "--note", "ok")
    assert released.code == 0, released.err
    assert released.out == f"released {decision.id[:8]} by ops\n  answer: {DRIFTED}\n"
    assert cli("gate-review").out == "no parked answers\n"
    assert "released by ops: ok" in cli("gate-review", "--status", "released").out
    again = cli("gate-review", decision.id[:8], "--discard", "--reviewer", "ops")
    assert again.code == 3
    assert "already resolved (released by 'ops')" in again.err


def test_gate_review_cannot_resolve_another_owners_answer(cli: Cli, tmp_path: Path) -> None:
    theirs = park(tmp_path, owner="key-ana")
    result = cli("gate-review", theirs.id[:8], "--discard", "--reviewer", "ops")
    assert result.code == 3
    assert "no gate decision matches id" in result.err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--release",), "name the DECISION to resolve"),
        (("abcd",), "give one of --release or --discard"),
        (("abcd", "--release", "--discard"), "give one of --release or --discard"),
        (("abc", "--release"), "at least 4 characters"),
        (("--status", "done"), "--status must be one of"),
    ],
)
def test_gate_review_bad_input_exits_3(cli: Cli, args: tuple[str, ...], message: str) -> None:
    result = cli("gate-review", *args)
    assert result.code == 3
    assert message in result.err


def test_untrusted_text_is_printed_inert(cli: Cli, tmp_path: Path) -> None:
    hostile = {"id": "t\x1b[2J", "answer": "see crm.accounts\x1b]0;owned\x07", "scope": SCOPE}
    checked = cli("gate-check", str(write(tmp_path / "requests.jsonl", [hostile])))
    assert checked.code == 0, checked.err
    assert "\x1b" not in checked.out
    assert "\x07" not in checked.out
    assert (
        "t\\x1b[2J: deliver; trigger: answer_reference_out_of_scope (crm.accounts)" in checked.out
    )


def test_a_parked_hostile_answer_is_listed_inert(cli: Cli, tmp_path: Path) -> None:
    store = store_of(tmp_path)
    asyncio.run(
        check_answer(
            store,
            "From the finance_ledger database:\x1b[31m <script>alert(1)</script>\r\nrm -rf",
            question="q\x1b[2J",
            scope=GateScope(databases=("fleet_ops",)),
            mode="review",
            judge=drifted,
        )
    )
    store.close()
    listed = cli("gate-review")
    assert listed.code == 0, listed.err
    assert "\x1b" not in listed.out
    assert "\r" not in listed.out
    assert "  question: q\\x1b[2J\n" in listed.out
    assert "\\x1b[31m <script>alert(1)</script>\\x0d\\x0arm -rf" in listed.out
