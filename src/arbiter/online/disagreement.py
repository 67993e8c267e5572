"""Layer 2 of online scoring: the same input to several systems, and whether they agree.

Each system is asked concurrently and bounded by the same timeout, so the layer costs
about as long as its slowest answer. A system that fails is kept in
``errors_by_provider``, never dropped: an error makes agreement unknowable, not true.
``DisagreementLayer`` runs it in the pipeline for escalated items.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from arbiter.contract import DisagreementResult, Prediction
from arbiter.online.layer import LayerContext, NotRun
from arbiter.online.reading import Item
from arbiter.systems.base import SystemUnderTest

__all__ = ["DisagreementLayer", "score_disagreement"]

_MAX_ERROR_CHARS = 300


async def score_disagreement(
    input: Mapping[str, Any],
    systems: Mapping[str, SystemUnderTest],
    *,
    timeout: float,  # noqa: ASYNC109 - a per-call timeout, part of the public API
) -> DisagreementResult:
    """Ask every system for the same input at once and compare their labels.

    ``agreed`` is decided as follows:

    - True only when every system answered and all labels are equal (a single system
      that answered agrees with itself);
    - False when at least two systems answered with different labels, whatever the
      others did (a disagreement seen is a disagreement, errors or not);
    - None otherwise: some system failed and the ones that answered agree, or none
      answered, or no system was given. A failure makes agreement unknowable.

    Labels are compared as exact strings; each adapter maps its vocabulary into them.

    Args:
        input: The input every system receives (each gets its own shallow copy).
        systems: The systems to compare, by the name reported in the result.
        timeout: Seconds each system may take; a system still busy then is cancelled
            and recorded as ``SystemTimeout``.

    Returns:
        Labels by system, one error line by failed system (``"SystemTimeout: no answer
        within 2s"``), and ``agreed``. Never raises for a system's failure, however it
        fails (raising, hanging, or answering with something that is not a prediction);
        only a cancellation of the caller's own task propagates.

    Examples:
        >>> import asyncio
        >>> from arbiter.contract import Prediction
        >>> async def low(input):
        ...     return Prediction(label="low")
        >>> asyncio.run(score_disagreement({}, {"a": low, "b": low}, timeout=1.0)).agreed
        True
    """
    names = list(systems)
    answers = await asyncio.gather(*(_ask(systems[name], dict(input), timeout) for name in names))
    labels: dict[str, str] = {}
    errors: dict[str, str] = {}
    for name, (label, error) in zip(names, answers, strict=True):
        if label is not None:
            labels[name] = label
        else:
            errors[name] = error or "unknown failure"
    return DisagreementResult(
        labels_by_provider=labels,
        errors_by_provider=errors,
        agreed=_agreement(labels, failed=bool(errors)),
    )


class DisagreementLayer:
    """Disagreement as an expensive layer: the item's input replayed to every system.

    The input is the caller's ``input=``, else the prediction's ``metadata.input``; with
    neither the layer abstains. Each failed system is an error line
    (``disagreement: <system>: ...``).

    Args:
        systems: The systems to compare, by name.
        timeout: Seconds each system may take.
    """

    name = "disagreement"
    expensive = True

    def __init__(self, systems: Mapping[str, SystemUnderTest], *, timeout: float = 10.0) -> None:
        self.systems = dict(systems)
        self.timeout = timeout

    @property
    def budget_floor(self) -> tuple[float, str]:
        """Each system's timeout: the budget must outlast it."""
        return self.timeout, "the disagreement timeout"

    async def run(self, item: Item, context: LayerContext) -> DisagreementResult:
        """The labels of the systems and whether they agree."""
        replay = context.input
        if replay is None:
            metadata = item.doc.get("metadata")
            found = metadata.get("input") if isinstance(metadata, Mapping) else None
            replay = found if isinstance(found, Mapping) else None
        if replay is None:
            raise NotRun("no input to replay: pass input= or set metadata.input")
        result = await score_disagreement(replay, self.systems, timeout=self.timeout)
        for name, line in result.errors_by_provider.items():
            context.error(f"{name}: {line}")
        return result


def _agreement(labels: Mapping[str, str], *, failed: bool) -> bool | None:
    distinct = set(labels.values())
    if len(distinct) > 1:
        return False
    if distinct and not failed:
        return True
    return None


async def _ask(
    system: SystemUnderTest, input: dict[str, Any], limit_s: float
) -> tuple[str | None, str | None]:
    """One system's label, or the one-line reason it gave none."""
    try:
        async with asyncio.timeout(limit_s) as scope:
            answer: object = await system(input)
    except TimeoutError as exc:
        if scope.expired():
            return None, f"SystemTimeout: no answer within {limit_s:g}s"
        return None, _describe(exc)
    except Exception as exc:
        return None, _describe(exc)
    if not isinstance(answer, Prediction):
        return None, f"InvalidSystemResponse: expected a Prediction, got {type(answer).__name__}"
    if not answer.label.strip():
        return None, "InvalidSystemResponse: the prediction's label is empty"
    return answer.label, None


def _describe(exc: BaseException) -> str:
    message = " ".join(str(exc).split())
    line = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    return line if len(line) <= _MAX_ERROR_CHARS else line[: _MAX_ERROR_CHARS - 1] + "…"
