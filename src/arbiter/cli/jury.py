"""``arbiter judge`` and ``arbiter jury eval | baseline | replay``.

Every judgment is stored (a row per critique, one per verdict) the moment it is made;
``judge`` and ``jury eval`` also write one audit artifact per judgment under
``ARBITER_HOME/audit/<run_id>/``. The work is :mod:`arbiter.service.jury`'s; this module
parses and prints.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from arbiter.cli.app import app
from arbiter.cli.common import (
    echo_json,
    note,
    open_store,
    out_console,
    read_argument_file,
    settings,
)

if TYPE_CHECKING:
    from arbiter.contract import Case, JuryRunKind
    from arbiter.jury.critics import CriticSpec
    from arbiter.service.jury import JudgedBatch

__all__ = ["baseline", "demo_jury", "eval_", "judge", "jury_app", "replay"]

jury_app = typer.Typer(
    name="jury",
    help="Measure the jury itself: evaluate it on labelled cases, test its diversity, replay.",
    no_args_is_help=True,
)
app.add_typer(jury_app, name="jury")

ProviderOpt = Annotated[
    str | None,
    typer.Option(
        help="Put every critic on this provider (mock, openai, llama_cpp, ollama, anthropic, "
        "gemini, or a plugin's)."
    ),
]
ModelOpt = Annotated[str | None, typer.Option(help="Model for every critic (with --provider).")]
RosterOpt = Annotated[
    Path | None, typer.Option(help="JSON list of critic specs (name, lens, provider, model, ...).")
]
ConcurrencyOpt = Annotated[
    int | None, typer.Option(min=1, help="Cases judged at once (default: ARBITER_CONCURRENCY).")
]
CasesOpt = Annotated[
    list[Path] | None,
    typer.Option("--cases", help="Case file(s), JSONL (default: the bundled labelled cases)."),
]


def _text(value: str | None, option: str) -> str | None:
    """An option's text, read from the file it names with ``@path``; valid Unicode only."""
    from arbiter.errors import InputError

    if value is None:
        return None
    text = read_argument_file(value, option)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:  # undecodable bytes on the command line
        raise InputError(
            f"{option}: not valid UTF-8 text (character {exc.start + 1}); pass it as a UTF-8 "
            f"file with {option} @path"
        ) from None
    return text


def _judge(
    kind: JuryRunKind,
    roster: list[CriticSpec],
    cases: list[Case],
    *,
    config: dict[str, Any],
    audit: bool,
    concurrency: int | None,
    progress: str | None = None,
    use_cache: bool = True,
) -> JudgedBatch:
    from arbiter.cli.common import progress_bar
    from arbiter.errors import Interrupted
    from arbiter.service.jury import judge_cases

    options = settings()
    store = open_store(options)
    try:
        with progress_bar(progress or "", enabled=progress is not None) as bar:
            done = 0

            def judged(case: Case, verdict: object) -> None:
                nonlocal done
                done += 1
                bar(done, len(cases))

            try:
                return asyncio.run(
                    judge_cases(
                        store,
                        kind,
                        roster,
                        cases,
                        config=config,
                        audit_root=options.home / "audit" if audit else None,
                        concurrency=concurrency or options.concurrency,
                        on_judged=judged,
                        settings=options,
                        use_cache=use_cache,
                    )
                )
            except KeyboardInterrupt:
                raise Interrupted(
                    f"after {done}/{len(cases)} judgments, each stored as it was made"
                ) from None
    finally:
        store.close()


# --------------------------------------------------------------------------- commands


