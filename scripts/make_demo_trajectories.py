"""Generate the sample agent runs ``arbiter demo`` stores, so ``arbiter serve`` shows agents.

Each line of ``src/arbiter/demo/data/trajectories.jsonl`` is one submission, as
``POST /v1/trajectories`` takes it: a record of an importer's format, the format, the
assertions to score it against, and the agent's name (and version) to give the runs.
The records come from the documented examples (``docs/examples/agents``: a support
agent before and after a change, τ-bench trials of a retail agent, two platform turns
through the ``uderia_turn`` mapping), one real OpenTelemetry trace of an
``openai-v2``-instrumented client with its log events (``tests/trajectories/data``), and
three runs of a flow written here::

    python scripts/make_demo_trajectories.py                     # rewrite the bundled file
    python scripts/make_demo_trajectories.py --out /tmp/t.jsonl  # write elsewhere
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "docs" / "examples" / "agents"
DEFAULT_OUT = ROOT / "src" / "arbiter" / "demo" / "data" / "trajectories.jsonl"
"""Where the bundled sample runs live."""


def _lines(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _flow(number: int, *, failing: str | None = None) -> dict[str, Any]:
    """A nightly report flow: extract, two parallel summaries, publish."""
    day = f"2026-03-{10 + number:02d}"

    def node(
        node_id: str, start: str, end: str, cost: float, error: str | None = None
    ) -> dict[str, Any]:
        return {
            "id": node_id,
            "name": node_id.replace("_", " "),
            "type": "agent",
            "status": "error" if error else "completed",
            "started_at": f"{day}T02:{start}Z",
            "ended_at": f"{day}T02:{end}Z",
            "cost_usd": cost,
            "error": error,
        }

    nodes = [
        node("extract_orders", "00:00", "00:40", 0.004),
        node("summarize_sales", "00:41", "01:30", 0.012),
        node("summarize_returns", "00:41", "01:10", 0.009, failing),
    ]
    if failing is None:
        nodes.append(node("publish_report", "01:31", "01:45", 0.001))
    return {
        "id": f"nightly-{day}",
        "agent": {"name": "nightly-report", "agent_class": "flow"},
        "nodes": nodes,
        "status": "error" if failing else "completed",
        "output": None if failing else f"Report for {day} published.",
        "error": failing,
        "started_at": f"{day}T02:00:00Z",
        "ended_at": f"{day}T02:01:45Z" if failing is None else f"{day}T02:01:10Z",
    }


def submissions() -> list[dict[str, Any]]:
    """Every sample submission, in the order the demo stores them."""
    rows: list[dict[str, Any]] = []
    for version in ("v1", "v2"):
        for record in _lines(EXAMPLES / f"support-{version}.jsonl"):
            rows.append(
                {
                    "agent": "support-agent",
                    "version": version,
                    "format": "openai_messages",
                    "record": record,
                }
            )
    for trial in json.loads((EXAMPLES / "retail-tau-bench.json").read_text()):
        rows.append({"agent": "retail-agent", "format": "tau_bench", "record": [trial]})
    for record in _lines(EXAMPLES / "orders-turns.jsonl"):
        rows.append(
            {"agent": None, "format": "mapping", "mapping": "uderia_turn", "record": record}
        )
    traces, logs = _lines(ROOT / "tests" / "trajectories" / "data" / "otlp_openai_v2_content.jsonl")
    rows.append({"agent": "weather-app", "format": "otlp", "record": {**traces, **logs}})
    for number, failing in enumerate([None, None, "upstream timeout after 30 s"]):
        rows.append(
            {
                "agent": None,
                "format": "flow",
                "record": _flow(number, failing=failing),
                "assertions": {"expect_complete": True, "require_nodes": ["publish_report"]},
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    out = parser.parse_args().out
    rows = submissions()
    out.write_text(
        "".join(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows)
    )
    print(f"wrote {len(rows)} sample submissions to {out}")


if __name__ == "__main__":
    main()
