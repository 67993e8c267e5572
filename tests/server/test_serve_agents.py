"""``arbiter demo`` then ``arbiter serve`` (real processes): the sample agent runs show."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import httpx

from tests.server.test_serve import ARBITER, home, served  # noqa: F401  (fixtures)

AGENTS = {"@OPS", "retail-agent", "nightly-report", "support-agent", "weather-app"}


def test_serve_shows_the_demo_agents_their_ledgers_and_runs(
    home: dict[str, str],  # noqa: F811
    tmp_path: Path,
    served: Callable[[], str],  # noqa: F811
) -> None:
    demo = subprocess.run(
        [*ARBITER, "demo", "--quiet"], cwd=tmp_path, env=home, capture_output=True, text=True
    )
    assert demo.returncode == 0, demo.stderr
    url = served()
    roster = httpx.get(f"{url}/v1/agents").json()
    assert {entry["name"] for entry in roster["items"]} == AGENTS
    assert sum(entry["runs"] for entry in roster["items"]) == 24
    health = [entry["health"] for entry in roster["items"]]
    order = ["danger", "review", "healthy", "inactive"]
    assert health == sorted(health, key=order.index)  # the worst first
    ledger = httpx.get(f"{url}/v1/agents/weather-app/runs").json()
    [row] = ledger["items"]
    run = httpx.get(f"{url}/v1/trajectories/{row['id']}").json()
    assert run["source_format"] == "otlp_json"
    assert [s["name"] for s in run["trajectory"]["steps"] if s["kind"] == "tool_call"] == [
        "get_weather"
    ]
    assert run["trajectory_hash"].startswith("sha256:")
