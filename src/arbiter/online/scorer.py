"""``OnlineScorer``: the online pipeline behind a bounded queue, for services."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping
from typing import Any, Literal

from arbiter.contract import OnlineResult, Prediction
from arbiter.online.pipeline import OnlinePipeline
from arbiter.params import check_choice, check_number

__all__ = ["OnlineScorer"]


class OnlineScorer:
    """A pipeline behind a bounded queue: ``submit`` returns at once, workers score.

    Call ``submit`` from inside the service's running event loop; the workers start
    with the first submission. When the queue is full, ``drop_oldest`` discards the
    oldest waiting item to make room, ``reject`` refuses the new one. Nothing raises
    into the caller: a refused submission returns False and is counted.

    Args:
        pipeline: The pipeline to run.
        max_queue: Items that may wait.
        when_full: ``drop_oldest`` or ``reject``.
        workers: Items scored at once.
        on_result: Called with each result (a coroutine function is awaited); its
            exceptions are counted in ``callback_errors``, never raised.

    Attributes:
        submitted: Items accepted into the queue (later dropped ones included).
        dropped: Waiting items discarded by ``drop_oldest``.
        rejected: Submissions refused (queue full with ``reject``, closed, no loop).
        completed: Items scored.
        callback_errors: Exceptions of ``on_result`` (or of the pipeline) swallowed.
    """

    def __init__(
        self,
        pipeline: OnlinePipeline,
        *,
        max_queue: int = 1000,
        when_full: Literal["drop_oldest", "reject"] = "drop_oldest",
        workers: int = 4,
        on_result: Callable[[OnlineResult], Any] | None = None,
    ) -> None:
        check_number(max_queue, "max_queue", "OnlineScorer", minimum=1, integer=True)
        check_number(workers, "workers", "OnlineScorer", minimum=1, integer=True)
        check_choice(when_full, "when_full", "OnlineScorer", ("drop_oldest", "reject"))
        self.pipeline = pipeline
        self.max_queue = max_queue
        self.when_full = when_full
        self.workers = workers
        self.on_result = on_result
        self.submitted = self.dropped = self.rejected = self.completed = 0
        self.callback_errors = 0
        self._queue: asyncio.Queue[tuple[Any, str | None]] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._closed = False

    @property
    def pending(self) -> int:
        """Items waiting in the queue."""
        return self._queue.qsize() if self._queue is not None else 0

    def submit(
        self, prediction: Prediction | Mapping[str, Any], *, context: str | None = None
    ) -> bool:
        """Queue one prediction for scoring; True if accepted. Never blocks, never raises."""
        try:
            if self._closed:
                self.rejected += 1
                return False
            queue = self._started()
            if queue.full():
                if self.when_full == "reject":
                    self.rejected += 1
                    return False
                queue.get_nowait()
                queue.task_done()
                self.dropped += 1
            queue.put_nowait((prediction, context))
            self.submitted += 1
            return True
        except Exception:
            self.rejected += 1
            return False

    async def drain(self) -> None:
        """Wait until every accepted item is scored (or dropped)."""
        if self._queue is not None:
            await self._queue.join()

    async def close(self) -> None:
        """Refuse new items, drain the queue, and stop the workers."""
        self._closed = True
        await self.drain()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()

    async def __aenter__(self) -> OnlineScorer:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def _started(self) -> asyncio.Queue[tuple[Any, str | None]]:
        loop = asyncio.get_running_loop()
        if self._queue is None:
            self._loop = loop
            self._queue = asyncio.Queue(self.max_queue)
            self._tasks = [loop.create_task(self._work()) for _ in range(self.workers)]
        elif loop is not self._loop:
            raise RuntimeError("OnlineScorer is bound to another event loop")
        return self._queue

    async def _work(self) -> None:
        queue = self._queue
        assert queue is not None
        while True:
            prediction, context = await queue.get()
            try:
                result = await self.pipeline.evaluate(prediction, context=context)
                self.completed += 1
                if self.on_result is not None:
                    returned = self.on_result(result)
                    if inspect.isawaitable(returned):
                        await returned
            except Exception:
                self.callback_errors += 1
            finally:
                queue.task_done()
            # Let the service's own tasks run between items that never suspend.
            await asyncio.sleep(0)
