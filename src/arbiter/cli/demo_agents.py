"""The agents part of ``arbiter demo``: the bundled sample runs scored, stored, rostered.

The runs (support, retail and platform agents, an instrumented app's trace, a flow) are
scored online by the deterministic trajectory scorers and stored, so ``arbiter serve``
shows them on ``/agents``; the demo prints the roster they make.
"""

from __future__ import annotations

import asyncio

from rich.text import Text

from arbiter import escape
from arbiter.cli.common import note, open_store, out_console

__all__ = ["demo_agents"]

_HEALTH_STYLE = {"healthy": "green", "review": "yellow", "danger": "red", "inactive": "dim"}


def demo_agents() -> None:
    """Store the sample agent runs and print the roster they make, worst health first."""
    from arbiter.demo import trajectories_path
    from arbiter.service.agent_roster import agent_roster
    from arbiter.service.trajectories import store_sample_trajectories

    store = open_store()
    try:
        stored = asyncio.run(store_sample_trajectories(store, trajectories_path()))
        roster = [entry for entry in agent_roster(store) if entry.name in {r.agent for r in stored}]
        where = store.describe()
    finally:
        store.close()
    console = out_console()
    console.print(
        Text(f"\nagents: {len(stored)} sample runs scored by the trajectory scorers", "bold")
    )
    for entry in roster:
        line = Text(f"  {escape.terminal(entry.name, single_line=True):<16} ")
        line.append(f"{entry.health:<8}", style=_HEALTH_STYLE[entry.health])
        if entry.pass_rate is not None:
            rate = entry.pass_rate
            interval = f"[{rate.low:.1%}, {rate.high:.1%}]"
            line.append(f"  pass rate {rate.estimate:6.1%} {interval:<16} {rate.passed}/{rate.n}")
        else:
            line.append("  not evaluated")
        line.append(f"  {entry.kind}" if entry.kind == "flow" else "")
        console.print(line, soft_wrap=True)
    note(
        f"stored as {len(stored)} agent runs in {where}\n"
        "  arbiter serve                    # the roster, each agent and its runs at /agents\n"
        "  arbiter agent score FILE         # score trace files at the terminal"
    )
