"""The jury as library functions: choose the critics and cases, judge and store, replay.

Every judgment is stored (a row per critique, one per verdict) the moment it is made,
and, with an audit folder, written as one artifact; an interrupted batch keeps what it
finished. Nothing here prints or starts an event loop.
"""

from __future__ import annotations

import asyncio
import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from arbiter.config import Settings
from arbiter.contract import (
    Case,
    Judgment,
    JuryRunInfo,
    JuryRunKind,
    JuryRunStatus,
    ModelCalls,
    Verdict,
)
from arbiter.datasets.jsonio import read_json_file
from arbiter.errors import InputError
from arbiter.judging import JudgingContext, describe_calls
from arbiter.jury.audit import VerdictChange, replay_judgment, write_artifact
from arbiter.jury.cases import bundled_cases_path, load_cases
from arbiter.jury.critics import DEFAULT_ROSTER, CriticSpec
from arbiter.jury.jury import Jury
from arbiter.jury.offline import OFFLINE_PROVIDER
from arbiter.jury.synthesis import severity
from arbiter.service.attestation import CONFIGURED, Signer, attest_verdict, resolve_signer
from arbiter.store import Store
from arbiter.store.jury_repository import (
    check_jury_fits,
    create_jury_run,
    finish_jury_run,
    get_jury_run,
    latest_jury_run,
    load_judged_cases,
    load_judgments,
    save_judgment,
)
from arbiter.validation import describe_validation_error

__all__ = [
    "JudgedBatch",
    "build_roster",
    "group_key",
    "judge_cases",
    "load_case_files",
    "load_roster",
    "replay_run",
    "select_cases",
    "verdict_exit_code",
]

OnJudged = Callable[[Case, Verdict], None]


def _provider_names() -> tuple[str, ...]:
    from arbiter.providers.registry import ProviderRegistry

    return ProviderRegistry.default().names()


def build_roster(
    provider: str | None = None, model: str | None = None, roster: Path | None = None
) -> list[CriticSpec]:
    """The critics: the default three lenses, moved onto ``provider``/``model``, or a file.

    Raises:
        InputError: An unknown provider, a bad roster file, or a roster mixed with a
            provider or model.
    """
    if roster is not None:
        if provider or model:
            raise InputError("--roster and --provider/--model are exclusive; give one")
        return load_roster(roster)
    if provider is not None:
        names = _provider_names()
        if provider not in names:
            raise InputError(
                f"The '--provider' option must be one of {', '.join(names)}. "
                f"Got {provider!r} instead."
            )
    if provider not in (None, OFFLINE_PROVIDER) and not model:
        raise InputError(f"--provider {provider} needs --model: the model every critic runs on")
    update: dict[str, str] = {}
    if provider:
        update["provider"] = provider
    if model:
        update["model"] = model
    return [spec.model_copy(update=update) for spec in DEFAULT_ROSTER]


def load_roster(path: Path) -> list[CriticSpec]:
    """A roster file: a JSON list of ``CriticSpec`` objects with unique names.

    Raises:
        InputError: The file is missing, not JSON, empty, or a spec is invalid; the
            message names the file, the item and the field.
    """
    items = read_json_file(path, what="roster")
    if not isinstance(items, list) or not items:
        raise InputError(f"{path}: a roster must be a non-empty JSON list of critic specs")
    names = _provider_names()
    specs = []
    for i, item in enumerate(items):
        try:
            spec = CriticSpec.model_validate(item)
        except ValidationError as exc:
            reason = describe_validation_error(exc, CriticSpec)
            raise InputError(f"{path}: [{i}]: {reason}") from None
        if spec.provider not in names:
            known = ", ".join(names)
            raise InputError(
                f"{path}: [{i}]: field 'provider': {spec.provider!r} is not one of {known}"
            )
        try:
            check_jury_fits([spec.model_dump(mode="json")], [])
        except InputError as exc:
            raise InputError(f"{path}: [{i}]: {str(exc).partition(': ')[2]}") from None
        specs.append(spec)
    given = [s.name for s in specs]
    if len(set(given)) != len(given):
        twice = next(n for n in given if given.count(n) > 1)
        raise InputError(f"{path}: critic name {twice!r} appears twice; names must be unique")
    return specs


