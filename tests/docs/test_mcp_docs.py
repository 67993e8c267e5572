"""docs/mcp.md: the session it shows runs and prints what it shows, its table of tools is
the server's, and the client configurations it shows start and reach that server."""

from __future__ import annotations

import json
import re

import pytest

from arbiter.server.mcp_app import MCP_PATH
from arbiter.service.mcp_server import PROMPT, RUN_URI, TOOLS
from tests.docs.doc_examples import REPO, Example, Outcome, Session, blocks, examples

PAGE = REPO / "docs" / "mcp.md"
EXAMPLES = examples(PAGE)
TEXT = PAGE.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    session = Session(tmp_path_factory.mktemp("home") / ".arbiter")
    return {example.name: session.run(example) for example in EXAMPLES}


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_example_prints_what_the_page_shows(example: Example, outcomes: dict[str, Outcome]) -> None:
    problem = outcomes[example.name].problem(example)
    assert problem is None, problem


def test_the_page_shows_a_session() -> None:
    assert [e.kind for e in EXAMPLES] == ["python"]


def test_the_table_lists_every_tool_in_the_server_s_order() -> None:
    listed = re.findall(r"^\| `([a-z_]+)` \|", TEXT, flags=re.M)
    assert listed == [tool.name for tool in TOOLS]


def test_the_resource_and_the_prompt_are_the_server_s() -> None:
    assert f"`{RUN_URI}`" in TEXT
    assert f"`{PROMPT}`" in TEXT


def test_the_client_configurations_start_arbiter_mcp_and_reach_its_path() -> None:
    configs = [json.loads(b.text) for b in blocks(PAGE) if b.language == "json"]
    stdio, http = (config["mcpServers"]["arbiter"] for config in configs)
    assert [stdio["command"], *stdio["args"]] == ["arbiter", "mcp"]
    assert http["url"].endswith(MCP_PATH)
    assert http["headers"]["Authorization"].startswith("Bearer arb_")
