"""``arbiter inbox``: the assurance inbox's events, and acknowledging one.

The work is :mod:`arbiter.service.inbox`'s; the terminal sees every owner's events.
"""

from __future__ import annotations

from typing import Annotated

import typer

from arbiter.cli.app import app
from arbiter.cli.common import echo_json, open_store, out_console

__all__ = ["inbox"]


def _text(value: object, limit: int = 200) -> str:
    from arbiter import escape

    return escape.terminal(value, single_line=True, limit=limit)


@app.command("inbox")
def inbox(
    ack: Annotated[int | None, typer.Option(help="Acknowledge this event (its number).")] = None,
    note: Annotated[str, typer.Option(help="Kept with the acknowledgement.")] = "",
    unacked: Annotated[
        bool, typer.Option("--unacked", help="Only events not acknowledged.")
    ] = False,
    agent: Annotated[str | None, typer.Option(help="Only this agent's events.")] = None,
    limit: Annotated[int, typer.Option(min=1, max=500, help="At most this many.")] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """The assurance inbox, newest first.

    It holds breaker trips and unfreezes, withheld and parked answers, judge
    condemnations, signature failures, calibration drops, red-team breaches,
    firewall flags on ingested runs and webhook failures.
    """
    from arbiter.cli.annotate import _default_annotator
    from arbiter.service.inbox import ack_event
    from arbiter.service.inbox import inbox as list_inbox

    store = open_store()
    if ack is not None:
        event = ack_event(store, ack, by=_default_annotator(), note=note)
        if as_json:
            echo_json(event.model_dump(mode="json"))
        else:
            typer.echo(f"acknowledged event {event.id}")
        return
    events = list_inbox(store, agent=agent, unacked=unacked, limit=limit)
    if as_json:
        echo_json([e.model_dump(mode="json") for e in events])
        return
    console = out_console()
    if not events:
        console.print("the inbox is empty", markup=False, highlight=False)
    for event in events:
        when = event.created_at.strftime("%Y-%m-%d %H:%M")
        mark = "acked" if event.acked else "NEW"
        head = f"{event.id:>5}  {when}  {event.severity:<7} {event.kind:<18} {mark:<5}"
        line = f"{head}  {_text(event.message, 300)}"
        console.print(line, markup=False, highlight=False, soft_wrap=True)
