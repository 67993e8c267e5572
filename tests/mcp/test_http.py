"""``/mcp`` on ``arbiter serve``: the MCP server over streamable HTTP, behind the API keys.

A real uvicorn server over a store holding runs of two keys; the SDK's own client speaks
to it with each key. What a key may see and who owns what it makes follow the REST
API's rules, checked here through the REST API itself where it reads the same records.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from arbiter.config import Settings
from arbiter.server.app import create_app
from arbiter.service.eval_file import load_eval_file
from arbiter.service.run_plans import prepare_run, run_prepared
from arbiter.service.scoring import scorer_registry
from arbiter.store import Store
from arbiter.store.api_key_repository import create_api_key
from tests.integration.serving import serve_asgi
from tests.mcp.quiz import write_quiz

REPO = Path(__file__).resolve().parents[2]
CONVERSATION = (REPO / "docs/examples/agents/support-v1.jsonl").read_text().splitlines()[0]


@dataclass
class Served:
    url: str
    files: dict[str, Path]
    keys: dict[str, str]
    """Each key by its name: ``a``, ``b`` and ``admin``."""
    runs: dict[str, str]
    """``a_good``, ``a_worse`` (key a's runs), ``b`` (key b's)."""


def _run(store: Store, eval_file: Path, owner: str) -> str:
    plan = load_eval_file(
        eval_file, registry=scorer_registry(), timeout=10, concurrency=4, retries=0
    )
    report = asyncio.run(run_prepared(prepare_run(plan), store, owner=owner))
    assert report.run_id is not None
    return report.run_id


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("mcp-http")
    files = write_quiz(folder)
    store = Store(f"sqlite:///{folder / 'store.db'}")
    keys, ids = {}, {}
    for name in ("a", "b", "admin"):
        info, keys[name] = create_api_key(store, name, admin=name == "admin")
        ids[name] = info.id
    runs = {
        "a_good": _run(store, files["good"], ids["a"]),
        "a_worse": _run(store, files["worse"], ids["a"]),
        "b": _run(store, files["good"], ids["b"]),
    }
    app = create_app(Settings(home=folder / "home"), store=store)
    with serve_asgi(app) as url:
        yield Served(url, files, keys, runs)
    store.close()


@asynccontextmanager
async def session(served: Served, key: str) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {served.keys[key]}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        Client(streamable_http_client(f"{served.url}/mcp", http_client=http)) as client,
    ):
        yield client


async def call(served: Served, key: str, tool: str, arguments: dict[str, Any]) -> Any:
    async with session(served, key) as client:
        return await client.call_tool(tool, arguments)


def rest(served: Served, key: str, path: str) -> httpx2.Response:
    headers = {"Authorization": f"Bearer {served.keys[key]}"}
    return httpx2.get(f"{served.url}{path}", headers=headers, timeout=30)


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        ({}, "an API key is required"),
        ({"Authorization": "Bearer arb_00000000_wrong"}, "not one this server knows"),
    ],
)
def test_a_request_without_a_known_key_is_refused_before_mcp(
    served: Served, headers: dict[str, str], message: str
) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    answer = httpx2.post(f"{served.url}/mcp", json=body, headers=headers, timeout=30)
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"] == "Bearer"
    assert message in answer.json()["error"]["message"]


async def test_a_key_lists_and_reads_only_its_own_runs(served: Served) -> None:
    async with session(served, "a") as client:
        listed = await client.call_tool("list_runs", {})
        mine = await client.call_tool("get_report", {"run_id": served.runs["a_good"]})
        theirs = await client.call_tool("get_report", {"run_id": served.runs["b"]})
        resources = await client.list_resources()
        with pytest.raises(MCPError, match="no run matches id"):
            await client.read_resource(f"arbiter://runs/{served.runs['b']}")
    ids = {run["id"] for run in listed.structured_content["items"]}
    assert ids == {served.runs["a_good"], served.runs["a_worse"]}
    assert mine.structured_content["info"]["id"] == served.runs["a_good"]
    assert theirs.is_error
    assert theirs.content[0].text == f"no run matches id {served.runs['b']!r}"
    uris = {str(r.uri) for r in resources.resources}
    assert uris == {f"arbiter://runs/{served.runs[n]}" for n in ("a_good", "a_worse")}


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("compare_runs", {"run_a": "a_good", "run_b": "b"}),
        ("failures", {"run_id": "b"}),
        ("verify", {"target": "b"}),
    ],
)
async def test_a_key_cannot_reach_another_owners_run_through_any_tool(
    served: Served, tool: str, arguments: dict[str, str]
) -> None:
    named = {name: served.runs.get(value, value) for name, value in arguments.items()}
    refused = await call(served, "a", tool, named)
    assert refused.is_error
    assert served.runs["b"] in refused.content[0].text
    allowed = await call(served, "admin", tool, named)
    assert not allowed.is_error, allowed.content


async def test_the_admin_sees_every_run(served: Served) -> None:
    listed = await call(served, "admin", "list_runs", {})
    assert {run["id"] for run in listed.structured_content["items"]} >= set(served.runs.values())


async def test_evaluate_needs_an_admin_key(served: Served) -> None:
    refused = await call(served, "a", "evaluate", {"eval_file": str(served.files["good"])})
    assert refused.is_error
    assert "needs an admin key" in refused.content[0].text


async def test_evaluate_streams_progress_and_the_run_belongs_to_the_admin_key(
    served: Served,
) -> None:
    seen: list[str | None] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append(message)

    async with session(served, "admin") as client:
        ran = await client.call_tool(
            "evaluate", {"eval_file": str(served.files["worse"])}, progress_callback=progress
        )
    answer = ran.structured_content
    assert seen[0] == f"run {answer['run_id']} started"
    assert seen[-1] == "8/8 pairs"
    assert answer["pass_rate"]["estimate"] == 0.5
    assert answer["gate"]["passed"] is False
    assert answer["gate"]["failures"][0].startswith("accuracy")
    hidden = await call(served, "a", "get_report", {"run_id": answer["run_id"]})
    assert hidden.is_error


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("evaluate", {"dataset": "x.jsonl", "k": 0}, "evaluate: field 'k': Input should be"),
        ("list_runs", {"limit": 1000}, "list_runs: field 'limit': Input should be less than"),
        ("score", {"scorer": "normalized", "output": "x", "nope": 1}, "score: field 'nope':"),
        ("score", {"scorer": "no_such", "output": "x"}, "unknown scorer 'no_such'"),
        ("score", {"scorer": "normalized", "output": "x"}, "give expected"),
        ("score_trajectory", {"record": {"what": 1}}, "cannot tell the record's format"),
        ("get_report", {"run_id": "20990101"}, "no run matches id '20990101'"),
        ("verify", {}, "give either target"),
        ("no_such_tool", {}, "no tool named 'no_such_tool'"),
    ],
)
async def test_bad_input_is_a_one_line_tool_error(
    served: Served, tool: str, arguments: dict[str, Any], message: str
) -> None:
    refused = await call(served, "admin", tool, arguments)
    assert refused.is_error
    [block] = refused.content
    assert message in block.text
    assert "\n" not in block.text
    assert "Traceback" not in block.text


async def test_arbitrate_stores_a_verdict_the_key_owns(served: Served) -> None:
    judged = await call(
        served,
        "a",
        "arbitrate",
        {
            "task": "Say where the meeting is.",
            "context": "The meeting is in room 4 at noon.",
            "output": "The meeting is in room 4 at noon.",
        },
    )
    answer = judged.structured_content
    assert answer["verdict"]["decision"] in {"ACCEPT", "REVISE", "REJECT"}
    assert 0 <= answer["verdict"]["confidence"] <= 1
    verdict = f"/v1/verdicts/{answer['verdict_id']}"
    assert rest(served, "a", verdict).status_code == 200
    assert rest(served, "b", verdict).status_code == 404


async def test_score_trajectory_bands_the_run_and_stores_it_for_the_key(served: Served) -> None:
    scored = await call(served, "a", "score_trajectory", {"record": json.loads(CONVERSATION)})
    [run] = scored.structured_content["runs"]
    assert run["source_format"] == "openai_messages"
    assert run["band"] in {"healthy", "review", "danger"}
    assert run["scores"]
    assert all("passed" in score for score in run["scores"])
    assert rest(served, "a", f"/v1/trajectories/{run['run_id']}").status_code == 200
    assert rest(served, "b", f"/v1/trajectories/{run['run_id']}").status_code == 404


async def test_score_answers_the_scorer_s_score(served: Served) -> None:
    scored = await call(
        served,
        "b",
        "score",
        {"scorer": "f1_tokens:threshold=0.5", "output": "Paris, France", "expected": "Paris"},
    )
    assert scored.structured_content["value"] == pytest.approx(2 / 3)
    assert scored.structured_content["passed"] is True


async def test_failures_and_compare_name_the_examples_that_broke(served: Served) -> None:
    good, worse = served.runs["a_good"], served.runs["a_worse"]
    failing = await call(served, "a", "failures", {"run_id": worse})
    compared = await call(served, "a", "compare_runs", {"run_a": good, "run_b": worse})
    ids = [e["example_id"] for e in failing.structured_content["examples"]]
    assert sorted(ids) == ["france", "peru"]
    diff = compared.structured_content["diff"]
    assert sorted(flip["example_id"] for flip in diff["broken"]) == ["france", "peru"]
    assert diff["deltas"][0]["delta"] == pytest.approx(-0.5)


async def test_the_regression_prompt_gives_the_paired_figures_and_the_next_calls(
    served: Served,
) -> None:
    good, worse = served.runs["a_good"], served.runs["a_worse"]
    async with session(served, "a") as client:
        prompts = await client.list_prompts()
        got = await client.get_prompt(
            "why_did_this_run_regress", {"run_id": worse, "baseline": good}
        )
        with pytest.raises(MCPError, match="no run matches id"):
            await client.get_prompt(
                "why_did_this_run_regress", {"run_id": served.runs["b"], "baseline": good}
            )
    assert [p.name for p in prompts.prompts] == ["why_did_this_run_regress"]
    text = got.messages[0].content.text
    assert f"Run {worse} is compared with its baseline {good} over 4 paired examples" in text
    assert "2 examples broke, 0 were fixed" in text
    assert f"failures with run_id={worse}" in text


async def test_calibration_answers_with_no_judge_before_any_annotation(served: Served) -> None:
    answer = await call(served, "a", "calibration", {})
    assert answer.structured_content["judges"] == []
    assert answer.structured_content["min_pairs"] > 0


async def test_trust_status_shows_a_key_only_its_own_agents(served: Served) -> None:
    scored = await call(served, "b", "score_trajectory", {"record": json.loads(CONVERSATION)})
    agent = scored.structured_content["runs"][0]["agent"]
    mine = await call(served, "b", "trust_status", {"agent": agent})
    theirs = await call(served, "a", "trust_status", {"agent": agent})
    [status] = mine.structured_content["agents"]
    assert status["agent"] == agent
    assert status["runs"] >= 1
    assert 0 <= status["interval"][0] <= status["interval"][1] <= 1
    owners = {s["owner"] for s in theirs.structured_content["agents"]}
    assert status["owner"] not in owners
