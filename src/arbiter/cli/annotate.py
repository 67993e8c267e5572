"""``arbiter annotate`` and ``arbiter annotations``: give human labels, and read them back.

A label is on one item and dimension: ``--agree`` / ``--disagree`` with the judge ruling
you saw (``--judge NAME --verdict pass|fail|unknown``, frozen as given), or a direct
``--pass`` / ``--fail``. ``--file`` imports a JSONL file of annotations instead, every
line checked before any is stored. The work is :mod:`arbiter.service.annotations`'s;
this module parses and prints. Labels made here have no owner (the server's carry the
API key's id).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from arbiter.cli.app import app
from arbiter.cli.common import echo_json, open_store, out_console

if TYPE_CHECKING:
    from arbiter.contract import Annotation, AnnotationLabel

__all__ = ["annotate", "list_labels"]


def _default_annotator() -> str:
    import getpass

    try:
        return getpass.getuser() or "cli"
    except (OSError, KeyError):  # no login name in the environment or the user database
        return "cli"


def _label(agree: bool, disagree: bool, passed: bool, failed: bool) -> AnnotationLabel | None:
    from arbiter.errors import InputError

    flags: tuple[tuple[AnnotationLabel, bool], ...] = (
        ("agree", agree),
        ("disagree", disagree),
        ("pass", passed),
        ("fail", failed),
    )
    chosen = [label for label, given in flags if given]
    if len(chosen) > 1:
        named = ", ".join(f"--{label}" for label in chosen)
        raise InputError(f"annotate: give one label, not {named}")
    return chosen[0] if chosen else None


@app.command("annotate")
def annotate(
    item: Annotated[
        str | None, typer.Argument(help="The scored item's id (an example, a turn, a case).")
    ] = None,
    dimension: Annotated[
        str | None, typer.Argument(help="What was judged (groundedness, scope, ...).")
    ] = None,
    agree: Annotated[
        bool, typer.Option("--agree", help="You agree with the ruling shown.")
    ] = False,
    disagree: Annotated[
        bool, typer.Option("--disagree", help="You disagree with the ruling shown.")
    ] = False,
    passed: Annotated[bool, typer.Option("--pass", help="Your own label: it passes.")] = False,
    failed: Annotated[bool, typer.Option("--fail", help="Your own label: it fails.")] = False,
    judge: Annotated[
        str | None, typer.Option(help="The judge whose ruling you saw (its scorer name).")
    ] = None,
    verdict: Annotated[
        str | None, typer.Option(help="The ruling you saw: pass, fail or unknown.")
    ] = None,
    score: Annotated[float | None, typer.Option(help="The judge's score you saw.")] = None,
    annotator: Annotated[
        str | None, typer.Option(help="Who labels (default: your login name).")
    ] = None,
    note: Annotated[str, typer.Option("--note", help="A comment kept with the label.")] = "",
    propagated: Annotated[
        bool, typer.Option("--propagated", help="The label is second-hand, copied from elsewhere.")
    ] = False,
    file: Annotated[
        Path | None,
        typer.Option("--file", help="Import a JSONL file of annotations (one object a line)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print what was stored as JSON.")] = False,
) -> None:
    """Store a human label on a judged item: agree / disagree with a ruling, or pass / fail.

    A label with the ruling you saw (--judge and --verdict) is calibration evidence for
    `arbiter calibrate --store`; a label without one is a note.
    """
    from arbiter.errors import InputError
    from arbiter.service.annotations import annotate as store_label
    from arbiter.service.annotations import import_annotations

    label = _label(agree, disagree, passed, failed)
    if file is not None:
        extra = [item, dimension, label, judge, verdict, score, note or None]
        if any(value is not None for value in extra) or propagated:
            raise InputError("annotate: --file takes the labels from the file; give no others")
        stored = import_annotations(open_store(), file, annotator=annotator or _default_annotator())
        _report(stored, f"from {file}", as_json)
        return
    if item is None or dimension is None:
        raise InputError("annotate: give ITEM and DIMENSION, or --file FILE")
    if label is None:
        raise InputError("annotate: give one of --agree, --disagree, --pass, --fail")
    if (judge is None) != (verdict is None):
        raise InputError("annotate: the ruling you saw takes both --judge NAME and --verdict")
    if score is not None and judge is None:
        raise InputError("annotate: --score is the judge's: give --judge and --verdict too")
    if label in ("agree", "disagree") and judge is None:
        raise InputError(
            f"annotate: --{label} is about the ruling you saw: give --judge NAME "
            "--verdict pass|fail|unknown"
        )
    ruling = None if judge is None else {"judge": judge, "verdict": verdict, "score": score}
    annotation = store_label(
        open_store(),
        item,
        dimension,
        label,
        annotator or _default_annotator(),
        ruling=ruling,
        propagated=propagated,
        comment=note,
    )
    _report([annotation], "", as_json)


def _describe(annotation: Annotation) -> str:
    from arbiter import escape

    def text(value: object, limit: int = 80) -> str:
        return escape.terminal(value, single_line=True, limit=limit)

    key = f"{text(annotation.item_id)} / {text(annotation.dimension)}"
    ruling = annotation.ruling
    if ruling is None:
        said = f"{annotation.label} (a note: no ruling shown, not calibration evidence)"
    elif annotation.label in ("agree", "disagree"):
        said = f"{annotation.label} with {text(ruling.judge)}'s {ruling.verdict!r}"
    else:
        said = f"{annotation.label} (ruling shown: {text(ruling.judge)}'s {ruling.verdict!r})"
    return f"{key}: {said}, by {text(annotation.annotator)}"


def _report(stored: list[Annotation], source: str, as_json: bool) -> None:
    if as_json:
        echo_json([a.model_dump(mode="json") for a in stored])
        return
    console = out_console()
    notes = sum(a.is_note for a in stored)
    if len(stored) == 1 and not source:
        lines = [f"stored: {_describe(stored[0])}"]
    else:
        from arbiter import escape

        where = escape.terminal(source, single_line=True)
        lines = [
            f"stored {len(stored)} annotations {where}: "
            f"{len(stored) - notes} on a ruling shown, {notes} {'note' if notes == 1 else 'notes'}"
        ]
    for line in lines:
        console.print(line, markup=False, highlight=False, soft_wrap=True)


@app.command("annotations")
def list_labels(
    item: Annotated[str | None, typer.Option(help="Only labels on this item.")] = None,
    dimension: Annotated[str | None, typer.Option(help="Only labels of this dimension.")] = None,
    judge: Annotated[str | None, typer.Option(help="Only labels about this judge.")] = None,
    history: Annotated[
        bool, typer.Option("--history", help="Every label given, not only each one's latest.")
    ] = False,
    limit: Annotated[int, typer.Option(min=1, help="At most this many, the newest.")] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="Print them as JSON.")] = False,
) -> None:
    """List the human labels in the store: the latest per item, dimension and annotator."""
    from arbiter.service.annotations import list_annotations

    found = list_annotations(
        open_store(),
        item=item,
        dimension=dimension,
        judge=judge,
        latest=not history,
        everyone=True,
        limit=limit,
    )
    if as_json:
        echo_json([a.model_dump(mode="json") for a in found])
        return
    console = out_console()
    if not found:
        console.print("no annotations", markup=False, highlight=False)
    for annotation in found:
        when = annotation.created_at.strftime("%Y-%m-%d %H:%M")
        line = f"{when}  {_describe(annotation)}"
        if annotation.comment:
            from arbiter import escape

            line += f"  ({escape.terminal(annotation.comment, single_line=True, limit=120)})"
        console.print(line, markup=False, highlight=False, soft_wrap=True)
