"""The run pages: the runs table, one run, two runs compared, one jury verdict.

- ``/``: the runs, newest first, each with its primary figure and interval; filters by
  tag, system, dataset and status; two picked runs open the comparison;
- ``/runs/{id}``: the figures with their intervals, the confusion matrix as a heat map,
  per-cohort bars, a section per scorer, and the per-example table (failures first, a
  page at a time, each row opening to input, output, expected, scores and evidence);
- ``/compare?a=&b=``: metric deltas with paired intervals, per scorer and per cohort,
  and the flipped examples;
- ``/verdicts/{id}``: the judged output with each callout's quote highlighted in place,
  the critics' table, the decision, confidence, flip margin and why.

Routes read through the service layer (:mod:`arbiter.service.browse`, the functions the
REST API uses, and :mod:`arbiter.service.run_pages`) as the request's API key may see.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Annotated, Any, Literal, cast

from fastapi import APIRouter, Depends, Query, Request
from fastapi.security import HTTPAuthorizationCredentials
from fastapi.templating import Jinja2Templates
from starlette.background import BackgroundTask
from starlette.responses import Response

from arbiter.contract import RunStatus
from arbiter.errors import StoreError
from arbiter.harness.pairs import reason_of, shown_outcome, verdict_of
from arbiter.server import runs_view
from arbiter.server.auth import Principal, auth_gate, principal
from arbiter.server.deps import app_store, templates
from arbiter.server.errors import ApiError
from arbiter.server.pages_common import page_url, render
from arbiter.server.verdict_view import verdict_context
from arbiter.service.browse import (
    ResultFilter,
    RunFilter,
    find_verdict,
    list_runs,
    list_verdicts,
)
from arbiter.service.run_pages import (
    ExampleRow,
    ReportKeeper,
    compare_for_page,
    example_page,
    runs_to_compare,
)
from arbiter.store import Store

__all__ = ["router"]

router = APIRouter(include_in_schema=False)

StoreDep = Annotated[Store, Depends(app_store)]
TemplatesDep = Annotated[Jinja2Templates, Depends(templates)]


async def page_principal(request: Request, store: StoreDep) -> Principal | None:
    """The request's principal as the REST API reads it; None when it has no valid key
    (the page then says a key is needed, as a page rather than the API's JSON)."""
    given = request.headers.get("authorization", "")
    scheme, _, credentials = given.partition(" ")
    bearer = None
    if scheme.lower() == "bearer" and credentials:
        bearer = HTTPAuthorizationCredentials(scheme="Bearer", credentials=credentials.strip())
    try:
        key = request.headers.get("x-api-key")
        found: Any = principal(store, bearer, key, auth_gate(request))
        if inspect.isawaitable(found):  # the dependency may be a coroutine function
            found = await found
        request.state.page_principal = found  # the header's inbox count reads it
        return cast("Principal", found)
    except ApiError:
        return None


Who = Annotated[Principal | None, Depends(page_principal)]

RUNS_PER_PAGE = 25
EXAMPLES_PER_PAGE = 50
VERDICTS_SHOWN = 8
_STATUSES: tuple[RunStatus, ...] = ("completed", "running", "interrupted", "failed")


def keeper(request: Request) -> ReportKeeper:
    """The app's report keeper (made on first use)."""
    found = getattr(request.app.state, "report_keeper", None)
    if not isinstance(found, ReportKeeper):
        found = ReportKeeper()
        request.app.state.report_keeper = found
    return found


KeeperDep = Annotated[ReportKeeper, Depends(keeper)]


def _missing(request: Request, tpl: Jinja2Templates, what: str, message: str) -> Response:
    return render(
        request,
        tpl,
        "missing.html",
        {"nav": "runs", "what": what, "message": message},
        status_code=404,
    )


def _key_needed(request: Request, tpl: Jinja2Templates) -> Response:
    return render(
        request,
        tpl,
        "missing.html",
        {
            "nav": "runs",
            "what": "access",
            "title": "An API key is needed",
            "message": "This server has API keys: its pages answer requests that carry one "
            "(Authorization: Bearer <key> or X-API-Key), e.g. through a proxy that adds it.",
        },
        status_code=401,
    )


def _tags(values: list[str]) -> tuple[dict[str, str], list[str]]:
    tags, bad = {}, []
    for value in (part for given in values for part in given.replace(",", " ").split()):
        key, sep, tag = value.partition("=")
        if sep and key:
            tags[key] = tag
        elif value:
            bad.append(value)
    return tags, bad


@router.get("/", response_class=Response)
def runs_page(
    request: Request,
    store: StoreDep,
    tpl: TemplatesDep,
    who: Who,
    reports: KeeperDep,
    tag: Annotated[list[str], Query(max_length=20)] = [],  # noqa: B006
    system: Annotated[str | None, Query(max_length=200)] = None,
    dataset: Annotated[str | None, Query(max_length=200)] = None,
    status: Annotated[str | None, Query(max_length=20)] = None,
    page: Annotated[int, Query(ge=1, le=100_000)] = 1,
) -> Response:
    """The runs table."""
    if who is None:
        return _key_needed(request, tpl)
    tags, bad_tags = _tags(tag)
    chosen = status if status in _STATUSES else None
    where = RunFilter(
        tags=tags,
        system=system or None,
        dataset=dataset or None,
        status=chosen,
        viewer=who.viewer,
    )
    listing = list_runs(store, where, offset=(page - 1) * RUNS_PER_PAGE, limit=RUNS_PER_PAGE)
    views = reports.views(store, listing.items)
    verdicts = list_verdicts(store, viewer=who.viewer, offset=0, limit=VERDICTS_SHOWN)
    params = {"system": system, "dataset": dataset, "status": chosen}
    query = [("tag", t) for t in tag]
    response = render(
        request,
        tpl,
        "runs.html",
        {
            "nav": "runs",
            "views": views,
            "listing": listing,
            "verdicts": verdicts,
            "filters": {"tag": " ".join(tag), "system": system, "dataset": dataset},
            "tags": tag,
            "status": chosen,
            "statuses": _STATUSES,
            "bad_tags": bad_tags,
            "filtered": bool(tags or system or dataset or chosen),
            "pager": _pager("/", params, query, page, listing.total, RUNS_PER_PAGE),
            "primary": runs_view.primary_or_none,
            "system_text": runs_view.system_text,
            "run_title": runs_view.run_title,
        },
    )
    response.background = BackgroundTask(reports.start_pending)
    return response


def _edge_keys(rows: list[ExampleRow]) -> tuple[str, str] | None:
    """The keys of a page's first and last rows, when its listing has keys."""
    if not rows or rows[0].key is None or rows[-1].key is None:
        return None
    return rows[0].key, rows[-1].key


def _pager(
    path: str,
    params: Mapping[str, object | None],
    extra: list[tuple[str, str]],
    page: int,
    total: int,
    size: int,
    *,
    keys: tuple[str, str] | None = None,
) -> dict[str, object]:
    def link(number: int) -> str:
        cursor: dict[str, object | None] = {}
        if keys is not None and number > 1:  # the first page needs no key
            cursor = {"after": keys[1]} if number > page else {"before": keys[0]}
        url = page_url(path, {**params, "page": number if number > 1 else None, **cursor})
        if extra:
            joined = "&".join(f"{k}={runs_view.quoted(v)}" for k, v in extra)
            url += ("&" if "?" in url else "?") + joined
        return url

    first = (page - 1) * size
    return {
        "total": total,
        "shown_from": min(first + 1, total),
        "shown_to": min(first + size, total),
        "prev_url": link(page - 1) if page > 1 else None,
        "next_url": link(page + 1) if first + size < total else None,
    }


Show = Literal["all", "failing"]


@router.get("/runs/{run_id}", response_class=Response)
def run_page(
    request: Request,
    run_id: str,
    store: StoreDep,
    tpl: TemplatesDep,
    who: Who,
    reports: KeeperDep,
    show: Annotated[Show, Query()] = "all",
    scorer: Annotated[str | None, Query(max_length=200)] = None,
    page: Annotated[int, Query(ge=1, le=10_000_000)] = 1,
    after: Annotated[str | None, Query(max_length=300)] = None,
    before: Annotated[str | None, Query(max_length=300)] = None,
) -> Response:
    """One run: its figures, charts, scorer sections and per-example table.

    The pager's links carry the key of the row next to the page (``after``, ``before``),
    so a page that follows another is read from there rather than counted from the top.
    """
    if who is None:
        return _key_needed(request, tpl)
    try:
        view = reports.view(store, run_id, viewer=who.viewer)
    except StoreError as exc:
        return _missing(request, tpl, "run", str(exc))
    info = view.info
    scorer = scorer or None
    where = ResultFilter(failing=show == "failing", scorer=scorer, failures_first=True)
    examples = example_page(
        store,
        view,
        where,
        viewer=who.viewer,
        offset=(page - 1) * EXAMPLES_PER_PAGE,
        limit=EXAMPLES_PER_PAGE,
        after=after,
        before=before,
        sizes=reports.listing_sizes,
    )
    report = view.report or view.stale
    scorer_names = [spec.label for spec in report.scorers] if report is not None else []
    if not scorer_names and examples.items:
        scorer_names = [s.name for s in examples.items[0].row.scores]
    others = runs_to_compare(store, info, viewer=who.viewer)
    params = {"show": show if show != "all" else None, "scorer": scorer}
    rows = runs_view.scorer_rows(report, view.binary_scorers) if report is not None else []
    response = render(
        request,
        tpl,
        "run.html",
        {
            "nav": "runs",
            "view": view,
            "info": info,
            "report": report,
            "cards": runs_view.cards(report) if report is not None else [],
            "scorers": rows,
            "scorer_bars": runs_view.scorer_bars(rows),
            "cohorts": runs_view.cohort_rows(report) if report is not None else [],
            "labels": runs_view.label_sections(report) if report is not None else [],
            "examples": examples,
            "scorer_names": scorer_names,
            "binary": view.binary_scorers,
            "show": show,
            "scorer": scorer,
            "computing": reports.computing(info.id),
            "others": others,
            "pager": _pager(
                f"/runs/{info.id}",
                params,
                [],
                page,
                examples.total,
                EXAMPLES_PER_PAGE,
                keys=_edge_keys(examples.items),
            ),
            "tab_url": lambda s, sc=None: page_url(
                f"/runs/{info.id}", {"show": s if s != "all" else None, "scorer": sc}
            ),
            "system_text": runs_view.system_text,
            "run_title": runs_view.run_title,
            "verdict_of": verdict_of,
            "reason_of": reason_of,
            "shown_outcome": shown_outcome,
            "pretty": runs_view.pretty_json,
        },
    )
    response.background = BackgroundTask(reports.start_pending)
    return response


@router.get("/compare", response_class=Response)
def compare_page(
    request: Request,
    store: StoreDep,
    tpl: TemplatesDep,
    who: Who,
    a: Annotated[str, Query(max_length=40)] = "",
    b: Annotated[str, Query(max_length=40)] = "",
) -> Response:
    """Two runs compared: deltas with paired intervals, per cohort, the flips."""
    if who is None:
        return _key_needed(request, tpl)
    if not a or not b:
        return render(
            request,
            tpl,
            "missing.html",
            {
                "nav": "runs",
                "what": "comparison",
                "message": "Pick two runs to compare: /compare?a=RUN_A&b=RUN_B, or choose "
                "A and B in the runs table.",
            },
            status_code=400,
        )
    try:
        compared = compare_for_page(store, a, b, viewer=who.viewer)
    except StoreError as exc:
        return _missing(request, tpl, "run", str(exc))
    diff = compared.comparison.diff
    return render(
        request,
        tpl,
        "compare.html",
        {
            "nav": "runs",
            "c": compared,
            "diff": diff,
            "warnings": compared.comparison.warnings,
            "outcome_rows": runs_view.delta_rows(diff),
            "scorer_rows": [
                row for s in diff.scorers for row in runs_view.delta_rows(s, f"{s.name}: ")
            ],
            "cohort_rows": runs_view.cohort_delta_rows(compared.cohorts),
            "others": [
                other
                for other in runs_to_compare(store, compared.a, viewer=who.viewer)
                if other[0] != compared.a.id
            ],
            "system_text": runs_view.system_text,
            "run_title": runs_view.run_title,
        },
    )


@router.get("/verdicts/{verdict_id}", response_class=Response)
def verdict_page(
    request: Request, verdict_id: str, store: StoreDep, tpl: TemplatesDep, who: Who
) -> Response:
    """One jury verdict: the output with its quotes in place, the critics, the decision."""
    if who is None:
        return _key_needed(request, tpl)
    if not verdict_id.isdigit() or len(verdict_id) > 18:
        return _missing(request, tpl, "verdict", f"no verdict with id {verdict_id[:40]!r}")
    try:
        stored = find_verdict(store, int(verdict_id), viewer=who.viewer)
    except StoreError as exc:
        return _missing(request, tpl, "verdict", str(exc))
    return render(request, tpl, "verdict.html", {"nav": "runs", **verdict_context(stored)})
