"""What the jury commands share: the roster, the cases, judging and recording.

Kept apart from :mod:`arbiter.cli.jury` (the commands) and
:mod:`arbiter.cli.jury_render` (the printing) so each stays small.
"""

from __future__ import annotations

import asyncio
import difflib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from arbiter.cli.common import progress_bar
from arbiter.config import Settings
from arbiter.contract import Case, Verdict
from arbiter.errors import InputError
from arbiter.jury.audit import write_artifact
from arbiter.jury.cases import bundled_cases_path, load_cases
from arbiter.jury.critics import DEFAULT_ROSTER, CriticSpec
from arbiter.jury.jury import Jury
from arbiter.jury.synthesis import severity
from arbiter.providers.registry import PROVIDER_NAMES
from arbiter.store.jury_repository import (
    JuryRunKind,
    JuryRunStatus,
    create_jury_run,
    finish_jury_run,
    save_judgment,
)
from arbiter.store.repository import Store

__all__ = [
    "Recorder",
    "build_roster",
    "group_key",
    "judge_all",
    "judge_and_store",
    "load_case_files",
    "load_roster",
    "select_cases",
    "verdict_exit_code",
]


def build_roster(
    provider: str | None = None, model: str | None = None, roster: Path | None = None
) -> list[CriticSpec]:
    """The critics: the default three lenses, moved onto ``provider``/``model``, or a file.

    Raises:
        InputError: An unknown provider, a bad roster file, or --roster mixed with
            --provider/--model.
    """
    if roster is not None:
        if provider or model:
            raise InputError("--roster and --provider/--model are exclusive; give one")
        return load_roster(roster)
    if provider is not None and provider not in PROVIDER_NAMES:
        raise InputError(
            f"The '--provider' option must be one of {', '.join(PROVIDER_NAMES)}. "
            f"Got {provider!r} instead."
        )
    if provider not in (None, "mock") and not model:
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
    if not path.is_file():
        raise InputError(f"{path}: no such roster file")
    try:
        items = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: not a JSON roster: {exc}") from None
    if not isinstance(items, list) or not items:
        raise InputError(f"{path}: a roster must be a non-empty JSON list of critic specs")
    specs = []
    for i, item in enumerate(items):
        try:
            spec = CriticSpec.model_validate(item)
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            field = ".".join(str(part) for part in first["loc"]) or "(root)"
            raise InputError(f"{path}: [{i}].{field}: {first['msg']}") from None
        if spec.provider not in PROVIDER_NAMES:
            known = ", ".join(PROVIDER_NAMES)
            raise InputError(f"{path}: [{i}].provider: {spec.provider!r} is not one of {known}")
        specs.append(spec)
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        twice = next(n for n in names if names.count(n) > 1)
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


async def judge_all(
    jury: Jury,
    cases: Sequence[Case],
    *,
    concurrency: int,
    on_done: Callable[[Case, Verdict], None] | None = None,
) -> list[Verdict]:
    """Judge every case, ``concurrency`` at a time; verdicts come back in case order."""
    gate = asyncio.Semaphore(concurrency)

    async def one(case: Case) -> Verdict:
        async with gate:
            verdict = await jury.judge_async(case)
        if on_done is not None:
            on_done(case, verdict)
        return verdict

    return list(await asyncio.gather(*(one(case) for case in cases)))


class Recorder:
    """Stores each judgment as it completes and writes its audit artifact."""

    def __init__(self, store: Store, run_id: str, audit_dir: Path | None) -> None:
        self.store, self.run_id, self.audit_dir = store, run_id, audit_dir

    def __call__(self, case: Case, verdict: Verdict) -> None:
        """Store one judgment and, if auditing, write its artifact."""
        save_judgment(self.store, self.run_id, case, verdict)
        if self.audit_dir is not None:
            write_artifact(self.audit_dir, self.run_id, case, verdict)

    def where(self) -> str:
        """One line saying where the judgments went."""
        trail = f"; audit: {self.audit_dir / self.run_id}" if self.audit_dir else ""
        return f"stored as jury run {self.run_id} in {self.store.describe()}{trail}"


def judge_and_store(
    store: Store,
    kind: JuryRunKind,
    roster: Sequence[CriticSpec],
    cases: Sequence[Case],
    *,
    config: dict[str, Any],
    audit: bool,
    concurrency: int,
    progress: str | None = None,
) -> tuple[str, list[Verdict], Recorder]:
    """Create a jury run, judge every case into it, and close it.

    Each judgment is stored (and its artifact written) as soon as it is made, so an
    interrupted run keeps what it finished.

    Args:
        store: The store.
        kind: What kind of run this is.
        roster: The critics.
        cases: The cases.
        config: Options to keep with the run.
        audit: Write an artifact per judgment under ``Settings().home / "audit"``.
        concurrency: Cases judged at once.
        progress: Description of a progress bar on stderr, or None for none.

    Returns:
        The run id, the verdicts in case order, and the recorder (for ``where()``).
    """
    run_id = create_jury_run(store, kind=kind, roster=roster, n_cases=len(cases), config=config)
    recorder = Recorder(store, run_id, Settings().home / "audit" if audit else None)
    jury = Jury(roster)
    status: JuryRunStatus = "failed"
    try:
        with progress_bar(progress or "", enabled=progress is not None) as update:
            done = 0

            def on_done(case: Case, verdict: Verdict) -> None:
                nonlocal done
                recorder(case, verdict)
                done += 1
                update(done, len(cases))

            verdicts = asyncio.run(judge_all(jury, cases, concurrency=concurrency, on_done=on_done))
        status = "completed"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        finish_jury_run(store, run_id, status)
    return run_id, verdicts, recorder


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
    is not a pass, DESIGN.md's exit codes), else 0.
    """
    worst = max(severity(v.decision) for v in verdicts)
    return max(worst, 1 if any(v.escalate for v in verdicts) else 0)
