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

Calls that go to one system, and model calls to one provider, share one concurrency
and one rate limit across the cluster: a named Ray actor per system or provider
(:class:`~arbiter.engines.ray_limits.SharedLimit`) grants each task its share of the
run's concurrency, takes it back when the task ends (or when the task's worker stops
renewing it), and hands every call a token of its rate (:mod:`arbiter.engines.rate`).

Ray is imported when an engine is opened, never when this module is.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import sys
import threading
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sized
from dataclasses import dataclass
from functools import cache
from types import TracebackType
from typing import Any, TypeVar

from arbiter.engines.base import EngineName, Work, bucket_of
from arbiter.engines.rate import CallLimit
from arbiter.engines.ray_limits import GRANT_TTL_S, ClusterGate, SharedLimit, limit_actor_name
from arbiter.errors import ArbiterError, EngineError

__all__ = ["DEFAULT_ADDRESS", "RayEngine", "SharedLimit", "ray_available"]

DEFAULT_ADDRESS = "auto"
"""Connect to the cluster this machine knows (``RAY_ADDRESS``, or one ``ray start``
started); where there is none, start a local one for the run and stop it after."""

NAMESPACE = "arbiter"
"""The Ray namespace of Arbiter's named actors (the shared limits)."""

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


@cache
def _remote_batch() -> Any:
    import ray

    return ray.remote(_run_batch)


@cache
def _remote_limit() -> Any:
    import ray

    return ray.remote(SharedLimit)


@dataclass(frozen=True)
class _Shared:
    """The shared limits a batch's calls go through (sent with every batch)."""

    system: Any | None
    """The :class:`SharedLimit` actor of the work's system; None: it calls none."""
    limit: int
    """The system's concurrency across the cluster."""
    actors: dict[str, Any]
    """Every limit's actor by name: the system's, and each provider's."""
    per_call: frozenset[str]
    """The providers whose every call holds one of their slots."""
    rated: frozenset[str]
    """The names with a rate limit: each of their calls takes a token."""


