"""The assurance pack's contents: each member's evidence, the control map over them, the
owner's scope, an agent's scope, and stored text kept inert in JSON and Markdown."""

from __future__ import annotations

import asyncio
import io
import json
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from arbiter.attest import SigningKey, create_signing_key, verify_artifact
from arbiter.errors import InputError
from arbiter.safety.controls import shipped_controls
from arbiter.service.assurance_pack import AssurancePack, build_assurance_pack
from arbiter.service.inbox import resolve_event
from arbiter.store import Store
from arbiter.store.trust_repository import append_event
from tests.trust.helpers import save, stored

HOSTILE = "<script>alert(1)</script> | [x](javascript:alert(1)) **b** `c`\n# h \x1b[2J"
NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def key(tmp_path_factory: pytest.TempPathFactory) -> SigningKey:
    return create_signing_key(tmp_path_factory.mktemp("keys") / "signing-key.pem")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Any:
    found = Store(f"sqlite:///{tmp_path_factory.mktemp('store') / 'store.db'}")
    save(found, [stored(i, HOSTILE, i % 3 != 0) for i in range(12)])
    save(found, [stored(100 + i, "theirs", True) for i in range(3)], owner="key-b")
    event = append_event(
        found,
        kind="breaker_trip",
        severity="danger",
        agent=HOSTILE,
        owner=None,
        message=f"tripped: {HOSTILE}",
    )
    resolve_event(found, event.id, by="alice", note=HOSTILE)
    append_event(
        found, kind="gate_park", severity="warning", agent="theirs", owner="key-b", message="p"
    )
    yield found
    found.close()


