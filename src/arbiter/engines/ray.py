"""The Ray engine: the same work, on batches of items, in a Ray cluster's workers.

Items are put in buckets by a stable hash of their id (:func:`~arbiter.engines.base.bucket_of`);
a bucket that fills becomes a batch, and each batch runs as one Ray task: the task runs
the work's own :meth:`~arbiter.engines.base.Work.run` on it (the code the local engine
runs) and returns its results, which the driver emits one by one. So:

- only the driver writes the store, and holds at most ``in_flight`` batches of items and
  results at once, whatever the number of items;
- a worker that dies takes its batch's results with it: Ray runs the batch again
  (``retries`` times), and no result of the lost attempt ever reached the driver, so
  none is lost and none is stored twice;
- cancelling the driver's coroutine (Ctrl-C) cancels the tasks in flight.

Calls that go to one system share one concurrency limit across the cluster: a named Ray
actor (:class:`ConcurrencyPool`) grants each task its share of the run's concurrency and
takes it back when the task ends, or when the task's worker stops renewing it.

Ray is imported when an engine is opened, never when this module is.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import math
import os
import sys
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from functools import cache
from types import TracebackType
from typing import Any, TypeVar

from arbiter.engines.base import EngineName, Work, bucket_of
from arbiter.errors import ArbiterError, EngineError

__all__ = ["DEFAULT_ADDRESS", "ConcurrencyPool", "RayEngine", "ray_available"]

DEFAULT_ADDRESS = "auto"
"""Connect to the cluster this machine knows (``RAY_ADDRESS``, or one ``ray start``
started); where there is none, start a local one for the run and stop it after."""

NAMESPACE = "arbiter"
"""The Ray namespace of Arbiter's named actors (the shared limits)."""

GRANT_TTL_S = 20.0
"""A task's share of a limit is given back when its worker stops renewing it this long."""

T = TypeVar("T")
R = TypeVar("R")

_logger = logging.getLogger(__name__)


def ray_available() -> str | None:
    """None when Ray imports; else why not (for a skip reason, or an error)."""
    try:
        import ray  # noqa: F401
    except ImportError as exc:
        return f"ray is not installed (pip install 'arbiter[ray]'): {exc}"
    return None


class ConcurrencyPool:
    """One limit on calls in flight to one system, shared by every task of the cluster.

    Made a Ray actor by :class:`RayEngine` (named after the system, in the ``arbiter``
    namespace, so every run against the system shares it). A task asks for a share
    (:meth:`acquire`) and gets at least one slot once one is free; it renews its share
    while it runs and gives it back at its end. A share not renewed for
    :data:`GRANT_TTL_S` (its worker died) is taken back.
    """

    def __init__(self, limit: int, *, ttl: float = GRANT_TTL_S) -> None:
        self.limit = max(1, limit)
        self.ttl = ttl
        self.grants: dict[str, tuple[int, float]] = {}
        self.peak = 0
        self._changed: asyncio.Condition | None = None

    def _condition(self) -> asyncio.Condition:
        if self._changed is None:
            self._changed = asyncio.Condition()
        return self._changed

    def _held(self) -> int:
        now = time.monotonic()
        for holder, (_, renewed) in list(self.grants.items()):
            if now - renewed > self.ttl:
                del self.grants[holder]
        return sum(n for n, _ in self.grants.values())

    async def acquire(self, holder: str, want: int, limit: int) -> int:
        """Slots for ``holder``: between 1 and ``want``, once at least one is free.

        Args:
            holder: The task's own id.
            want: The share it asks for.
            limit: The run's limit (the latest run's limit stands for all).
        """
        self.limit = max(1, limit)
        changed = self._condition()
        async with changed:
            while (free := self.limit - self._held()) < 1:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), timeout=self.ttl / 4)
            granted = min(max(1, want), free)
            self.grants[holder] = (granted, time.monotonic())
            self.peak = max(self.peak, self._held())
            return granted

    def renew(self, holder: str) -> None:
        """Show that ``holder``'s worker is alive."""
        if holder in self.grants:
            self.grants[holder] = (self.grants[holder][0], time.monotonic())

    async def release(self, holder: str) -> None:
        """Give ``holder``'s share back."""
        changed = self._condition()
        async with changed:
            self.grants.pop(holder, None)
            changed.notify_all()

    def state(self) -> dict[str, int]:
        """``limit``, slots ``held`` now and the ``peak`` held at once."""
        return {"limit": self.limit, "held": self._held(), "peak": self.peak}


def _pool_name(key: str) -> str:
    return "arbiter-limit-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]


@cache
def _remote_batch() -> Any:
    import ray

    return ray.remote(_run_batch)


@cache
def _remote_pool() -> Any:
    import ray

    return ray.remote(ConcurrencyPool)