@app.command()
def judge(
    case: Annotated[str | None, typer.Option("--case", help="Id of a case in --cases.")] = None,
    file: Annotated[Path | None, typer.Option(help="Judge every case of a JSONL file.")] = None,
    task: Annotated[str | None, typer.Option(help="What the LLM was asked (or @file).")] = None,
    context: Annotated[
        str | None, typer.Option(help="The source it must be faithful to (or @file).")
    ] = None,
    output: Annotated[str | None, typer.Option(help="The output to judge (or @file).")] = None,
    cases: Annotated[
        Path | None, typer.Option("--cases", help="Where --case looks (default: bundled cases).")
    ] = None,
    provider: ProviderOpt = None,
    model: ModelOpt = None,
    roster: RosterOpt = None,
    concurrency: ConcurrencyOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the verdicts as JSON.")] = False,
    no_audit: Annotated[bool, typer.Option("--no-audit", help="Write no audit file.")] = False,
) -> None:
    """Judge one output with the jury; exit 0 ACCEPT, 1 REVISE or ESCALATE, 2 REJECT."""
    from arbiter.cli import jury_render as render
    from arbiter.service.jury import build_roster, select_cases, verdict_exit_code

    texts = (_text(task, "--task"), _text(context, "--context"), _text(output, "--output"))
    selected = select_cases(case, file, texts, cases)
    critics = build_roster(provider, model, roster)
    config = {"provider": provider, "model": model, "source": str(file or cases or "")}
    judged = _judge(
        "judge", critics, selected, config=config, audit=not no_audit, concurrency=concurrency
    )
    if as_json:
        echo_json(
            {
                "run_id": judged.run_id,
                "judgments": [
                    {"case_id": c.id, "verdict": v.model_dump(mode="json")}
                    for c, v in zip(selected, judged.verdicts, strict=True)
                ],
                "model": judged.calls.model_dump(mode="json"),
            }
        )
    else:
        for c, v in zip(selected, judged.verdicts, strict=True):
            render.judgment(out_console(), c, v, header=len(selected) > 1)
        if len(selected) > 1:
            render.judgment_summary(out_console(), selected, judged.verdicts)
    if (usage := judged.usage()) is not None:
        note(usage)
    note(judged.where())
    raise typer.Exit(verdict_exit_code(judged.verdicts))


