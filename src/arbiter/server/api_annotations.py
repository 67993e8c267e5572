"""REST: human annotations (create, list) and each judge's calibration against them.

Thin routes over :mod:`arbiter.service.annotations` (storing, with the ruling the human
saw frozen) and :mod:`arbiter.service.browse` (what a key may see, calibration).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, ConfigDict, Field

from arbiter.contract import Annotation, AnnotationLabel, FrozenRuling
from arbiter.judges.calibration import CalibrationReport, CalibrationStatus
from arbiter.server.auth import Principal, principal
from arbiter.server.deps import app_store
from arbiter.server.errors import error_responses
from arbiter.server.pagination import Page, PageParams, page_params
from arbiter.server.responses import ApiJSONResponse
from arbiter.service.annotations import annotate
from arbiter.service.browse import calibrate_visible, list_visible_annotations
from arbiter.service.mcp_shapes import EstimateOut
from arbiter.store import Store

__all__ = ["AnnotationRequest", "CalibrationOut", "router"]

router = APIRouter(prefix="/v1", tags=["annotations"], default_response_class=ApiJSONResponse)

StoreDep = Annotated[Store, Depends(app_store)]
Who = Annotated[Principal, Depends(principal)]
Name = Annotated[str | None, Query(min_length=1, max_length=200)]


class AnnotationRequest(BaseModel):
    """A person's label on one item and dimension, with the judge ruling they saw."""

    model_config = ConfigDict(extra="forbid")

    item_id: str = Field(min_length=1, max_length=200)
    """The scored item (an example, a turn, a case)."""
    dimension: str = Field(min_length=1, max_length=100)
    """What was judged (groundedness, answer_correctness, ...)."""
    label: AnnotationLabel
    """``agree`` / ``disagree`` with the ruling, or a direct ``pass`` / ``fail``."""
    ruling: FrozenRuling | None = None
    """The ruling shown (judge, verdict, score, evidence), frozen as sent; null: a note
    (``agree`` / ``disagree`` need one)."""
    annotator: str | None = Field(default=None, min_length=1, max_length=200)
    """Who labelled (default: the key's id, or ``api`` on an open server)."""
    comment: str = Field(default="", max_length=10_000)
    """Free text."""
    propagated: bool = False
    """The label was copied from another item, not given directly."""


class JudgeCalibrationOut(BaseModel):
    """How one judge agrees with the humans on one dimension."""

    judge: str
    dimension: str
    n_pairs: int
    """Pairs labelled on both sides: the n of every figure."""
    n_judge_abstained: int
    n_human_unknown: int
    labels: list[str]
    positive: str
    kappa: EstimateOut
    """Cohen's kappa."""
    agreement: EstimateOut
    precision: EstimateOut
    recall: EstimateOut
    human_alpha: float | None
    """Krippendorff's alpha among the humans; null with fewer than two."""
    n_alpha_items: int
    n_annotators: int
    status: CalibrationStatus
    """``calibrated``, ``uncalibrated`` or ``too_few_pairs``."""
    reason: str


class CalibrationOut(BaseModel):
    """Every judge and dimension calibrated against the annotations the key may see."""

    judges: list[JudgeCalibrationOut]
    seed: int
    n_resamples: int
    excluded: dict[str, int]
    """Labels left out before pairing, by reason (notes, propagated)."""
    min_pairs: int
    kappa_threshold: float

    @classmethod
    def of(cls, report: CalibrationReport) -> CalibrationOut:
        """The answer for a calibration report."""
        data: dict[str, Any] = report.as_dict()
        return cls.model_validate(data)


@router.post("/annotations", status_code=201, responses=error_responses(400, 401, 413))
def create_annotation(body: AnnotationRequest, store: StoreDep, who: Who) -> Annotation:
    """Store one human label, the ruling it is about frozen as sent; owned by the key."""
    return annotate(
        store,
        body.item_id,
        body.dimension,
        body.label,
        body.annotator or who.key_id or "api",
        ruling=body.ruling,
        owner=who.owner,
        propagated=body.propagated,
        comment=body.comment,
    )


@router.get("/annotations", responses=error_responses(400, 401))
def annotation_list(
    store: StoreDep,
    who: Who,
    page: Annotated[PageParams, Depends(page_params)],
    item: Name = None,
    dimension: Name = None,
    judge: Name = None,
    latest: Annotated[
        bool, Query(description="Only the latest per item, dimension and annotator.")
    ] = True,
) -> Page[Annotation]:
    """The annotations the key may see, oldest first."""
    found = list_visible_annotations(
        store, viewer=who.viewer, item=item, dimension=dimension, judge=judge, latest=latest
    )
    return Page[Annotation](
        items=found[page.offset : page.offset + page.limit],
        total=len(found),
        next=page.next_cursor(len(found)),
    )


@router.get("/calibration", responses=error_responses(401))
def calibration(
    store: StoreDep, who: Who, judge: Name = None, dimension: Name = None
) -> CalibrationOut:
    """Each judge's kappa, agreement, precision and recall against the humans, per dimension."""
    return CalibrationOut.of(
        calibrate_visible(store, viewer=who.viewer, judge=judge, dimension=dimension)
    )
