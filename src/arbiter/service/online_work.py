"""An online batch's lines as an engine's work (``arbiter online score --engine``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING

from arbiter.contract import OnlineResult

if TYPE_CHECKING:
    from arbiter.config import Settings
    from arbiter.engines.base import CallGate
    from arbiter.online.config import OnlineConfig
    from arbiter.online.pipeline import OnlinePipeline

__all__ = ["Line", "LineWork"]


Line = tuple[int, bytes, int]
"""One line of an online batch: its number, its bytes, the bytes read up to it."""


class LineWork:
    """The lines of an online batch as an engine's work: each line scored by the pipeline
    (:func:`~arbiter.online.stream.score_stream`, the code ``online score`` always ran),
    a bounded number in flight. A line's stable id is its number in the file.

    Given a live ``pipeline`` it runs that pipeline as built (build it with the gate of
    the command's limits: :func:`~arbiter.service.online_judges.online_pipeline`'s
    ``gate``); its portable form carries the configuration and settings, and the worker
    builds the pipeline with the gate its engine hands it (:meth:`gated`): a cluster's
    shared limits, so every worker's judge calls to one provider share one limit.
    """

    def __init__(
        self,
        pipeline: OnlinePipeline | None,
        *,
        max_in_flight: int,
        source: str,
        config: OnlineConfig | None = None,
        settings: Settings | None = None,
        gate: CallGate | None = None,
    ) -> None:
        self.pipeline, self.config, self.settings = pipeline, config, settings
        self.max_in_flight, self.source = max_in_flight, source
        self.gate = gate

    @property
    def concurrency(self) -> int:
        """Evaluations in flight at once."""
        return self.max_in_flight

    @property
    def limit_key(self) -> str | None:
        """No system under test: an online batch's limits are its providers'."""
        return None

    def key(self, item: Line) -> str:
        """The line's number."""
        return str(item[0])

    def _with(
        self, pipeline: OnlinePipeline | None, max_in_flight: int, gate: CallGate | None
    ) -> LineWork:
        return LineWork(
            pipeline,
            max_in_flight=max_in_flight,
            source=self.source,
            config=self.config,
            settings=self.settings,
            gate=gate,
        )

    def portable(self) -> LineWork:
        """The work without its pipeline, rebuilt in the worker from the configuration
        and settings (keys included: they travel to the workers, never to the store);
        the worker's engine gives it its gate."""
        return self._with(None, self.max_in_flight, None)

    def limited(self, concurrency: int) -> LineWork:
        """The same work with at most ``concurrency`` evaluations in flight."""
        return self._with(self.pipeline, max(1, concurrency), self.gate)

    def gated(self, gate: CallGate) -> LineWork:
        """The same work with its judges' model calls passing ``gate`` (by provider name);
        a work holding a live pipeline runs it as it was built."""
        return self._with(self.pipeline, self.max_in_flight, gate)

    async def run(
        self, items: Iterable[Line], emit: Callable[[OnlineResult], Awaitable[None]]
    ) -> None:
        """Score every line, awaiting ``emit`` with each result as it completes."""
        from arbiter.online.stream import score_stream

        if self.pipeline is not None:
            await score_stream(
                self.pipeline,
                iter(items),
                emit,
                max_in_flight=self.max_in_flight,
                source=self.source,
            )
            return
        from arbiter.service.online_judges import online_pipeline

        pipeline = online_pipeline(self.config, self.settings, gate=self.gate)
        try:
            await score_stream(
                pipeline, iter(items), emit, max_in_flight=self.max_in_flight, source=self.source
            )
        finally:
            await pipeline.aclose()
