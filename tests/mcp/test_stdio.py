"""``arbiter mcp`` over stdio, driven by the MCP SDK's own client as an assistant would.

The command runs as a subprocess on a private Arbiter home; everything it writes to
standard output must be protocol, or the client's reads would fail.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from mcp import Client, StdioServerParameters

from tests.mcp.quiz import write_quiz

ARBITER = str(Path(sys.executable).parent / "arbiter")
TOOLS = {
    "arbitrate",
    "score",
    "score_trajectory",
    "evaluate",
    "get_report",
    "list_runs",
    "compare_runs",
    "failures",
    "calibration",
    "trust_status",
    "verify",
}


@asynccontextmanager
async def stdio_session(folder: Path) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=ARBITER, args=["mcp"], env={"ARBITER_HOME": str(folder / "home")}, cwd=folder
    )
    async with Client(params, read_timeout_seconds=60) as client:
        yield client


async def test_every_tool_is_listed_with_an_input_and_an_output_schema(tmp_path: Path) -> None:
    async with stdio_session(tmp_path) as client:
        listed = (await client.list_tools()).tools
    assert {tool.name for tool in listed} == TOOLS
    for tool in listed:
        assert tool.input_schema["type"] == "object", tool.name
        assert tool.output_schema is not None
        assert tool.output_schema["type"] == "object"
        assert tool.description
    evaluate = next(t for t in listed if t.name == "evaluate")
    assert evaluate.input_schema["properties"]["k"]["minimum"] == 1
    assert {"run_id", "pass_rate", "pass_hat_k", "gate"} <= set(evaluate.output_schema["required"])


async def test_evaluate_reports_progress_then_the_run_reads_back(tmp_path: Path) -> None:
    files = write_quiz(tmp_path)
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append((done, total, message))

    async with stdio_session(tmp_path) as client:
        ran = await client.call_tool(
            "evaluate", {"eval_file": str(files["good"])}, progress_callback=progress
        )
        assert not ran.is_error, ran.content
        answer = ran.structured_content
        run_id = answer["run_id"]
        report = await client.call_tool("get_report", {"run_id": run_id[:15]})
        listed = await client.call_tool("list_runs", {})
        resource = await client.read_resource(f"arbiter://runs/{run_id}")
    assert answer["pass_rate"]["estimate"] == 1.0
    assert answer["pass_rate"]["n"] == 8
    assert answer["pass_rate"]["low"] < 1.0  # an interval, not a bare rate
    assert answer["gate"] == {"passed": True, "failures": [], "warnings": []}
    assert seen[0] == (0, None, f"run {run_id} started")
    assert seen[-1] == (8, 8, "8/8 pairs")
    assert report.structured_content["info"]["id"] == run_id
    assert report.structured_content["report"]["k"] == 2
    assert [r["id"] for r in listed.structured_content["items"]] == [run_id]
    assert f'"id":"{run_id}"' in resource.contents[0].text


async def test_bad_input_is_a_one_line_tool_error_and_the_server_goes_on(tmp_path: Path) -> None:
    async with stdio_session(tmp_path) as client:
        refused = await client.call_tool("evaluate", {"dataset": "quiz.jsonl", "k": 0})
        after = await client.call_tool(
            "score", {"scorer": "normalized", "output": "Paris", "expected": "paris"}
        )
    assert refused.is_error
    assert [block.text for block in refused.content] == [
        "evaluate: field 'k': Input should be greater than or equal to 1"
    ]
    assert after.structured_content["passed"] is True
