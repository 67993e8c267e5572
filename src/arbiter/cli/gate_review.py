"""``arbiter gate-check`` and ``arbiter gate-review``: the grounding gate from the terminal.

``gate-check FILE`` runs the gate on the answers of a JSON or JSONL file and stores every
decision; ``gate-review`` lists the answers ``review`` mode parked, and releases or
discards one. The work is :mod:`arbiter.service.grounding_gate`'s; this module parses
and prints. Decisions made here have no owner (the server's carry the API key's id), so
``gate-review`` shows those, or everyone's with ``--all``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from arbiter.cli.app import app
from arbiter.cli.common import echo_json, open_store, out_console

if TYPE_CHECKING:
    from arbiter.contract.gate import GateDecision, GateMode, ParkedItem

__all__ = ["gate_check", "gate_review"]

_SHOWN = 200
"""Characters of an answer shown on one line."""


def _text(value: object, limit: int = _SHOWN) -> str:
    from arbiter import escape

    return escape.terminal(value, single_line=True, limit=limit)


def _print(lines: list[str]) -> None:
    console = out_console()
    for line in lines:
        console.print(line, markup=False, highlight=False, soft_wrap=True)


@app.command("gate-check")
def gate_check(
    file: Annotated[
        Path,
        typer.Argument(help="JSON (one object) or JSONL: answer, scope, question, tool_calls."),
    ],
    mode: Annotated[
        str, typer.Option(help="off, observe, annotate, enforce or review.")
    ] = "observe",
    judge: Annotated[
        list[str] | None,
        typer.Option(help="A scope judge panel member, provider:model (repeat; default mock)."),
    ] = None,
    timeout: Annotated[float, typer.Option(help="Seconds the judge may take.")] = 10.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the decisions as JSON.")] = False,
) -> None:
    """Run the grounding gate on answers and store each decision.

    The scope_faithfulness judge is asked only in enforce and review, and only when the
    trigger fired; on the default mock panel it abstains, so such an answer is annotated.
    """
    from arbiter.contract.gate import GATE_MODES
    from arbiter.errors import InputError
    from arbiter.service.grounding_gate import check_requests, load_gate_requests, scope_judge

    if mode not in GATE_MODES:
        raise InputError(f"gate-check: --mode must be one of {', '.join(GATE_MODES)}; got {mode!r}")
    gate_mode: GateMode = mode
    requests = load_gate_requests(file)
    store = open_store()
    panel = scope_judge(judge or ["mock"]) if mode in ("enforce", "review") else None
    from arbiter.telemetry import Telemetry

    # With OTEL_EXPORTER_OTLP_ENDPOINT set, each decision is exported as a span too.
    telemetry = Telemetry.from_env()
    try:
        decisions = asyncio.run(
            check_requests(
                store, requests, mode=gate_mode, judge=panel, timeout=timeout, telemetry=telemetry
            )
        )
    finally:
        telemetry.shutdown()
    if as_json:
        echo_json([d.model_dump(mode="json") for d in decisions])
        return
    lines: list[str] = []
    for number, (request, decision) in enumerate(zip(requests, decisions, strict=True), 1):
        lines += _decision_lines(decision, request.id or f"answer {number}")
    stored = sum(
        d.mode != "off" and not any(e.startswith("sink") for e in d.errors) for d in decisions
    )
    lines.append(f"{stored} of {len(decisions)} decisions stored in {store.describe()}")
    _print(lines)


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def _decision_lines(decision: GateDecision, name: str) -> list[str]:
    head = f"{_text(name, 80)}: {decision.action}"
    if decision.needs_judge:
        found = [*decision.out_of_scope_sources, *decision.out_of_scope_references]
        head += f"; trigger: {', '.join(decision.reasons)} ({_text(', '.join(found), 120)})"
    elif decision.mode != "off":
        head += "; trigger: none" if decision.scope_declared else "; no scope declared"
    if decision.judge != "not_called":
        head += f"; judge: {decision.judge}"
        calls = decision.judge_calls
        if calls is not None:
            cost = "cost unknown" if calls.cost_usd is None else f"${calls.cost_usd:.5f}"
            tokens = calls.input_tokens + calls.output_tokens
            head += f" ({_count(calls.calls, 'call')}, {_count(tokens, 'token')}, {cost})"
    lines = [head, f"  decision {decision.id}", f"  delivered: {_text(decision.delivered)}"]
    lines += [f"  error: {_text(error)}" for error in decision.errors]
    return lines


@app.command("gate-review")
def gate_review(
    decision: Annotated[
        str | None, typer.Argument(help="The decision that parked the answer (an id prefix).")
    ] = None,
    release: Annotated[
        bool, typer.Option("--release", help="Deliver the original answer after all.")
    ] = False,
    discard: Annotated[bool, typer.Option("--discard", help="Keep it withheld.")] = False,
    reviewer: Annotated[
        str | None, typer.Option(help="Who resolves it (default: your login name).")
    ] = None,
    note: Annotated[str, typer.Option("--note", help="Why, kept with the review.")] = "",
    status: Annotated[
        str, typer.Option(help="Which to list: pending, released, discarded or all.")
    ] = "pending",
    everyone: Annotated[
        bool, typer.Option("--all", help="Every owner's parked answers, not only the CLI's.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """List the answers the gate parked for review, or release / discard one."""
    from arbiter.errors import InputError
    from arbiter.service.grounding_gate import (
        find_gate_decision,
        list_parked_answers,
        resolve_parked_answer,
    )

    store = open_store()
    if decision is None:
        if release or discard or note or reviewer:
            raise InputError("gate-review: name the DECISION to resolve")
        statuses = ("pending", "released", "discarded", "all")
        if status not in statuses:
            raise InputError(f"gate-review: --status must be one of {', '.join(statuses)}")
        chosen: Literal["pending", "released", "discarded"] | None = (
            None if status == "all" else status  # type: ignore[assignment]
        )
        from arbiter.config import Settings

        ttl = Settings().trust_review_ttl_days  # settled reviews expire, pending ones never
        items = list_parked_answers(
            store, everyone=everyone, status=chosen, limit=None, settled_ttl_days=ttl
        )
        if as_json:
            echo_json([_item_json(item) for item in items])
        else:
            _print([line for item in items for line in _item_lines(item)] or ["no parked answers"])
        return
    if release == discard:
        raise InputError("gate-review: give one of --release or --discard")
    from arbiter.cli.annotate import _default_annotator

    found = find_gate_decision(store, decision, everyone=everyone)
    item = resolve_parked_answer(
        store,
        found.id,
        "release" if release else "discard",
        reviewer=reviewer or _default_annotator(),
        everyone=everyone,
        note=note,
    )
    if as_json:
        echo_json(_item_json(item))
        return
    assert item.review is not None
    lines = [f"{item.status} {found.id[:8]} by {_text(item.review.reviewer, 80)}"]
    if item.status == "released":
        lines.append(f"  answer: {_text(item.parked.answer, 10_000)}")
    _print(lines)


def _item_json(item: ParkedItem) -> dict[str, object]:
    return {
        "decision": item.decision.model_dump(mode="json"),
        "status": item.status,
        "review": item.review.model_dump(mode="json") if item.review else None,
    }


def _item_lines(item: ParkedItem) -> list[str]:
    when = item.decision.created_at.strftime("%Y-%m-%d %H:%M")
    owner = f", owner {_text(item.decision.owner, 60)}" if item.decision.owner else ""
    lines = [f"{item.decision.id[:8]}  {when}  {item.status}{owner}"]
    lines.append(f"  question: {_text(item.parked.question)}")
    lines.append(f"  answer:   {_text(item.parked.answer)}")
    refs = [*item.decision.out_of_scope_sources, *item.decision.out_of_scope_references]
    if refs:
        lines.append(f"  out of scope: {_text(', '.join(refs))}")
    if item.review is not None:
        lines.append(
            f"  {item.status} by {_text(item.review.reviewer, 80)}: {_text(item.review.note)}"
        )
    return lines
