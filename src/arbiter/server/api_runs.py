"""REST: offline runs — the list with filters, one run's report, its results, a comparison.

Thin routes over :mod:`arbiter.service.browse`; the pages call the same functions.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Path, Query, Request
from pydantic import BaseModel

from arbiter.contract import PairResult, Report, RunInfo, RunStatus
from arbiter.harness.diff import RunDiff
from arbiter.server.auth import Principal, principal
from arbiter.server.deps import app_store
from arbiter.server.errors import ApiError, error_responses
from arbiter.server.pages_runs import KeeperDep
from arbiter.server.pagination import Page, PageParams, page_params
from arbiter.server.responses import ApiJSONResponse
from arbiter.service.browse import (
    ResultFilter,
    RunFilter,
    find_run,
    list_keyed_results,
    list_runs,
)
from arbiter.service.compare import compare_infos
from arbiter.service.run_pages import current_report
from arbiter.store import Store
from arbiter.store.result_pages import KeyedResult

__all__ = ["ComparisonOut", "RunOut", "router"]

router = APIRouter(prefix="/v1", tags=["runs"], default_response_class=ApiJSONResponse)

StoreDep = Annotated[Store, Depends(app_store)]
Who = Annotated[Principal, Depends(principal)]
Paging = Annotated[PageParams, Depends(page_params)]
_MAX_ROW = 2**63 - 1
"""No row id of a results table is larger (a database integer holds it)."""
RunId = Annotated[
    str, Path(min_length=1, max_length=40, description="A run id, or a unique prefix of one.")
]


class RunOut(BaseModel):
    """One run: its header and its report (kept in the store as the run stands)."""

    info: RunInfo
    """The run's header: dataset, system, options, status, tags."""
    report: Report
    """Every figure of the run, with its interval."""
    note: str | None
    """Why the run is not complete and how to finish it; null when it is."""


class ComparisonOut(BaseModel):
    """Two runs compared over the examples they share."""

    diff: RunDiff
    """The outcome and each common scorer compared, with paired intervals and the flips."""
    warnings: list[str]
    """What makes the comparison weaker than it looks (other data, k, scorers, ...)."""
    flip_texts: int | None = None
    """Flips of each list that carry their texts (answers, reference, reason); the others
    carry their example id alone. Null: every flip carries them."""


def _tags(values: list[str]) -> dict[str, str]:
    tags = {}
    for value in values:
        key, sep, tag = value.partition("=")
        if not sep or not key:
            raise ApiError(400, f"a tag filter reads key=value, got {value!r}", field="query.tag")
        tags[key] = tag
    return tags


@router.get("/runs", responses=error_responses(400, 401))
def runs(
    store: StoreDep,
    who: Who,
    page: Paging,
    tag: Annotated[
        list[str], Query(max_length=20, description="key=value; every one must hold.")
    ] = [],  # noqa: B006  (FastAPI copies a list default per request)
    system: Annotated[
        str | None, Query(max_length=200, description="Text in the system's description.")
    ] = None,
    dataset: Annotated[str | None, Query(max_length=200, description="The dataset's name.")] = None,
    status: Annotated[RunStatus | None, Query(description="The run's status.")] = None,
) -> Page[RunInfo]:
    """The offline runs the key may see, newest first, under the filters."""
    where = RunFilter(
        tags=_tags(tag), system=system, dataset=dataset, status=status, viewer=who.viewer
    )
    listing = list_runs(store, where, offset=page.offset, limit=page.limit)
    return Page[RunInfo](
        items=listing.items, total=listing.total, next=page.next_cursor(listing.total)
    )


@router.get("/compare", responses=error_responses(401, 404))
def compare(
    store: StoreDep,
    who: Who,
    a: Annotated[str, Query(min_length=1, max_length=40, description="The first run.")],
    b: Annotated[str, Query(min_length=1, max_length=40, description="The second run.")],
    flip_texts: Annotated[
        int | None,
        Query(
            ge=0,
            le=1_000_000,
            description="Read the texts of the first this many flips of each list (the "
            "others carry their example id alone); absent: of every flip.",
        ),
    ] = None,
) -> ComparisonOut:
    """Two runs compared example by example: metric deltas, paired intervals, flips.

    Computed from per-example figures the store counts; only the flipped examples'
    results are read (the first ``flip_texts`` of each list, when given)."""
    info_a = find_run(store, a, viewer=who.viewer)
    info_b = find_run(store, b, viewer=who.viewer)
    comparison = compare_infos(store, info_a, info_b, flip_texts=flip_texts)
    return ComparisonOut(diff=comparison.diff, warnings=comparison.warnings, flip_texts=flip_texts)


@router.get("/runs/{run_id}", responses=error_responses(401, 404))
def run(run_id: RunId, store: StoreDep, who: Who) -> RunOut:
    """One run's report: the one kept since the run last moved on, else computed from
    its stored results (and kept)."""
    found = current_report(store, run_id, viewer=who.viewer)
    return RunOut(info=found.info, report=found.report, note=found.note)


def _cursor_row(request: Request) -> int | None:
    """The row a results cursor says its page starts after (None: a cursor of a position
    alone, as this server gave out before, or none); its position is :data:`Paging`'s."""
    cursor = request.query_params.get("cursor")
    if not cursor:
        return None
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        row = json.loads(raw).get("r")
    except (binascii.Error, ValueError, TypeError, AttributeError, UnicodeDecodeError):
        return None  # page_params has refused it already
    return row if type(row) is int and 0 < row <= _MAX_ROW else None


def _results_cursor(offset: int, last: KeyedResult) -> str:
    """The cursor of the page at ``offset`` that follows the result ``last``: its
    position (what a client of an older server sends) and the row it starts after."""
    raw = json.dumps({"o": offset, "r": last.row_id}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@router.get("/runs/{run_id}/results", responses=error_responses(400, 401, 404))
def results(
    request: Request,
    run_id: RunId,
    store: StoreDep,
    who: Who,
    page: Paging,
    reports: KeeperDep,
    failing: Annotated[
        bool, Query(description="Only failures (with scorer: that scorer's).")
    ] = False,
    scorer: Annotated[
        str | None, Query(min_length=1, max_length=200, description="Only this scorer's.")
    ] = None,
    order: Annotated[
        Literal["example", "failures_first"], Query(description="By example, or failures first.")
    ] = "example",
) -> Page[PairResult]:
    """A run's per-example results, a page at a time.

    A page reached through ``next`` is read right after the previous page's last result
    (by key), so the last page of 100,000 results costs what the first does."""
    where = ResultFilter(failing=failing, scorer=scorer, failures_first=order == "failures_first")
    listing = list_keyed_results(
        store,
        run_id,
        where,
        viewer=who.viewer,
        offset=page.offset,
        limit=page.limit,
        after_row=_cursor_row(request),
        sizes=reports.listing_sizes,
    )
    following = page.offset + page.limit
    next_cursor = None
    if following < listing.total:
        next_cursor = (
            _results_cursor(following, listing.items[-1])
            if listing.items
            else page.next_cursor(listing.total)
        )
    return Page[PairResult](
        items=[k.result for k in listing.items], total=listing.total, next=next_cursor
    )
