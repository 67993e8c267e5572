"""The annotation queue and the calibration pages.

- ``GET /annotations``: judge rulings a page at a time (a cursor to the next page), each
  with the judged example's input, reference and output and Agree / Disagree buttons
  (keys: ``a`` agree, ``d`` disagree, ``j`` / ``k`` next and previous), the server's
  online judge rulings on ingested runs and the ambiguous tail (escalated items no judge
  decided; :mod:`arbiter.service.trust_queue`), and the latest labels given;
- ``POST /annotations``: one label, stored through
  :func:`arbiter.service.annotations.annotate` with the ruling *frozen* as it is stored
  now. The form carries the verdict the person saw; when the stored ruling no longer
  says that (it was re-scored meanwhile), nothing is stored and the page says so (409),
  so a label is never attached to a ruling nobody saw;
- ``GET /calibration`` and ``/calibration/{judge}``: per judge and dimension, kappa with
  its interval, agreement, precision / recall, n and the status
  (:func:`arbiter.service.calibration.calibrate_store`).

A form post from another site is refused (its ``Origin`` or ``Sec-Fetch-Site`` says
so). The annotator's name is remembered in a cookie, so it is typed once.
"""

from __future__ import annotations

from typing import Annotated, Literal
from urllib.parse import urlsplit

from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.templating import Jinja2Templates
from starlette.responses import RedirectResponse, Response

from arbiter.contract import Annotation
from arbiter.errors import InputError
from arbiter.judges.calibration import CalibrationReport
from arbiter.server.auth import Principal
from arbiter.server.deps import app_store, templates
from arbiter.server.judge_rulings import QueueCursor, find_ruling, judge_labels, queue_page
from arbiter.server.pages_agents import ScorerFacts, Who, key_needed
from arbiter.server.pages_common import page_url, render
from arbiter.server.runs_view import pretty_json
from arbiter.service.trust_queue import ambiguous_tail, recent_rulings
from arbiter.store import Store

__all__ = ["ANNOTATOR_COOKIE", "router", "same_site"]

router = APIRouter(include_in_schema=False)

StoreDep = Annotated[Store, Depends(app_store)]
TemplatesDep = Annotated[Jinja2Templates, Depends(templates)]

ANNOTATOR_COOKIE = "arbiter_annotator"
"""The cookie that remembers who is annotating."""
_JUDGE_MENU_RUNS = 1_000
"""Newest runs whose judges the queue's judge menu lists."""
_RECENT = 20
"""Latest labels the queue lists."""


def _annotator(request: Request) -> str:
    return (request.cookies.get(ANNOTATOR_COOKIE) or "").strip()[:200]


def same_site(request: Request) -> bool:
    """Whether a form post came from this server's own pages."""
    if request.headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
        return False
    origin = request.headers.get("origin")
    if origin is None or origin == "null":
        return origin is None
    return urlsplit(origin).netloc == request.headers.get("host", "")


def _visible_labels(store: Store, who: Principal) -> list[Annotation]:
    """The latest labels the key may see: its own, or every one for an admin (or an
    open server)."""
    from arbiter.service.annotations import list_annotations

    return list_annotations(store, owner=who.key_id, everyone=who.viewer is None)


def _problem(
    request: Request, tpl: Jinja2Templates, status: int, title: str, message: str, back: str
) -> Response:
    return render(
        request,
        tpl,
        "annotations_problem.html",
        {"nav": "annotations", "title": title, "message": message, "back": back},
        status_code=status,
    )


_ONLINE_SHOWN = 25
"""Online judge rulings, and items of each part of the ambiguous tail, the page shows."""


@router.get("/annotations")
def annotations_page(
    request: Request,
    store: StoreDep,
    tpl: TemplatesDep,
    who: Who,
    judge: Annotated[str | None, Query(max_length=200)] = None,
    show: Annotated[Literal["todo", "all"], Query()] = "todo",
    saved: Annotated[str | None, Query(max_length=400)] = None,
    cursor: Annotated[str | None, Query(max_length=2_000)] = None,
) -> Response:
    """The queue: judge rulings to agree or disagree with, a page at a time."""
    if who is None:
        return key_needed(request, tpl, "annotations")
    from arbiter.store.browse_repository import run_headers

    try:
        at = QueueCursor.decode(cursor) if cursor else None
    except InputError as exc:
        back = page_url("/annotations", {"judge": judge, "show": show})
        return _problem(request, tpl, 400, "Not a page of this queue", str(exc), back)
    facts = ScorerFacts()
    annotator = _annotator(request)
    labelled = _visible_labels(store, who)
    done = {
        (a.item_id, a.dimension)
        for a in labelled
        if show == "todo" and annotator and a.annotator == annotator
    }
    page = queue_page(store, facts.dimension, cursor=at, judge=judge, done=done, viewer=who.viewer)
    headers = run_headers(store, viewer=who.viewer, after=None, limit=_JUDGE_MENU_RUNS)
    every_judge = sorted(
        {j for _, config in headers for j in judge_labels(config)}
        | {r.judge for r in page.rulings}
        | ({judge} if judge else set())
    )
    mine = {
        (a.item_id, a.dimension): a.label
        for a in labelled
        if annotator and a.annotator == annotator
    }
    here = {"judge": judge, "show": show, "cursor": cursor}
    return render(
        request,
        tpl,
        "annotations.html",
        {
            "nav": "annotations",
            "page": page,
            "rulings": page.rulings,
            "judges": every_judge,
            "judge": judge,
            "show": show,
            "annotator": annotator,
            "mine": mine,
            "recent": list(reversed(labelled))[:_RECENT],
            "n_labels": len(labelled),
            "saved": saved,
            "first_page": cursor is not None,
            "first_url": page_url("/annotations", {"judge": judge, "show": show}),
            "next_url": page_url(
                "/annotations", {"judge": judge, "show": show, "cursor": page.next.encode()}
            )
            if page.next is not None
            else None,
            "back": page_url("/annotations", here),
            "pretty": pretty_json,
            "online_rulings": recent_rulings(store, viewer=who.viewer, limit=_ONLINE_SHOWN),
            "tail": ambiguous_tail(store, viewer=who.viewer, limit=_ONLINE_SHOWN),
        },
    )


