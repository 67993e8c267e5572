"""The deterministic mock provider: the string detectors as a critic, offline.

It reads the structured ``request.subject`` (task, context, output, lens), runs every
detector with the lens's sensitivities and answers a ``Critique`` as JSON text, exactly
as a model would. The same request always gets the same answer.
"""

from __future__ import annotations

from arbiter.contract import DIMENSIONS, Callout, Critique, Usage
from arbiter.errors import InvalidResponse
from arbiter.jury.detectors import run_detectors
from arbiter.providers.base import CompletionRequest, CompletionResponse

__all__ = ["CONTRADICTED_SCORE", "UNSUPPORTED_SCORE", "MockProvider", "critique_of"]

CONTRADICTED_SCORE = 2
"""Score of a dimension with a contradiction callout."""
UNSUPPORTED_SCORE = 3
"""Score of a dimension with an unsupported-claim callout (and no contradiction)."""
_CLEAN_SCORE = 5


def critique_of(callouts: list[Callout]) -> Critique:
    """The critique a detector critic gives: each dimension scored by its worst callout.

    Args:
        callouts: The detectors' findings.

    Returns:
        5 on a dimension with no callout, ``UNSUPPORTED_SCORE`` with only unsupported
        ones, ``CONTRADICTED_SCORE`` with a contradiction; the callouts unchanged.
    """
    scores = dict.fromkeys(DIMENSIONS, _CLEAN_SCORE)
    for callout in callouts:
        score = CONTRADICTED_SCORE if callout.kind == "contradicted" else UNSUPPORTED_SCORE
        scores[callout.dimension] = min(scores[callout.dimension], score)
    return Critique.model_validate({**scores, "callouts": callouts})


class MockProvider:
    """Answers critique requests with the deterministic string detectors.

    Examples:
        >>> import asyncio
        >>> from arbiter.providers.base import Subject
        >>> request = CompletionRequest(
        ...     model="mock", system="", prompt="", json_schema={},
        ...     subject=Subject(task="Summarise.", context="Refunds within 30 days.",
        ...                     output="Refunds within 45 days.", lens="factual"))
        >>> Critique.model_validate_json(
        ...     asyncio.run(MockProvider().complete(request)).text).accuracy
        2
    """

    name = "mock"

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        """Run the detectors on ``request.subject`` and answer a critique as JSON.

        Args:
            request: A critique request; only ``subject`` is read.

        Returns:
            The critique JSON, model ``mock``, no usage.

        Raises:
            InvalidResponse: The request carries no ``subject`` to judge.
        """
        subject = request.subject
        if subject is None:
            raise InvalidResponse(
                "The mock provider needs request.subject (task, context, output, lens); "
                "got a request without one."
            )
        callouts = run_detectors(subject.task, subject.context, subject.output, lens=subject.lens)
        return CompletionResponse(
            text=critique_of(callouts).model_dump_json(), model="mock", usage=Usage()
        )