@jury_app.command("eval")
def eval_(
    cases: CasesOpt = None,
    provider: ProviderOpt = None,
    model: ModelOpt = None,
    roster: RosterOpt = None,
    by: Annotated[
        str | None, typer.Option(help="Detection figures per group, e.g. metadata.domain.")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the ECE bootstrap.")] = 0,
    concurrency: ConcurrencyOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print every figure as JSON.")] = False,
    no_audit: Annotated[bool, typer.Option("--no-audit", help="Write no audit files.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Evaluate the jury on labelled cases; exit 1 when a calibration gate fails."""
    from arbiter.cli import jury_render as render
    from arbiter.errors import GateFailed
    from arbiter.jury.evaluation import evaluate_jury, group_detection
    from arbiter.service.jury import build_roster, group_key, load_case_files

    selected = load_case_files(cases)
    critics = build_roster(provider, model, roster)
    key = group_key(by) if by else None
    config = {"provider": provider, "model": model, "cases": [str(p) for p in cases or []]}
    judged = _judge(
        "eval",
        critics,
        selected,
        config=config,
        audit=not no_audit,
        concurrency=concurrency,
        progress=None if quiet else "jury eval",
    )
    verdicts = judged.verdicts
    evaluation = evaluate_jury(selected, [v.critiques for v in verdicts], seed=seed)
    groups = dict(group_detection(selected, verdicts, key)) if key else {}
    if as_json:
        echo_json(
            {
                "run_id": judged.run_id,
                "evaluation": evaluation.model_dump(mode="json"),
                "groups": {name: g.model_dump(mode="json") for name, g in groups.items()},
                "model": judged.calls.model_dump(mode="json"),
            }
        )
    else:
        render.evaluation(out_console(), evaluation, critics=[c.name for c in critics])
        if by:
            render.groups(out_console(), groups, by)
    if (usage := judged.usage()) is not None:
        note(usage)
    note(judged.where())
    if evaluation.gate_failures:
        raise GateFailed(f"{len(evaluation.gate_failures)} jury gate(s) failed")


@jury_app.command()
def baseline(
    cases: CasesOpt = None,
    provider: ProviderOpt = None,
    model: ModelOpt = None,
    roster: RosterOpt = None,
    k: Annotated[int, typer.Option("--k", min=2, help="Calls per case in each arm.")] = 3,
    critic: Annotated[
        str | None, typer.Option(help="The critic to sample k times (default: the first).")
    ] = None,
    concurrency: ConcurrencyOpt = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print both evaluations as JSON.")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """k samples of one critic against k different critics, at the same call budget."""
    from arbiter.cli import jury_render as render
    from arbiter.errors import InputError
    from arbiter.jury.evaluation import evaluate_jury
    from arbiter.service.jury import build_roster, load_case_files

    selected = load_case_files(cases)
    critics = build_roster(provider, model, roster)
    if len(critics) < k:
        raise InputError(f"--k {k}: the roster has only {len(critics)} critics to compare with")
    chosen = next((c for c in critics if c.name == critic), None) if critic else critics[0]
    if chosen is None:
        names = ", ".join(c.name for c in critics)
        raise InputError(f"--critic {critic}: no such critic in the roster ({names})")
    arms = {
        "samples": [chosen.model_copy(update={"name": f"sample-{i + 1}"}) for i in range(k)],
        "critics": critics[:k],
    }
    results = {}
    for arm, roster_of_arm in arms.items():
        config = {"arm": arm, "k": k, "provider": provider, "model": model}
        judged = _judge(
            "baseline",
            roster_of_arm,
            selected,
            config=config,
            audit=False,
            concurrency=concurrency,
            progress=None if quiet else f"baseline: {arm}",
            # k samples of one critic are k identical requests: each must reach the model.
            use_cache=False,
        )
        outcomes = [v.critiques for v in judged.verdicts]
        results[arm] = (judged.run_id, evaluate_jury(selected, outcomes), outcomes)
    identical = all(
        len({o.model_dump_json(include={"status", "critique"}) for o in row}) == 1
        for row in results["samples"][2]
    )
    calls = k * len(selected)
    if as_json:
        echo_json(
            {
                "k": k,
                "calls_per_arm": calls,
                "sampled_critic": chosen.name,
                "samples_identical": identical,
                **{
                    arm: {"run_id": run_id, "evaluation": e.model_dump(mode="json")}
                    for arm, (run_id, e, _) in results.items()
                },
            }
        )
        return
    render.baseline(
        out_console(),
        samples=results["samples"][1],
        critics=results["critics"][1],
        sampled=chosen.name,
        names=[c.name for c in arms["critics"]],
        calls=calls,
        identical=identical,
    )
    note(
        f"stored as jury runs {results['samples'][0]} (samples) and "
        f"{results['critics'][0]} (critics)"
    )


@jury_app.command()
def replay(
    run_id: Annotated[
        str | None, typer.Argument(help="Jury run id or prefix (default: the latest).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the changes as JSON.")] = False,
) -> None:
    """Re-synthesize a run's stored critiques; exit 1 listing every verdict that changed."""
    from arbiter.cli import jury_render as render
    from arbiter.service.jury import replay_run

    store = open_store()
    try:
        info, judgments, changes = replay_run(store, run_id)
    finally:
        store.close()
    if as_json:
        echo_json(
            {
                "run_id": info.id,
                "n_judgments": len(judgments),
                "changed": [c.model_dump(mode="json") for c in changes],
            }
        )
    else:
        render.replay(out_console(), info.id, info.kind, len(judgments), changes)
    raise typer.Exit(1 if changes else 0)


def demo_jury(case_ids: tuple[str, str] = ("clean_01", "multi_02")) -> None:
    """The jury part of ``arbiter demo``: the offline jury on a clean and a broken case."""
    from arbiter.cli import jury_render as render
    from arbiter.jury.cases import bundled_cases_path, load_cases
    from arbiter.jury.critics import DEFAULT_ROSTER

    bundled = {c.id: c for c in load_cases(bundled_cases_path())}
    selected = [bundled[i] for i in case_ids]
    judged = _judge(
        "judge",
        list(DEFAULT_ROSTER),
        selected,
        config={"source": "demo"},
        audit=True,
        concurrency=2,
    )
    render.demo(out_console(), selected, judged.verdicts)
    note(judged.where())
    note(
        f"  arbiter judge --case {case_ids[1]}   # the full table (exit 2: REJECT)\n"
        "  arbiter jury eval                # how good is the jury?\n"
        "  arbiter jury replay              # re-synthesize stored critiques"
    )