def _run_batch(
    work: Work[Any, Any], items: list[Any], pool: Any, share: int, cwd: str | None
) -> list[Any]:
    """One batch, in a Ray worker: the work's own run over ``items``, results returned.

    The driver's working directory joins the import path first, so a system named by
    ``module:function`` imports in the worker as it did in the driver.
    """
    import ray

    if cwd and cwd not in sys.path and os.path.isdir(cwd):
        sys.path.insert(0, cwd)
    holder = uuid.uuid4().hex
    stop = threading.Event()
    granted = share
    if pool is not None:
        granted = ray.get(pool.acquire.remote(holder, share, work.concurrency))

        def renew() -> None:
            while not stop.wait(GRANT_TTL_S / 4):
                with contextlib.suppress(Exception):
                    pool.renew.remote(holder)

        threading.Thread(target=renew, daemon=True).start()
    results: list[Any] = []

    async def keep(result: Any) -> None:
        results.append(result)

    try:
        asyncio.run(work.limited(granted).run(items, keep))
    finally:
        stop.set()
        if pool is not None:
            with contextlib.suppress(Exception):
                ray.get(pool.release.remote(holder))
    return results


def _cluster_events_to_stderr() -> None:
    """Send what the cluster tells the driver (a worker that died and was replaced) to
    stderr: Ray prints it to stdout, where ``--json`` puts the report."""
    import ray._private.worker as driver

    printing = driver.print_to_stdstream
    if getattr(printing, "arbiter_stderr", False):
        return

    def to_stderr(data: dict[str, Any], ignore_prefix: bool) -> None:
        printing({**data, "is_err": True}, ignore_prefix)

    to_stderr.arbiter_stderr = True  # type: ignore[attr-defined]
    driver.print_to_stdstream = to_stderr


@dataclass
class _Cluster:
    """What the engine is connected to."""

    address: str
    started: bool
    nodes: int
    cpus: int