def _members(pack: AssurancePack) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(pack.data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


@pytest.fixture(scope="module")
def everything(store: Store, key: SigningKey) -> AssurancePack:
    return asyncio.run(build_assurance_pack(store, key, now=NOW))


def test_the_pack_verifies_and_holds_every_member_the_control_map_cites(
    everything: AssurancePack, key: SigningKey
) -> None:
    found = verify_artifact(everything.data, key.public_key)
    assert found.ok, found.problems
    assert (found.kind, found.record_id) == ("assurance_pack", everything.record_id)
    assert everything.record_id.startswith("20261207-120000-")
    members = _members(everything)
    assert list(members) == [
        "agents.json",
        "calibration.json",
        "controls.json",
        "deployment.json",
        "evaluations.json",
        "gate-bench.json",
        "incidents.json",
        "redteam-live.json",
        "redteam-selftest.json",
        "summary.md",
        "signature.json",
    ]
    cited = {name for control in shipped_controls() for name in control.evidence}
    assert cited <= set(members)
    deployment = json.loads(members["deployment.json"])
    assert deployment["scope"] == {"agent": None, "owner": None, "created_at": NOW.isoformat()}
    assert deployment["members"] == sorted(members)


def test_each_member_says_what_evidence_it_holds(everything: AssurancePack) -> None:
    members = {n: json.loads(d) for n, d in _members(everything).items() if n.endswith(".json")}
    agents = {a["agent"]: a for a in members["agents.json"]["agents"]}
    assert set(agents) == {HOSTILE, "theirs"}
    assert agents[HOSTILE]["runs"] == 12
    assert agents[HOSTILE]["integrity"] == "unsigned"  # stored without a signature
    rates = {a["agent"]: a["pass_rate"] for a in members["evaluations.json"]["agents"]}
    assert (rates[HOSTILE]["passed"], rates[HOSTILE]["n"]) == (8, 12)
    assert rates[HOSTILE]["low"] < 8 / 12 < rates[HOSTILE]["high"]
    incidents = members["incidents.json"]
    assert incidents["counts"] == {
        "events": 2,
        "resolved": 1,
        "acknowledged_not_resolved": 0,
        "open": 1,
    }
    resolved = next(e for e in incidents["events"] if e["resolved"])
    assert resolved["resolved"]["by"] == "alice"
    assert members["calibration.json"]["evidence"]["present"] is False
    assert members["redteam-live.json"]["evidence"] == {
        "present": False,
        "summary": "no live red-team result is stored",
    }
    assert members["redteam-selftest.json"]["shipped"]["corpus"] == "shipped"
    assert members["redteam-selftest.json"]["heldout"]["n_cases"] > 0
    assert members["gate-bench.json"]["n"] > 0
    for name in ("controls.json", "summary.md"):  # a status is never a claim of conformity
        assert b"compliant" not in _members(everything)[name].lower()
    statuses = {c["id"]: c["status"] for c in members["controls.json"]["controls"]}
    # Article 14 cites incidents (held), calibration (none) and agents (held).
    assert statuses["eu-ai-act-art-14"] == "partial evidence"
    assert statuses["eu-ai-act-art-10"] == "evidence"


def test_an_owner_s_pack_holds_only_its_own_records(store: Store, key: SigningKey) -> None:
    pack = asyncio.run(build_assurance_pack(store, key, viewer="key-b", now=NOW))
    members = {n: d for n, d in _members(pack).items()}
    assert HOSTILE.encode() not in b"".join(members.values())
    assert b"script" not in members["agents.json"] + members["incidents.json"]
    agents = json.loads(members["agents.json"])["agents"]
    assert [a["agent"] for a in agents] == ["theirs"]
    assert json.loads(members["incidents.json"])["counts"]["events"] == 1
    assert json.loads(members["deployment.json"])["scope"]["owner"] == "key-b"


def test_an_agent_s_pack_leaves_out_the_other_agents_and_the_offline_runs(
    store: Store, key: SigningKey
) -> None:
    pack = asyncio.run(build_assurance_pack(store, key, agent="theirs", now=NOW))
    members = {n: json.loads(d) for n, d in _members(pack).items() if n.endswith(".json")}
    assert [a["agent"] for a in members["agents.json"]["agents"]] == ["theirs"]
    assert [a["agent"] for a in members["evaluations.json"]["agents"]] == ["theirs"]
    assert members["evaluations.json"]["offline_runs"] == []
    assert members["incidents.json"]["counts"]["events"] == 1


def test_a_stored_live_red_team_result_is_evidence(store: Store, key: SigningKey) -> None:
    def read(store: Store, viewer: str | None, agent: str | None) -> dict[str, Any]:
        return {"categories": {"injection": {"passed": 3, "n": 3}}}

    pack = asyncio.run(build_assurance_pack(store, key, now=NOW, live_redteam=read))
    live = json.loads(_members(pack)["redteam-live.json"])
    assert live["evidence"]["present"] is True
    assert live["result"]["categories"]["injection"]["n"] == 3


def test_stored_text_is_inert_in_the_pack(everything: AssurancePack) -> None:
    members = _members(everything)
    for name, data in members.items():
        assert data.isascii() or name == "summary.md", name
        assert b"<script>" not in data, name
        assert b"\x1b" not in data, name
    summary = members["summary.md"].decode("utf-8")
    row = next(line for line in summary.splitlines() if "alert" in line)
    assert "&lt;script&gt;" in row
    assert "\\[x\\]\\(javascript:alert\\(1\\)\\)" in row
    assert "\\*\\*b\\*\\*" in row
    assert "\\`c\\`" in row
    assert row.count(" | ") == 4  # the name's pipe is escaped: the row keeps its 5 cells
    assert "\n# h" not in summary
    agents = json.loads(members["agents.json"])["agents"]
    assert HOSTILE in {a["agent"] for a in agents}  # the value is kept exactly, as data


def test_the_same_store_and_time_give_the_same_members(
    store: Store, key: SigningKey, everything: AssurancePack, tmp_path: Path
) -> None:
    again = asyncio.run(build_assurance_pack(store, key, now=NOW))
    assert again.record_id == everything.record_id
    first, second = _members(everything), _members(again)
    assert {n: d for n, d in first.items() if n != "signature.json"} == {
        n: d for n, d in second.items() if n != "signature.json"
    }


def test_red_team_failures_in_the_inbox_are_named_but_are_no_live_result(
    key: SigningKey, tmp_path: Path
) -> None:
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    for _ in range(2):
        append_event(
            store,
            kind="redteam_failure",
            severity="danger",
            agent="a",
            owner=None,
            message="the planted instruction was obeyed",
        )
    pack = asyncio.run(build_assurance_pack(store, key, now=NOW))
    store.close()
    live = json.loads(_members(pack)["redteam-live.json"])
    assert live["evidence"] == {
        "present": False,
        "summary": "no live red-team result is stored; incidents.json holds 2 "
        "redteam_failure events",
    }
    statuses = {c.id: c.status for c in pack.controls.controls}
    assert statuses["eu-ai-act-art-15"] == "partial evidence"


def test_the_agents_are_judged_by_the_policy_given(store: Store, key: SigningKey) -> None:
    from arbiter.trust import TrustPolicy

    policy = TrustPolicy(min_runs_proven=3)
    pack = asyncio.run(build_assurance_pack(store, key, now=NOW, policy=policy))
    agents = json.loads(_members(pack)["agents.json"])
    assert agents["policy"]["min_runs_proven"] == 3
    states = {a["agent"]: a["state"] for a in agents["agents"]}
    assert states["theirs"] != "provisional"  # 3 runs now suffice to judge it


def test_runs_signed_with_the_pack_s_key_show_integrity_signed(
    key: SigningKey, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from arbiter.demo import trajectories_path
    from arbiter.service.trajectories import store_sample_trajectories

    monkeypatch.setenv("ARBITER_SIGNING_KEY", str(key.path))
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    asyncio.run(store_sample_trajectories(store, trajectories_path()))
    pack = asyncio.run(build_assurance_pack(store, key, now=NOW))
    other = create_signing_key(tmp_path / "other.pem")
    unknown = asyncio.run(build_assurance_pack(store, other, now=NOW))
    store.close()
    integrity = {a["integrity"] for a in json.loads(_members(pack)["agents.json"])["agents"]}
    assert integrity == {"signed"}
    integrity = {a["integrity"] for a in json.loads(_members(unknown)["agents.json"])["agents"]}
    assert integrity == {"changed"}  # their signatures do not hold under the pack's key


def test_the_newest_stored_live_red_team_is_the_owner_s_evidence(
    key: SigningKey, tmp_path: Path
) -> None:
    from arbiter.service.redteam_live import run_live_redteam
    from tests.helpers.redteam_agents import follower

    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    asyncio.run(run_live_redteam(follower, k=1, per_category=1, store=store, owner="k1"))
    mine = asyncio.run(build_assurance_pack(store, key, viewer="k1", now=NOW))
    theirs_pack = asyncio.run(build_assurance_pack(store, key, viewer="k2", now=NOW))
    store.close()
    live = json.loads(_members(mine)["redteam-live.json"])
    assert live["evidence"] == {
        "present": True,
        "summary": "the newest stored live red-team (k=1): 0/4 complete cases held their "
        "guards in every run over 4 categories, targets missed",
    }
    assert live["result"]["agent_name"] == "follower"
    article_15 = next(c for c in mine.controls.controls if c.id == "eu-ai-act-art-15")
    cited = {item.file: item.status for item in article_15.evidence}
    assert cited["redteam-live.json"] == "present"
    other = json.loads(_members(theirs_pack)["redteam-live.json"])
    assert other["evidence"]["present"] is False  # another owner's red-team is not theirs


def test_an_agent_known_only_by_its_live_red_team_has_a_pack(
    key: SigningKey, tmp_path: Path
) -> None:
    from arbiter.service.redteam_live import run_live_redteam
    from tests.helpers.redteam_agents import ignorer

    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    asyncio.run(run_live_redteam(ignorer, k=1, per_category=1, store=store))
    pack = asyncio.run(build_assurance_pack(store, key, agent="ignorer", now=NOW))
    with pytest.raises(InputError, match="no agent named 'nobody'"):
        asyncio.run(build_assurance_pack(store, key, agent="nobody", now=NOW))
    store.close()
    live = json.loads(_members(pack)["redteam-live.json"])
    assert live["result"]["passed"] is True