@router.post("/annotations")
def annotate_page(
    request: Request,
    store: StoreDep,
    tpl: TemplatesDep,
    item: Annotated[str, Form(max_length=400)],
    judge: Annotated[str, Form(max_length=200)],
    shown: Annotated[Literal["pass", "fail", "unknown"], Form()],
    label: Annotated[Literal["agree", "disagree"], Form()],
    annotator: Annotated[str, Form(max_length=200)] = "",
    comment: Annotated[str, Form(max_length=10_000)] = "",
    back: Annotated[str, Form(max_length=2_000)] = "/annotations",
    who: Who = None,
) -> Response:
    """Store one label with the ruling frozen; back to the queue (303)."""
    from arbiter.service.annotations import annotate

    if who is None:
        return key_needed(request, tpl, "annotations")
    back = back if back.startswith("/annotations") else "/annotations"
    if not same_site(request):
        return _problem(
            request,
            tpl,
            403,
            "Refused",
            "A label can only be given from Arbiter's own pages.",
            back,
        )
    name = annotator.strip() or _annotator(request)
    if not name:
        return _problem(
            request, tpl, 400, "Who is labelling?", "Give your name to label a ruling.", back
        )
    ruling = find_ruling(store, item, judge, ScorerFacts().dimension, viewer=who.viewer)
    if ruling is None:
        return _problem(request, tpl, 404, "Not found", "No stored ruling of this judge.", back)
    if ruling.frozen.verdict != shown:
        message = (
            f"The ruling you saw ({shown}) is now {ruling.frozen.verdict}: it was scored again. "
            "Nothing was stored; look at the current ruling and label it."
        )
        return _problem(request, tpl, 409, "The ruling changed", message, back)
    try:
        annotate(
            store,
            ruling.item_id,
            ruling.dimension,
            label,
            name,
            ruling=ruling.frozen,
            owner=who.owner,
            comment=comment.strip(),
        )
    except InputError as exc:
        return _problem(request, tpl, 400, "Not stored", str(exc), back)
    separator = "&" if "?" in back else "?"
    target = f"{back}{separator}{page_url('', {'saved': f'{label}: {judge}'})[1:]}"
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(
        ANNOTATOR_COOKIE, name, max_age=365 * 24 * 3600, httponly=True, samesite="strict"
    )
    return response


@router.post("/annotations/annotator")
def annotator_page(
    request: Request,
    tpl: TemplatesDep,
    annotator: Annotated[str, Form(max_length=200)],
    back: Annotated[str, Form(max_length=2_000)] = "/annotations",
    who: Who = None,
) -> Response:
    """Remember who is labelling (a cookie); back to the queue (303)."""
    if who is None:
        return key_needed(request, tpl, "annotations")
    back = back if back.startswith("/annotations") else "/annotations"
    if not same_site(request):
        return _problem(
            request, tpl, 403, "Refused", "A name can only be set from Arbiter's own pages.", back
        )
    name = annotator.strip()
    response = RedirectResponse(back, status_code=303)
    if name:
        response.set_cookie(
            ANNOTATOR_COOKIE, name, max_age=365 * 24 * 3600, httponly=True, samesite="strict"
        )
    else:
        response.delete_cookie(ANNOTATOR_COOKIE)
    return response


def _calibration(store: Store, who: Principal, judge: str | None) -> CalibrationReport:
    """The judges calibrated on the labels the key may see: every label for an admin (or
    an open server), the key's own otherwise."""
    if who.viewer is None:
        from arbiter.service.calibration import calibrate_store

        return calibrate_store(store, judge=judge)
    from arbiter.judges.calibration import calibrate, pairs_from_annotations
    from arbiter.service.votes import with_vote_pairs

    labels = [a for a in _visible_labels(store, who) if judge is None or _judge_of(a) == judge]
    pairs, excluded = pairs_from_annotations(labels)
    pairs = with_vote_pairs(pairs, store, viewer=who.viewer, judge=judge)
    return calibrate(pairs, excluded=excluded)


def _judge_of(annotation: Annotation) -> str | None:
    return annotation.ruling.judge if annotation.ruling is not None else None


@router.get("/calibration")
def calibration_page(request: Request, store: StoreDep, tpl: TemplatesDep, who: Who) -> Response:
    """Every judge and dimension calibrated against the stored labels."""
    if who is None:
        return key_needed(request, tpl, "annotations")
    report = _calibration(store, who, None)
    return render(
        request,
        tpl,
        "calibration.html",
        {"nav": "annotations", "report": report, "judge": None},
    )


@router.get("/calibration/{judge:path}")
def judge_calibration_page(
    request: Request, judge: str, store: StoreDep, tpl: TemplatesDep, who: Who
) -> Response:
    """One judge: its calibration per dimension, and the labels behind it."""
    if who is None:
        return key_needed(request, tpl, "annotations")
    report = _calibration(store, who, judge)
    labels = [a for a in _visible_labels(store, who) if _judge_of(a) == judge]
    return render(
        request,
        tpl,
        "calibration.html",
        {
            "nav": "annotations",
            "report": report,
            "judge": judge,
            "labels": list(reversed(labels))[:100],
            "n_labels": len(labels),
        },
        status_code=200 if report.judges or labels else 404,
    )