class RayEngine:
    """Runs work on a Ray cluster, in batches of items, results streamed to the caller.

    Use it as a context manager (or call :meth:`open` and :meth:`close`): opening
    connects to the cluster, or starts a local one for the run that closing stops.

    Args:
        address: ``auto`` (:data:`DEFAULT_ADDRESS`), ``local`` (always a new local
            cluster), or a cluster's address (``HOST:PORT``, ``ray://HOST:PORT``).
        batch_size: Items per batch; None: sixteen rounds of each task's share of the
            concurrency (at least 256).
        in_flight: Batches running or queued at once (bounds the driver's memory);
            None: twice the cluster's CPUs.
        retries: Times Ray runs a batch again whose worker died.
        num_cpus: CPUs of a local cluster started for the run; None: the machine's.
        node_ip: The address a local cluster started for the run binds to.
    """

    def __init__(
        self,
        address: str = DEFAULT_ADDRESS,
        *,
        batch_size: int | None = None,
        in_flight: int | None = None,
        retries: int = 3,
        num_cpus: int | None = None,
        node_ip: str = "127.0.0.1",
    ) -> None:
        self.address = address
        self.batch_size = batch_size
        self.in_flight = in_flight
        self.retries = retries
        self.num_cpus = num_cpus
        self.node_ip = node_ip
        self._cluster: _Cluster | None = None
        self._connected_here = False

    @property
    def name(self) -> EngineName:
        """``ray``."""
        return "ray"

    def describe(self) -> str:
        """Where work runs, e.g. ``ray at 127.0.0.2:6399 (2 nodes, 2 CPUs)``."""
        cluster = self._cluster
        if cluster is None:
            return f"ray at {self.address} (not connected)"
        where = "a local cluster started for this run" if cluster.started else cluster.address
        nodes = f"{cluster.nodes} node{'s' if cluster.nodes != 1 else ''}"
        return f"ray at {where} ({nodes}, {cluster.cpus} CPUs)"

    def __enter__(self) -> RayEngine:
        self.open()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def open(self) -> None:
        """Connect to the cluster, or start a local one (``auto`` finding none, ``local``).

        Raises:
            EngineError: Ray is not installed, or the cluster cannot be reached or started.
        """
        if self._cluster is not None:
            return
        missing = ray_available()
        if missing is not None:
            raise EngineError(f"--engine ray: {missing}")
        import ray

        if ray.is_initialized():  # a caller connected already: use its connection
            self._cluster = self._connected(str(self.address), started=False)
            self._connected_here = False
            return
        options: dict[str, Any] = {
            "namespace": NAMESPACE,
            "logging_level": logging.ERROR,
            "log_to_driver": False,
            "include_dashboard": False,
        }
        address = None if self.address == "local" else self.address
        if address is not None:
            try:
                ray.init(address=address, **options)
            except ConnectionError:
                if address != DEFAULT_ADDRESS:
                    raise EngineError(
                        f"--ray-address {address}: no Ray cluster answers there "
                        "(start one with 'ray start --head', or use --ray-address auto)"
                    ) from None
                address = None
            except Exception as exc:  # Ray raises many kinds; one line for the user
                raise EngineError(f"--ray-address {address}: {type(exc).__name__}: {exc}") from None
        if address is None:
            try:
                ray.init(
                    num_cpus=self.num_cpus,
                    _node_ip_address=self.node_ip,
                    object_store_memory=256 * 1024 * 1024,
                    **options,
                )
            except Exception as exc:
                raise EngineError(f"cannot start a local Ray cluster: {exc}") from None
        self._cluster = self._connected(address or "local", started=address is None)
        self._connected_here = True
        _cluster_events_to_stderr()

    @staticmethod
    def _connected(address: str, *, started: bool) -> _Cluster:
        import ray

        nodes = [node for node in ray.nodes() if node.get("Alive")]  # type: ignore[no-untyped-call]
        cpus = int(ray.cluster_resources().get("CPU", 1))  # type: ignore[no-untyped-call]
        return _Cluster(address=address, started=started, nodes=len(nodes), cpus=max(1, cpus))

    def close(self) -> None:
        """Disconnect; a local cluster started for the run is stopped. A connection the
        caller made before opening is left open."""
        if self._cluster is None:
            return
        import ray

        self._cluster = None
        if self._connected_here:
            ray.shutdown()

    @property
    def cpus(self) -> int:
        """The cluster's CPUs (batches that run at once)."""
        self.open()
        assert self._cluster is not None
        return self._cluster.cpus

    def pool_state(self, key: str) -> dict[str, int] | None:
        """The shared limit of calls to ``key`` (``limit``, ``held``, ``peak``), if any."""
        import ray

        self.open()
        try:
            pool = ray.get_actor(_pool_name(key), namespace=NAMESPACE)
        except ValueError:
            return None
        state: Any = ray.get(pool.state.remote())
        return {str(name): int(value) for name, value in state.items()}

    def _pool(self, key: str, limit: int) -> Any:
        return (
            _remote_pool()
            .options(
                name=_pool_name(key),
                namespace=NAMESPACE,
                get_if_exists=True,
                lifetime="detached",
                num_cpus=0,
                max_concurrency=1000,
            )
            .remote(limit)
        )

    async def run(
        self, work: Work[T, R], items: Iterable[T], emit: Callable[[R], Awaitable[None]]
    ) -> None:
        """Run ``work`` over ``items`` in batches on the cluster; emit every result.

        Raises:
            EngineError: A batch was lost past its retries, or the cluster went away.
            ArbiterError: What the work itself raised (a system that cannot be built
                on a worker), as it raised it.
        """
        import ray

        self.open()
        portable = ray.put(work.portable())
        parallel = self.cpus
        limit_key = getattr(work, "limit_key", None)
        pool = self._pool(limit_key, work.concurrency) if limit_key else None
        share = max(1, math.ceil(work.concurrency / parallel))
        # A batch long enough that starting it (building the system in the worker, the
        # trip there and back) is small beside running it at its share of the limit.
        size = self.batch_size or max(256, 16 * share)
        buckets: list[list[T]] = [[] for _ in range(2 * parallel)]
        in_flight = self.in_flight or 2 * parallel
        pending: dict[asyncio.Future[Any], Any] = {}
        remote = _remote_batch().options(max_retries=self.retries, num_cpus=1)
        cwd = os.getcwd()

        async def settle(first_only: bool) -> None:
            when = asyncio.FIRST_COMPLETED if first_only else asyncio.ALL_COMPLETED
            done, _ = await asyncio.wait(pending, return_when=when)
            for future in done:
                pending.pop(future)
                for result in _batch_results(future):
                    await emit(result)

        async def submit(batch: list[T]) -> None:
            if any(future.done() for future in pending):
                await settle(first_only=True)
            while len(pending) >= in_flight:
                await settle(first_only=True)
            ref = remote.remote(portable, batch, pool, share, cwd)
            pending[asyncio.wrap_future(ref.future())] = ref

        try:
            for item in items:
                bucket = buckets[bucket_of(work.key(item), len(buckets))]
                bucket.append(item)
                if len(bucket) >= size:
                    await submit(bucket.copy())
                    bucket.clear()
            for bucket in buckets:
                if bucket:
                    await submit(bucket.copy())
                    bucket.clear()
            while pending:
                await settle(first_only=True)
        except BaseException:
            for ref in pending.values():
                with contextlib.suppress(Exception):
                    ray.cancel(ref, force=True)
            raise


def _batch_results(future: asyncio.Future[Any]) -> list[Any]:
    """A finished batch's results, or the error that ended it, in Arbiter's terms."""
    from ray.exceptions import RayError, RayTaskError

    try:
        results: list[Any] = future.result()
    except RayTaskError as exc:
        cause = exc.cause
        if isinstance(cause, ArbiterError):
            raise cause from None
        raise EngineError(
            f"a batch failed on a Ray worker: {type(cause).__name__}: {cause}"
        ) from None
    except RayError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise EngineError(f"a batch was lost on the Ray cluster: {first}") from None
    return results