def _run_batch(
    work: Work[Any, Any], items: list[Any], shared: _Shared, share: int, cwd: str | None
) -> list[Any]:
    """One batch, in a Ray worker: the work's own run over ``items``, results returned.

    The driver's working directory joins the import path first, so a system named by
    ``module:function`` imports in the worker as it did in the driver. The work's calls
    go through the cluster's shared limits when it lets them (its ``gated``).
    """
    import ray

    if cwd and cwd not in sys.path and os.path.isdir(cwd):
        sys.path.insert(0, cwd)
    holder = uuid.uuid4().hex
    stop = threading.Event()
    granted = share
    if shared.system is not None:
        granted = ray.get(shared.system.acquire.remote(holder, share, shared.limit))
    if shared.actors:

        def renew() -> None:
            while not stop.wait(GRANT_TTL_S / 4):
                for actor in shared.actors.values():
                    with contextlib.suppress(Exception):
                        actor.renew.remote(holder)

        threading.Thread(target=renew, daemon=True).start()
    results: list[Any] = []

    async def keep(result: Any) -> None:
        results.append(result)

    runnable = work.limited(granted)
    gated = getattr(runnable, "gated", None)
    if shared.actors and callable(gated):
        gate = ClusterGate(
            shared.actors, per_call=shared.per_call, rated=shared.rated, holder=holder
        )
        runnable = gated(gate)
    try:
        asyncio.run(runnable.run(items, keep))
    finally:
        stop.set()
        if shared.system is not None:
            with contextlib.suppress(Exception):
                ray.get(shared.system.release.remote(holder))
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
        batch_size: Items per batch; None: at least sixteen rounds of each task's
            share of the concurrency (256 items at least), grown to up to
            :data:`MAX_BATCH` (see :class:`_BatchSizes`).
        in_flight: Batches running or queued at once (bounds the driver's memory);
            None: twice the cluster's CPUs.
        retries: Times Ray runs a batch again whose worker died.
        num_cpus: CPUs of a local cluster started for the run; None: the machine's.
        node_ip: The address a local cluster started for the run binds to.
        limits: Limits shared by the whole cluster, by name: a system's short
            description (``http:URL``, ``python:module:function``) or a model
            provider's name (``openai``). A system's concurrency defaults to the run's
            ``--concurrency``; a provider without a concurrency has no cluster-wide one.
        env: Environment variables the workers run this engine's batches with (a
            provider's URL, ``ARBITER_*`` settings): by default a worker has its node's
            environment, not the driver's. Values travel to the cluster in the clear.
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
        limits: Mapping[str, CallLimit] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.address = address
        self.limits = dict(limits or {})
        self.env = dict(env or {})
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

    def pool_state(self, key: str) -> dict[str, float] | None:
        """The shared limits of calls to ``key`` (see :meth:`SharedLimit.state`), if any."""
        import ray

        self.open()
        try:
            actor = ray.get_actor(limit_actor_name(key), namespace=NAMESPACE)
        except ValueError:
            return None
        state: Any = ray.get(actor.state.remote())
        return {str(name): float(value) for name, value in state.items()}

    def _limit_actor(self, key: str, limit: int | None, rate: CallLimit | None) -> Any:
        """The named actor of ``key``'s limits, made if missing, set to these limits."""
        import ray

        actor = (
            _remote_limit()
            .options(
                name=limit_actor_name(key),
                namespace=NAMESPACE,
                get_if_exists=True,
                lifetime="detached",
                num_cpus=0,
                max_concurrency=1000,
            )
            .remote(limit, rate=rate)
        )
        ray.get(actor.configure.remote(limit, rate))
        return actor

    def _shared(self, work: Work[Any, Any]) -> _Shared:
        """The actors of the limits ``work``'s calls go through."""
        system_key = getattr(work, "limit_key", None)
        actors: dict[str, Any] = {}
        system = None
        limit = work.concurrency
        if system_key:
            given = self.limits.get(system_key)
            if given is not None and given.concurrency is not None:
                limit = min(limit, given.concurrency)
            system = actors[system_key] = self._limit_actor(system_key, limit, given)
        per_call: set[str] = set()
        for key, given in self.limits.items():
            if key == system_key:
                continue
            actors[key] = self._limit_actor(key, given.concurrency, given)
            if given.concurrency is not None:
                per_call.add(key)
        rated = frozenset(
            key for key, given in self.limits.items() if key in actors and given.per_second
        )
        return _Shared(system, limit, actors, frozenset(per_call), rated)

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
        shared = self._shared(work)
        share = max(1, math.ceil(shared.limit / parallel))
        buckets: list[list[T]] = [[] for _ in range(2 * parallel)]
        sizes = _BatchSizes(self.batch_size, share, len(buckets), items)
        in_flight = self.in_flight or 2 * parallel
        pending: dict[asyncio.Future[Any], Any] = {}
        options: dict[str, Any] = {"max_retries": self.retries, "num_cpus": 1}
        if self.env:
            options["runtime_env"] = {"env_vars": self.env}
        remote = _remote_batch().options(**options)
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
            ref = remote.remote(portable, batch, shared, share, cwd)
            pending[asyncio.wrap_future(ref.future())] = ref

        try:
            for item in items:
                index = bucket_of(work.key(item), len(buckets))
                bucket = buckets[index]
                bucket.append(item)
                if len(bucket) >= sizes.next(index):
                    await submit(bucket.copy())
                    bucket.clear()
                    sizes.submitted(index)
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


MAX_BATCH = 5_000
"""Items a batch grows to at most (unless one round of its share is more): the driver
holds the items and results of ``in_flight`` batches at once."""


class _BatchSizes:
    """How many items each bucket's next batch takes.

    A batch must be long enough that starting it (the trip to a worker and back,
    building the system and scorers there, the driver taking in its results) is small
    beside running it: at least sixteen rounds of its share of the concurrency (256
    items at least). Past that, a run whose length is known gives each bucket one batch
    of its items (two per CPU, so the cluster stays busy until the end), and a run of
    unknown length doubles a bucket's batches as they go; either way up to
    :data:`MAX_BATCH`.
    """

    def __init__(self, fixed: int | None, share: int, buckets: int, items: Iterable[Any]) -> None:
        self.fixed = fixed
        self.floor = max(256, 16 * share)
        count = len(items) if isinstance(items, Sized) else 0
        self.even = math.ceil(count / buckets)
        self.done = [0] * buckets

    def next(self, bucket: int) -> int:
        """The size at which ``bucket``'s next batch is sent."""
        if self.fixed:
            return self.fixed
        grown = max(self.floor << min(self.done[bucket], 16), self.even)
        return max(self.floor, min(MAX_BATCH, grown))

    def submitted(self, bucket: int) -> None:
        """``bucket`` sent a batch."""
        self.done[bucket] += 1


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