def load_case_files(paths: Sequence[Path] | None) -> list[Case]:
    """Every case of every file, in order (the bundled cases when none is given).

    Raises:
        InputError: A file is invalid, or an id occurs in two files.
    """
    cases: list[Case] = []
    origin: dict[str, Path] = {}
    for path in paths or [bundled_cases_path()]:
        for case in load_cases(path):
            if case.id in origin:
                raise InputError(
                    f"{path}: duplicate case id {case.id!r} (also in {origin[case.id]})"
                )
            origin[case.id] = path
            cases.append(case)
    return cases


def select_cases(
    case_id: str | None,
    file: Path | None,
    texts: tuple[str | None, str | None, str | None],
    cases_path: Path | None,
) -> list[Case]:
    """The cases ``arbiter judge`` was asked to judge: by id, a whole file, or literal texts.

    Args:
        case_id: ``--case``: the id of a case in ``cases_path``.
        file: ``--file``: every case of this JSONL file.
        texts: ``--task``, ``--context`` and ``--output``; the case is called ``cli``.
        cases_path: ``--cases``: where ``case_id`` is looked up (default: the bundled cases).

    Raises:
        InputError: Not exactly one way was given, the texts are incomplete, or the
            id is unknown (close ids are suggested).
    """
    given = sum([case_id is not None, file is not None, any(t is not None for t in texts)])
    if given != 1:
        raise InputError("give one of --case ID, --file CASES.jsonl, or --task/--context/--output")
    if file is not None:
        return load_cases(file)
    if case_id is not None:
        path = cases_path or bundled_cases_path()
        cases = {c.id: c for c in load_cases(path)}
        if case_id not in cases:
            close = difflib.get_close_matches(case_id, list(cases), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise InputError(f"{path}: no case with id {case_id!r}{hint}")
        return [cases[case_id]]
    task, context, output = texts
    if task is None or context is None or output is None:
        raise InputError("--task, --context and --output go together; give all three")
    return [Case(id="cli", task=task, context=context, output=output)]


@dataclass(frozen=True)
class JudgedBatch:
    """A stored batch of judgments."""

    run_id: str
    """The jury run's id."""
    verdicts: list[Verdict]
    """The verdicts, in case order."""
    store: str
    """Where they were stored (the store's URL, password hidden)."""
    audit_dir: Path | None
    """The folder holding one artifact per judgment, or None."""

    @property
    def calls(self) -> ModelCalls:
        """Every critic's model call of the batch, summed (none for offline critics)."""
        total = ModelCalls()
        for verdict in self.verdicts:
            total = total + verdict.model_calls()
        return total

    def usage(self) -> str | None:
        """One line: the batch's model calls, tokens and cost; None when no critic asked
        a model (the offline detectors)."""
        calls = self.calls
        return f"model calls: {describe_calls(calls)}" if calls.calls else None

    def where(self) -> str:
        """One line saying where the judgments went."""
        trail = f"; audit: {self.audit_dir}" if self.audit_dir else ""
        return f"stored as jury run {self.run_id} in {self.store}{trail}"


async def judge_cases(
    store: Store,
    kind: JuryRunKind,
    roster: Sequence[CriticSpec],
    cases: Sequence[Case],
    *,
    config: dict[str, Any],
    audit_root: Path | None,
    concurrency: int,
    on_judged: OnJudged | None = None,
    jury: Jury | None = None,
    signer: Signer = CONFIGURED,
    settings: Settings | None = None,
    use_cache: bool = True,
) -> JudgedBatch:
    """Create a jury run, judge every case into it as it completes, and close it.

    Args:
        store: The store.
        kind: What kind of run this is.
        roster: The critics.
        cases: The cases.
        config: Options to keep with the run.
        audit_root: Folder of audit artifacts (``ARBITER_HOME/audit`` at the command
            line); the run's artifacts go in a folder named after its id. None: none.
        concurrency: Cases judged at once.
        on_judged: Called with each case and verdict once stored.
        jury: The jury to use (default: one on ``roster``, its critics asking through a
            judging context of ``settings``, closed at the end).
        signer: Who signs each stored verdict (default: the configured key, if any).
        settings: Keys, URLs and the cache's place for the default jury; None: the
            environment's.
        use_cache: Whether the default jury's model calls may be answered from the
            model-call cache (off for repeated samples of one critic).

    Returns:
        The run id, the verdicts in case order, and where they went.

    Raises:
        InputError: A case id, or a critic's name or model, is longer than the store
            keeps (checked before anything is stored).
    """
    key = resolve_signer(signer)  # a key that cannot be read fails before anything is stored
    specs = [spec.model_dump(mode="json") for spec in roster]
    check_jury_fits(specs, cases)  # a column too short fails here, not half-way
    run_id = create_jury_run(
        store,
        kind=kind,
        roster=specs,
        n_cases=len(cases),
        config=config,
    )
    audit_dir = audit_root / run_id if audit_root is not None else None

    def record(case: Case, verdict: Verdict) -> None:
        save_judgment(store, run_id, case, verdict)
        if key is not None:
            attest_verdict(store, run_id, case, verdict, roster=specs, signer=key)
        if audit_root is not None:
            write_artifact(audit_root, run_id, case, verdict)
        if on_judged is not None:
            on_judged(case, verdict)

    own = jury is None
    if jury is None:
        jury = Jury(roster, context=JudgingContext(settings=settings, use_cache=use_cache))
    status: JuryRunStatus = "failed"
    try:
        verdicts = await jury.judge_many(cases, concurrency=concurrency, on_done=record)
        status = "completed"
    except (KeyboardInterrupt, asyncio.CancelledError):
        status = "interrupted"
        raise
    finally:
        if own:
            await jury.aclose()
            await jury.context.aclose()
        finish_jury_run(store, run_id, status)
    return JudgedBatch(
        run_id=run_id, verdicts=verdicts, store=store.describe(), audit_dir=audit_dir
    )


def replay_run(
    store: Store, run_id: str | None = None
) -> tuple[JuryRunInfo, list[Judgment], list[VerdictChange]]:
    """Re-synthesize a stored jury run's critiques with the current code.

    Args:
        store: The store.
        run_id: The run (a unique prefix is enough); None: the latest.

    Returns:
        The run's header, its judgments, and every verdict that came out differently.

    Raises:
        InputError: There is no jury run yet.
        StoreError: No run matches ``run_id``.
    """
    if run_id is None:
        info = latest_jury_run(store)
        if info is None:
            raise InputError(
                f"no jury runs in {store.describe()}; judge something first: "
                "arbiter judge --case clean_01"
            )
    else:
        info = get_jury_run(store, run_id)
    judgments = load_judgments(store, info.id)
    by_id = {c.id: c for c in load_judged_cases(store, info.id)}
    changes = [
        change
        for j in judgments
        if (change := replay_judgment(by_id[j.case_id], j.outcomes, j.verdict)) is not None
    ]
    return info, judgments, changes


def group_key(field: str) -> Callable[[Case], list[str]]:
    """The grouping of ``--by``: a dotted case field; a list value puts a case in each group.

    A missing or null value groups the case under ``(none)``.

    Raises:
        InputError: The first part of ``field`` is not a field of ``Case``.
    """
    head, *rest = field.split(".")
    if head not in Case.model_fields:
        known = ", ".join(sorted(Case.model_fields))
        raise InputError(f"--by {field}: {head!r} is not a case field ({known})")

    def key(case: Case) -> list[str]:
        value: Any = case.model_dump(mode="json", include={head})[head]
        for part in rest:
            value = value.get(part) if isinstance(value, dict) else None
        if isinstance(value, list):
            return [str(v) for v in value]
        return ["(none)" if value is None else str(value)]

    return key


def verdict_exit_code(verdicts: Sequence[Verdict]) -> int:
    """The exit code of ``arbiter judge``: the most severe verdict wins.

    2 for a REJECT, 1 for a REVISE or any escalation (an ACCEPT a human should check
    is not a pass: docs/architecture.md §Exit codes), else 0.
    """
    worst = max(severity(v.decision) for v in verdicts)
    return max(worst, 1 if any(v.escalate for v in verdicts) else 0)
