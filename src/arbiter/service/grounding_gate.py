"""The grounding gate as library calls: check an answer and store the decision, review
parked answers, and run the gate's benchmark.

:func:`check_answer` is what a service (the REST server, a script) calls before it
delivers an answer: it runs :func:`arbiter.judges.grounding_gate.gate` with the store as
its sink, so every decision is stored the moment it is made, and exported as a span
when a ``Telemetry`` is given. The gate fails open: a store that cannot take the
decision is named in ``decision.errors`` and the answer is delivered as decided.

In ``review`` mode a withheld answer is parked with its owner (the API key id that made
it; None from the command line). :func:`list_parked_answers` lists one owner's (or, for
an administrator, everyone's); :func:`resolve_parked_answer` releases or discards one,
appending a review (once: a resolved answer stays resolved). An answer of another owner
is "not found", never "forbidden": its existence is not disclosed.

The benchmark reads the bundled set (``arbiter/judges/data/gate_cases.jsonl``) unless a
file is given; each line is one :class:`~arbiter.judges.gate_bench.GateCase` object.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arbiter.contract import ToolCall
from arbiter.contract.gate import (
    GateDecision,
    GateMode,
    GateRequest,
    GateReview,
    GateScope,
    ParkedItem,
    ParkedStatus,
    ReviewResolution,
)
from arbiter.datasets.jsonio import iter_json_lines, json_type, parse_json, read_text
from arbiter.errors import InputError, StoreError
from arbiter.judges.gate_bench import GateBenchReport, GateCase, bench_gate
from arbiter.judges.gate_judge import PanelScopeJudge
from arbiter.judges.grounding_gate import DEFAULT_TIMEOUT, ScopeJudge, gate
from arbiter.judges.layer import effective_budget
from arbiter.service.attestation import attest_grounding_decision
from arbiter.store import Store
from arbiter.store.gate_repository import (
    gate_decision_ids,
    gate_decisions,
    load_gate_decision,
    load_gate_review,
    parked_items,
    save_gate_decision,
    save_gate_review,
)
from arbiter.validation import validate_document

if TYPE_CHECKING:
    from arbiter.judges.panel import PanelModel
    from arbiter.scoring.base import ScoringContext
    from arbiter.telemetry import Telemetry

__all__ = [
    "BUNDLED_CASES",
    "check_answer",
    "check_requests",
    "find_gate_decision",
    "get_gate_decision",
    "list_gate_decisions",
    "list_parked_answers",
    "load_gate_cases",
    "load_gate_requests",
    "record_decision",
    "resolve_parked_answer",
    "run_gate_bench",
    "scope_judge",
]

_RESOLUTIONS: tuple[ReviewResolution, ...] = ("release", "discard")


def scope_judge(
    judges: Sequence[str | Mapping[str, Any] | PanelModel] = ("mock",),
    *,
    max_members: int = 3,
    context: ScoringContext | None = None,
) -> PanelScopeJudge:
    """The scope_faithfulness judge on a panel of ``judges``, for :func:`check_answer`.

    On the ``mock`` provider (the default) every member abstains, so a triggered answer
    in ``enforce`` is annotated, never withheld.

    Raises:
        InputError: ``max_members`` is below 1, or a configuration is malformed.
    """
    try:
        return PanelScopeJudge.build(judges, max_members=max_members, context=context)
    except ValueError as exc:
        raise InputError(f"scope judge: {' '.join(str(exc).split())}") from None


def record_decision(store: Store, decision: GateDecision, *, agent: str | None = None) -> None:
    """Store one gate decision (the store sink of :func:`check_answer`), with the agent
    whose answer it gated when named; signed when a signing key is configured."""
    save_gate_decision(store, decision, agent=agent)
    attest_grounding_decision(store, decision)


async def check_answer(
    store: Store,
    answer: str,
    *,
    question: str,
    tool_calls: Sequence[ToolCall] = (),
    scope: GateScope,
    mode: GateMode = "observe",
    judge: ScopeJudge | None = None,
    timeout: float = DEFAULT_TIMEOUT,  # noqa: ASYNC109 - bounds the judge call only
    owner: str | None = None,
    telemetry: Telemetry | None = None,
    agent: str | None = None,
) -> GateDecision:
    """Run the grounding gate on ``answer`` and store its decision.

    Args:
        store: Where the decision goes (in ``off`` nothing is stored).
        answer: The answer about to be delivered.
        question: What the user asked.
        tool_calls: The calls the agent made for it.
        scope: The trusted scope.
        mode: ``off``, ``observe`` (default), ``annotate``, ``enforce`` or ``review``.
        judge: The scope judge (:func:`scope_judge`, or any ``ScopeJudge``).
        timeout: Seconds the judge may take. For a panel judge it is raised to one
            member's call timeout plus a margin, so the members' own timeouts end first
            and what their calls cost is still recorded.
        owner: Whose answer it is: the API key id that asked; None from the command line.
        telemetry: Where the decision's span goes; none when None.
        agent: The agent that wrote the answer, stored beside the decision (so a
            backtest can replay one agent's decisions).

    Returns:
        The decision as stored; ``decision.delivered`` is what to show the user.

    Raises:
        InputError: An unknown mode or a timeout that is not a positive number.
    """
    if isinstance(judge, PanelScopeJudge) and judge.call_timeout > 0:
        timeout = effective_budget(timeout, judge.call_timeout)

    async def sink(decision: GateDecision) -> None:
        await asyncio.to_thread(record_decision, store, decision, agent=agent)

    return await gate(
        answer,
        question=question,
        tool_calls=tool_calls,
        scope=scope,
        mode=mode,
        judge=judge,
        timeout=timeout,
        owner=owner,
        sink=sink,
        telemetry=telemetry,
    )


def load_gate_requests(path: Path) -> list[GateRequest]:
    """The answers to check in a JSON file (one object) or a JSONL file (one a line).

    Each object has ``answer``, ``scope`` (``databases``, ``entities``,
    ``description``) and optionally ``id``, ``question`` and ``tool_calls``.

    Raises:
        InputError: The file cannot be read, or an object is not a request (named by
            file, line and field).
    """
    text = read_text(path, what="gate request file")
    if path.suffix.lower() == ".jsonl":
        rows = list(iter_json_lines(text, source=str(path)))
    else:
        rows = [(0, parse_json(text, source=str(path)))]
    requests: list[GateRequest] = []
    for line, row in rows:
        where = f"{path}:{line}" if line else str(path)
        if not isinstance(row, dict):
            raise InputError(f"{where}: expected a request object, got {json_type(row)}")
        requests.append(validate_document(GateRequest, row, where=where))
    if not requests:
        raise InputError(f"{path}: no requests")
    return requests


async def check_requests(
    store: Store,
    requests: Sequence[GateRequest],
    *,
    mode: GateMode = "observe",
    judge: ScopeJudge | None = None,
    timeout: float = DEFAULT_TIMEOUT,  # noqa: ASYNC109 - bounds each judge call only
    owner: str | None = None,
    telemetry: Telemetry | None = None,
) -> list[GateDecision]:
    """:func:`check_answer` on each request in turn; the decisions in the same order."""
    decisions: list[GateDecision] = []
    for request in requests:
        decision = await check_answer(
            store,
            request.answer,
            question=request.question,
            tool_calls=request.tool_calls,
            scope=request.scope,
            mode=mode,
            judge=judge,
            timeout=timeout,
            owner=owner,
            telemetry=telemetry,
        )
        decisions.append(decision)
    return decisions


def find_gate_decision(
    store: Store, key: str, *, owner: str | None = None, everyone: bool = False
) -> GateDecision:
    """The decision of ``owner`` whose id is ``key`` or starts with it (at least 4 characters).

    Raises:
        StoreError: None matches, or more than one does.
    """
    if len(key) < 4:
        raise StoreError(f"a gate decision id has at least 4 characters; got {key!r}")
    ids = gate_decision_ids(store, key, owner=owner, everyone=everyone)
    if len(ids) != 1:
        found = "no gate decision" if not ids else "more than one gate decision"
        raise StoreError(f"{found} matches id {key!r} in {store.describe()}")
    return get_gate_decision(store, ids[0], owner=owner, everyone=everyone)


def list_gate_decisions(
    store: Store,
    *,
    owner: str | None = None,
    everyone: bool = False,
    limit: int | None = 100,
) -> list[GateDecision]:
    """Stored gate decisions of ``owner`` (everyone's for an administrator), newest first."""
    return gate_decisions(store, owner=owner, everyone=everyone, limit=limit)


def get_gate_decision(
    store: Store, decision_id: str, *, owner: str | None = None, everyone: bool = False
) -> GateDecision:
    """One stored decision, if ``owner`` may see it.

    Raises:
        StoreError: No such decision, or it is another owner's (not disclosed).
    """
    decision = load_gate_decision(store, decision_id)
    if decision is None or not (everyone or decision.owner == owner):
        raise StoreError(f"no gate decision {decision_id!r} in {store.describe()}")
    return decision


def list_parked_answers(
    store: Store,
    *,
    owner: str | None = None,
    everyone: bool = False,
    status: ParkedStatus | None = "pending",
    limit: int | None = 100,
    settled_ttl_days: float | None = None,
    now: datetime | None = None,
) -> list[ParkedItem]:
    """Answers parked for review of ``owner`` (everyone's for an administrator), newest first.

    Args:
        store: The store.
        owner: The API key id whose answers to list; None: those parked from the command line.
        everyone: Every owner's (an administrator).
        status: ``pending`` (default), ``released``, ``discarded``, or None for all.
        limit: At most this many; None: all.
        settled_ttl_days: A released or discarded answer whose review is older than this
            has expired from the queue (its decision and review stay stored); a pending
            one never expires. None: nothing expires.
        now: When the queue is read (default: now, UTC).
    """
    if settled_ttl_days is None or status == "pending":
        return parked_items(store, owner=owner, everyone=everyone, status=status, limit=limit)
    from datetime import UTC, timedelta

    cutoff = (now or datetime.now(UTC)) - timedelta(days=settled_ttl_days)
    items = parked_items(store, owner=owner, everyone=everyone, status=status, limit=None)
    kept = [i for i in items if i.review is None or i.review.created_at >= cutoff]
    return kept if limit is None else kept[:limit]


def resolve_parked_answer(
    store: Store,
    decision_id: str,
    resolution: ReviewResolution,
    *,
    reviewer: str,
    owner: str | None = None,
    everyone: bool = False,
    note: str = "",
    now: datetime | None = None,
) -> ParkedItem:
    """Release or discard a parked answer, appending the review beside its decision.

    Args:
        store: The store.
        decision_id: The decision that parked the answer.
        resolution: ``release`` (the original is to be delivered after all) or ``discard``.
        reviewer: Who resolved it.
        owner: The API key id resolving it; only its own answers are found.
        everyone: An administrator: any owner's answer is found.
        note: Why, in the reviewer's words.
        now: When (default: now, UTC).

    Returns:
        The answer's new standing; on ``release`` its ``parked.answer`` is the original.

    Raises:
        InputError: An unknown resolution, or an empty reviewer.
        StoreError: No parked answer under that id for this owner, or it is resolved already.
    """
    if resolution not in _RESOLUTIONS:
        raise InputError(
            f"The 'resolution' parameter of resolve_parked_answer must be one of "
            f"{_RESOLUTIONS}. Got {resolution!r}."
        )
    decision = load_gate_decision(store, decision_id)
    if decision is None or decision.parked is None or not (everyone or decision.owner == owner):
        raise StoreError(f"no parked answer under gate decision {decision_id!r}")
    fields: dict[str, Any] = {"decision_id": decision.id, "resolution": resolution}
    fields |= {"reviewer": reviewer, "note": note}
    if now is not None:
        fields["created_at"] = now
    review = validate_document(GateReview, fields, where=f"review of gate decision {decision_id}")
    save_gate_review(store, review)
    stored = load_gate_review(store, decision.id) or review
    status: ParkedStatus = "released" if stored.resolution == "release" else "discarded"
    return ParkedItem(decision=decision, status=status, review=stored)


BUNDLED_CASES = "gate_cases.jsonl"
"""The bundled case file's name, in ``arbiter.judges/data``."""
_MAX_FILE_CHARS = 50_000_000
"""Longest case file read."""


def load_gate_cases(path: Path | None = None) -> list[GateCase]:
    """The cases of a JSONL file (the bundled set when ``path`` is None).

    Raises:
        InputError: The file is missing, too large, or a line is not a valid case
            (named by file and line), or two cases share an id.
    """
    if path is None:
        where = f"bundled {BUNDLED_CASES}"
        text = files("arbiter.judges").joinpath("data", BUNDLED_CASES).read_text("utf-8")
    else:
        where = str(path)
        try:
            if path.stat().st_size > _MAX_FILE_CHARS:
                raise InputError(f"{where}: larger than {_MAX_FILE_CHARS:,} bytes")
            text = path.read_text("utf-8")
        except FileNotFoundError:
            raise InputError(f"{where}: no such file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{where}: cannot be read ({type(exc).__name__})") from None
    cases: list[GateCase] = []
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            document = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{where}, line {number}: not JSON ({exc.msg})") from None
        case = validate_document(GateCase, document, where=f"{where}, line {number}")
        if case.id in seen:
            raise InputError(f"{where}, line {number}: id {case.id!r} appears twice")
        seen.add(case.id)
        cases.append(case)
    if not cases:
        raise InputError(f"{where}: no cases")
    return cases


async def run_gate_bench(path: Path | None = None) -> GateBenchReport:
    """The benchmark of the cases in ``path`` (the bundled set when None).

    Raises:
        InputError: As :func:`load_gate_cases`.
    """
    return await bench_gate(load_gate_cases(path))
