"""Offline runs: every (example, repetition) pair through a system under test.

The async core ``run_eval_async`` hands the run's pairs to an engine as one
:class:`PairWork` (:mod:`arbiter.engines`): the local engine runs its fixed pool of
workers (bounded concurrency) in this process, the Ray engine runs the same pool on
batches of pairs in a cluster's workers. The work retries what may pass on a second try (the one
:class:`~arbiter.http.retry.RetryPolicy`, under a per-run retry budget), and hands each
result to a writer task that commits it to the store as soon as it arrives (whatever
else arrived meanwhile goes in the same transaction). The store is whatever
:class:`~arbiter.harness.sink.RunStore` the caller hands in. A run holds a lease on
itself while it executes, so a second ``resume`` of it is refused before any call, and
records each execution segment, so a killed segment's wall time is not lost.
``run_eval`` is the sync wrapper, ``resume_eval`` continues a stored run with only its
missing pairs.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from pydantic import ValidationError

from arbiter.contract import (
    Completeness,
    Dataset,
    Example,
    Output,
    PairResult,
    Report,
    RunConfig,
    RunGate,
    RunStatus,
)
from arbiter.engines.base import CallGate, Engine
from arbiter.engines.local import LocalEngine
from arbiter.errors import (
    InputError,
    InvalidSystemResponse,
    SystemCrashed,
    SystemTimeout,
    SystemUnderTestError,
)
from arbiter.harness.compact import ResultColumns, RunPairs
from arbiter.harness.describe import describe_system, describe_system_short, run_summary
from arbiter.harness.report import build_report
from arbiter.harness.sink import Lease, RunStore
from arbiter.http.retry import RetryBudget, RetryPolicy
from arbiter.params import NumberRange, invalid, validate_params
from arbiter.scoring.base import Scorer, ScoringContext, repetition_passed
from arbiter.scoring.labels import label as label_scorer
from arbiter.scoring.registry import ScorerRegistry
from arbiter.systems.base import SystemUnderTest
from arbiter.telemetry import Telemetry
from arbiter.validation import describe_validation_error, format_loc

__all__ = [
    "HEARTBEAT_S",
    "PairWork",
    "ProgressCallback",
    "RunParts",
    "default_scorers",
    "resume_eval",
    "resume_eval_async",
    "run_eval",
    "run_eval_async",
    "stored_scorers",
]

ProgressCallback = Callable[[int, int], None]
"""Called as ``progress(done, total)`` as completed pairs are stored."""


class RunParts(Protocol):
    """Builds a run's system and scorers anew (in another process): a picklable callable,
    e.g. a ``functools.partial`` of a module-level function over the system's description
    and the scorers' specs."""

    def __call__(self, gate: CallGate | None = None) -> tuple[SystemUnderTest, Sequence[Scorer]]:
        """The system and scorers; with a ``gate``, the scorers' model calls pass it."""
        ...


HEARTBEAT_S = 15.0
"""How often a running run renews its lease (a lease goes stale after a minute)."""

_LINGER_SECONDS = 0.05
"""The least time between two writes of results: at most 20 transactions a second."""

MAX_WAITING = 20_000
"""Results that may wait for the writer at once: past that, whoever hands in the next
one (a pool's worker, the Ray engine taking in a batch) waits for the store, so a
cluster faster than the store fills no memory with results on their way to it."""


async def _call_with_retries(
    system: SystemUnderTest,
    example: Example,
    config: RunConfig,
    policy: RetryPolicy,
    budget: RetryBudget | None,
    rng: random.Random,
    gate: Callable[[], contextlib.AbstractAsyncContextManager[None]] | None = None,
) -> tuple[Any, SystemUnderTestError | None, float, int]:
    attempt = 0
    if budget is not None:
        budget.record_attempt()
    # A system that bounds every call itself within the run's timeout (the http system:
    # its client's time limit) needs no second timer per call from us.
    bounded = getattr(system, "call_timeout", None)
    own_timer = not (isinstance(bounded, int | float) and bounded <= config.timeout)
    # A system that answers from the example itself (precomputed outputs) says so.
    answer = getattr(system, "answer", None)
    while True:
        attempt += 1
        started = time.perf_counter()
        error: SystemUnderTestError
        try:
            # Every attempt is a request: on a cluster each holds the system's shared
            # limits (a rate token), taken before its latency is measured.
            async with gate() if gate is not None else contextlib.nullcontext():
                started = time.perf_counter()
                call = answer(example) if answer is not None else system(dict(example.input))
                if own_timer:
                    # asyncio.timeout, unlike wait_for, does not wrap the call in a new task.
                    async with asyncio.timeout(config.timeout):
                        prediction = await call
                else:
                    prediction = await call
            return prediction, None, (time.perf_counter() - started) * 1000, attempt
        except TimeoutError:
            error = SystemTimeout(f"no answer within {config.timeout:g}s")
        except SystemUnderTestError as exc:
            error = exc
        except Exception as exc:  # a system that breaks the Protocol must not break the run
            error = SystemCrashed(f"{type(exc).__name__}: {exc}")
        latency_ms = (time.perf_counter() - started) * 1000
        if not policy.should_retry(error, attempt, budget):
            return None, error, latency_ms, attempt
        await asyncio.sleep(policy.delay(error, attempt, rng))


async def _score_pair(
    system: SystemUnderTest,
    scoring: _Scoring,
    example: Example,
    repetition: int,
    config: RunConfig,
    retry: tuple[RetryPolicy, RetryBudget | None],
    rng: random.Random,
    gate: Callable[[], contextlib.AbstractAsyncContextManager[None]] | None = None,
) -> PairResult:
    policy, budget = retry
    answered, error, latency_ms, attempts = await _call_with_retries(
        system, example, config, policy, budget, rng, gate
    )
    output: Output | None = None
    if error is None:
        try:
            output = Output.coerce(answered)
        except ValueError as exc:
            error = InvalidSystemResponse(f"the system answered something unreadable: {exc}")
    if error is not None or output is None:
        return PairResult(
            example_id=example.id,
            repetition=repetition,
            passed=False,
            error_type=type(error).__name__,
            error_message=str(error)[:500],
            latency_ms=latency_ms,
            attempts=attempts,
        )
    scores = [await scorer(example, output) for scorer in scoring.scorers]
    return PairResult(
        example_id=example.id,
        repetition=repetition,
        output=output,
        scores=scores,
        passed=repetition_passed(scores, scoring.gating),
        latency_ms=latency_ms,
        attempts=attempts,
    )


class _Scoring:
    """The run's scorers and the names of those that gate."""

    def __init__(self, scorers: Sequence[Scorer]) -> None:
        self.scorers = list(scorers)
        self.gating = frozenset(s.spec.label for s in scorers if s.spec.gating)


def default_scorers(config: RunConfig) -> list[Scorer]:
    """The scorers of a run that names none: ``label`` with the run's label map."""
    return [label_scorer(label_map=config.label_map)]


class PairWork:
    """The pairs of a run as an engine's work: each pair through the system, then every
    scorer, a fixed pool of ``concurrency`` workers keeping pairs in flight.

    Given the run's ``system`` and scorers it runs them in this process; its portable
    form carries only ``parts`` (see :data:`RunParts`) and builds them where it runs.
    """

    def __init__(
        self,
        system: SystemUnderTest | None,
        scorers: Sequence[Scorer] | None,
        config: RunConfig,
        *,
        parts: RunParts | None = None,
        concurrency: int | None = None,
        limit_key: str | None = None,
        gate: CallGate | None = None,
    ) -> None:
        self.system, self.scorers, self.config, self.parts = system, scorers, config, parts
        self._concurrency = concurrency or config.concurrency
        self._limit_key = limit_key
        self._gate = gate

    @property
    def concurrency(self) -> int:
        """Calls in flight at once."""
        return self._concurrency

    @property
    def limit_key(self) -> str | None:
        """The system every call goes to: calls to one system share one limit."""
        return self._limit_key

    def key(self, item: tuple[Example, int]) -> str:
        """The example's id: every repetition of an example lands in one batch."""
        return item[0].id

    def portable(self) -> PairWork:
        """This work without the live system and scorers, rebuilt from ``parts``.

        Raises:
            InputError: The run was given a system object, not a description to build.
        """
        if self.parts is None:
            raise InputError(
                "this run's system was given as an object: an engine that runs it in "
                "other processes needs it built from a description (the local engine runs it)"
            )
        return PairWork(
            None,
            None,
            self.config,
            parts=self.parts,
            concurrency=self._concurrency,
            limit_key=self._limit_key,
        )

    def limited(self, concurrency: int) -> PairWork:
        """The same work with at most ``concurrency`` calls in flight."""
        return PairWork(
            self.system,
            self.scorers,
            self.config,
            parts=self.parts,
            concurrency=max(1, concurrency),
            limit_key=self._limit_key,
            gate=self._gate,
        )

    def gated(self, gate: CallGate) -> PairWork:
        """The same work with every system call, and its scorers' model calls, passing
        ``gate`` (a cluster's shared limits); only a work built from ``parts`` gates its
        scorers, which are built with it."""
        return PairWork(
            self.system,
            self.scorers,
            self.config,
            parts=self.parts,
            concurrency=self._concurrency,
            limit_key=self._limit_key,
            gate=gate,
        )

    async def run(
        self, items: Iterable[tuple[Example, int]], emit: Callable[[PairResult], Awaitable[None]]
    ) -> None:
        """Score every pair, awaiting ``emit`` with each result as it completes."""
        system, scorers = self.system, self.scorers
        if system is None or scorers is None:
            if self.parts is None:
                raise InputError("a pair work needs a system and scorers, or parts to build them")
            system, scorers = self.parts(self._gate) if self._gate else self.parts()
        gate, key = self._gate, self._limit_key
        system_gate = functools.partial(gate, key) if gate is not None and key else None
        async with _opened(system, scorers):
            await _score_all(
                system, _Scoring(scorers), items, self.config, self._concurrency, emit, system_gate
            )


@contextlib.asynccontextmanager
async def _opened(system: SystemUnderTest, scorers: Sequence[Scorer]) -> AsyncIterator[None]:
    """The system opened (its connections) and the scorers closed (their providers) after."""
    async with contextlib.AsyncExitStack() as stack:
        for scorer in scorers:  # model scorers close their providers
            close = getattr(scorer, "aclose", None)
            if callable(close):
                stack.push_async_callback(close)
        if hasattr(system, "__aenter__"):
            await stack.enter_async_context(system)  # type: ignore[arg-type]
        yield


async def _score_all(
    system: SystemUnderTest,
    scoring: _Scoring,
    items: Iterable[tuple[Example, int]],
    config: RunConfig,
    concurrency: int,
    emit: Callable[[PairResult], Awaitable[None]],
    gate: Callable[[], contextlib.AbstractAsyncContextManager[None]] | None = None,
) -> None:
    """Run ``items`` with ``concurrency`` workers; emit each result as it completes."""
    work: asyncio.Queue[tuple[Example, int]] = asyncio.Queue()
    for pair in items:
        work.put_nowait(pair)
    # The jitter of retries only spaces calls out: no result depends on it.
    rng = random.Random(config.seed)
    budget = RetryBudget(ratio=config.retry_budget) if config.retry_budget is not None else None
    retry = (RetryPolicy(retries=config.retries), budget)
    # A system that may not suspend (a plain sync function) would starve the writer until
    # the very end: after each of its results the worker yields, so each is stored as it
    # lands. A system that always suspends (network I/O) lets the writer run anyway.
    must_yield = not getattr(system, "always_suspends", False)

    async def worker() -> None:
        while True:
            try:
                example, repetition = work.get_nowait()
            except asyncio.QueueEmpty:
                return
            pair = await _score_pair(system, scoring, example, repetition, config, retry, rng, gate)
            await emit(pair)
            if must_yield:
                await asyncio.sleep(0)

    async with asyncio.TaskGroup() as group:
        for _ in range(min(concurrency, work.qsize())):
            group.create_task(worker())


async def _execute(
    engine: Engine,
    work: PairWork,
    pairs: Sequence[tuple[Example, int]],
    *,
    store: RunStore | None,
    run_id: str | None,
    sink: ResultColumns,
    progress: ProgressCallback | None,
    already_done: int,
    total: int,
) -> None:
    """Run ``pairs`` on ``engine``; persist each result as soon as it arrives, and
    keep in ``sink`` only what the report reads of it (the store keeps it whole)."""
    finished: asyncio.Queue[PairResult | None] = asyncio.Queue()
    room = asyncio.Semaphore(MAX_WAITING)
    done = already_done

    async def arrived(result: PairResult) -> None:
        await room.acquire()
        if writer_task.done():  # the store failed: end the run with its error
            writer_task.result()
        finished.put_nowait(result)

    async def writer() -> None:
        try:
            await write()
        except BaseException:
            for _ in range(MAX_WAITING):  # whoever waits for room sees the failure
                room.release()
            raise

    async def write() -> None:
        nonlocal done
        loop = asyncio.get_running_loop()
        last_write = -_LINGER_SECONDS
        while True:
            batch: list[PairResult] = []
            # Results that land within the linger of the last write wait to share one
            # transaction with their neighbours: a transaction costs far more than a row.
            pause = last_write + _LINGER_SECONDS - loop.time()
            if pause > 0:
                await asyncio.sleep(pause)
            item = await finished.get()
            closing = item is None
            if item is not None:
                batch.append(item)
            while not finished.empty():
                nxt = finished.get_nowait()
                if nxt is None:
                    closing = True
                else:
                    batch.append(nxt)
            if batch:
                if store is not None and run_id is not None:
                    last_write = loop.time()
                    await asyncio.to_thread(store.add_results, run_id, batch)
                sink.extend(batch)
                for _ in batch:
                    room.release()
                done += len(batch)
                if progress is not None:
                    progress(done, total)
            if closing:
                return

    writer_task = asyncio.create_task(writer())
    try:
        if pairs:
            await engine.run(work, pairs, arrived)
    finally:
        finished.put_nowait(None)
        # Shielded so that results already finished reach the store even on cancellation.
        await asyncio.shield(writer_task)


_RUN_PARAMS = {
    "k": NumberRange(1, integer=True),
    "concurrency": NumberRange(1, integer=True),
    "timeout": NumberRange(0, open_min=True),
    "retries": NumberRange(0, integer=True),
    "limit": NumberRange(1, integer=True, optional=True),
    "seed": NumberRange(integer=True),
}


@validate_params(_RUN_PARAMS, owner="run_eval")
async def run_eval_async(
    system: SystemUnderTest,
    dataset: Dataset,
    *,
    k: int = 1,
    concurrency: int = 16,
    timeout: float = 30.0,  # noqa: ASYNC109 - a per-call timeout, part of the public API
    retries: int = 2,
    label_map: Mapping[str, str] | None = None,
    limit: int | None = None,
    seed: int = 0,
    scorers: Sequence[Scorer] | None = None,
    cache: bool | None = None,
    name: str | None = None,
    tags: Mapping[str, str] | None = None,
    eval_file_hash: str | None = None,
    gate: RunGate | None = None,
    store: RunStore | None = None,
    progress: ProgressCallback | None = None,
    on_start: Callable[[str], None] | None = None,
    telemetry: Telemetry | None = None,
    engine: Engine | None = None,
    parts: RunParts | None = None,
) -> Report:
    """Run ``dataset`` through ``system`` ``k`` times and score every output.

    Failures of the system are recorded per pair and never raised; so are failures of a
    scorer (an errored score). With a ``store``, each result is committed as it
    completes and the run can be resumed with ``resume_eval`` after any interruption.

    Args:
        system: The system under test.
        dataset: Labelled examples.
        k: Repetitions per example (for pass^k).
        concurrency: Calls in flight at once.
        timeout: Seconds one call may take.
        retries: Extra attempts for retryable failures.
        label_map: Mapping applied to both sides before comparison (e.g. graded → binary),
            for the default ``label`` scorer.
        limit: Only the first ``limit`` examples.
        seed: Seed of the bootstrap intervals and retry jitter.
        scorers: Built scorers (``ScorerRegistry.build``, or a factory called with its
            arguments); None: ``label`` with ``label_map``. A repetition passes when no
            gating scorer failed and one passed.
        cache: Whether model scorers may answer from the cache (stored with the run);
            None: only when ``k`` is 1.
        name: A name for the stored run.
        tags: Tags for the stored run.
        eval_file_hash: sha256 of the eval file the run comes from, stored with it.
        gate: The gate the run must pass, stored with it so a resume applies it too
            (the caller gates the finished run: ``arbiter run`` does).
        store: Where to persist the run (a :class:`arbiter.store.Store`, or any
            :class:`~arbiter.harness.sink.RunStore`); None keeps results in memory only.
        progress: Called with ``(done, total)`` after each completed pair.
        on_start: Called with the run id once the run is stored (to tell the user how
            to resume it).
        telemetry: Where the run's span ``arbiter.run_eval`` and its figures (gauge
            ``arbiter.harness.metric``) go; nothing is recorded when None.
        engine: Where the pairs run (:mod:`arbiter.engines`); None: this process.
        parts: How another process builds the system and scorers (see
            :data:`RunParts`); needed by an engine that runs pairs elsewhere.

    Returns:
        The report, with ``run_id`` set when a store was given.

    Raises:
        InvalidParameter: An option is out of range (an ``InputError``).

    Examples:
        >>> from arbiter.systems.python import PythonSystem
        >>> system = PythonSystem("arbiter.demo.classifier:classify")
        >>> report = run_eval(system, dataset)  # doctest: +SKIP
    """
    engine = engine or LocalEngine()
    config = _config(
        k=k,
        concurrency=concurrency,
        timeout=timeout,
        retries=retries,
        label_map=dict(label_map) if label_map else None,
        limit=limit,
        seed=seed,
        cache=cache,
        eval_file_hash=eval_file_hash,
        gate=gate,
        engine=engine.name,
    )
    chosen = list(scorers) if scorers is not None else default_scorers(config)
    if not chosen:
        raise invalid("scorers", "run_eval", "a non-empty list of scorers", chosen)
    _check_names(chosen)
    config.scorers = [scorer.spec for scorer in chosen]
    examples = dataset.examples[: config.limit] if config.limit else list(dataset.examples)
    description = describe_system(system)
    run_id: str | None = None
    lease: Lease | None = None
    if store is not None:
        run_id = await asyncio.to_thread(
            store.create_run,
            dataset=dataset,
            system=description,
            config=config.model_dump(mode="json"),
            n_pairs=len(examples) * config.k,
            name=name,
            tags=dict(tags or {}),
        )
        lease = await asyncio.to_thread(store.acquire_lease, run_id)
        if on_start is not None:
            on_start(run_id)
    pairs = RunPairs(examples, config.k)
    run = _run_pairs(
        engine,
        PairWork(system, chosen, config, parts=parts, limit_key=_limit_key(description)),
        dataset,
        examples,
        pairs,
        config,
        description,
        store=store,
        run_id=run_id,
        lease=lease,
        progress=progress,
        prior=[],
    )
    return await _observed(run, telemetry, dataset.name, description, config.k, run_id)


def _config(**options: Any) -> RunConfig:
    try:
        return RunConfig(**options)
    except ValidationError as exc:  # what the declared checks let through (a label map)
        first = exc.errors(include_url=False)[0]
        name = format_loc(first["loc"], RunConfig) or "options"
        rule = f"valid ({describe_validation_error(exc, RunConfig)})"
        raise invalid(name, "run_eval", rule, first.get("input")) from None


async def _heartbeat(lease: Lease) -> None:
    """Renew the lease until cancelled, so other processes see this run is alive."""
    while True:
        await asyncio.sleep(HEARTBEAT_S)
        with contextlib.suppress(Exception):  # a missed beat is retried at the next one
            await asyncio.to_thread(lease.renew)


def _check_names(scorers: Sequence[Scorer]) -> None:
    seen: set[str] = set()
    for scorer in scorers:
        label = scorer.spec.label
        if label in seen:
            raise invalid(
                "scorers", "run_eval", f"scorers with distinct names (two are {label!r})", label
            )
        seen.add(label)


def _limit_key(description: Mapping[str, Any]) -> str:
    return describe_system_short(description)


async def _run_pairs(
    engine: Engine,
    work: PairWork,
    dataset: Dataset,
    examples: Sequence[Example],
    pairs: Sequence[tuple[Example, int]],
    config: RunConfig,
    description: Mapping[str, Any],
    *,
    store: RunStore | None,
    run_id: str | None,
    lease: Lease | None,
    progress: ProgressCallback | None,
    prior: list[PairResult],
    prior_elapsed: float = 0.0,
) -> Report:
    specs = [s.spec for s in work.scorers] if work.scorers is not None else config.scorers or []
    results = ResultColumns(examples, [spec.label for spec in specs])
    results.extend(prior)
    already_done = len(prior)
    prior.clear()  # kept in the columns: a resumed big run must not hold every result twice
    total = len(examples) * config.k
    status: RunStatus = "failed"
    segment: int | None = None
    beating: asyncio.Task[None] | None = None
    try:
        if store is not None and run_id is not None:
            segment = await asyncio.to_thread(store.start_segment, run_id)
        if lease is not None:
            beating = asyncio.create_task(_heartbeat(lease))
        started = time.perf_counter()
        try:
            await _execute(
                engine,
                work,
                pairs,
                store=store,
                run_id=run_id,
                sink=results,
                progress=progress,
                already_done=already_done,
                total=total,
            )
            status = "completed" if results.added >= total else "failed"
        except (asyncio.CancelledError, KeyboardInterrupt):
            status = "interrupted"
            raise
        finally:
            elapsed = time.perf_counter() - started
            if store is not None and run_id is not None and segment is not None:
                store.end_segment(run_id, segment, status, elapsed_seconds=elapsed)
    finally:
        if beating is not None:
            beating.cancel()
        if lease is not None:
            lease.release()
    report = build_report(
        examples,
        results,
        dataset_name=dataset.name,
        dataset_hash=dataset.content_hash,
        system=describe_system_short(description),
        k=config.k,
        seed=config.seed,
        scorers=specs,
        run_id=run_id,
        elapsed_seconds=prior_elapsed + elapsed,
        status=status,
        completeness=Completeness(done=results.added, expected=total),
    )
    if store is not None and run_id is not None:
        await asyncio.to_thread(store.save_summary, run_id, run_summary(report))
    return report


async def _observed(
    run: Awaitable[Report],
    telemetry: Telemetry | None,
    dataset_name: str,
    description: Mapping[str, Any],
    k: int,
    run_id: str | None,
) -> Report:
    """Await ``run`` inside a span ``arbiter.run_eval``, then record the report's figures."""
    telemetry = telemetry or Telemetry.disabled()
    attributes = {"dataset": dataset_name, "system": describe_system_short(description)}
    with telemetry.span("arbiter.run_eval", {**attributes, "k": k}) as span:
        if run_id is not None:
            span.set_attribute("run_id", run_id)
        report = await run
        span.set_attribute("n_examples", report.n_examples)
    figures = {
        # The label accuracy where the run has one (as before scorers), else the outcome.
        "accuracy": (report.strict or report).accuracy.estimate,
        "mapped_accuracy": report.mapped.accuracy.estimate if report.mapped else None,
        "pass_hat_k": report.pass_hat_k.estimate,
        "error_rate": report.error_rate,
    }
    for name, value in figures.items():
        if value is not None:
            telemetry.record_run_metric(name, value, attributes)
    return report


async def resume_eval_async(
    store: RunStore,
    run_id: str,
    system: SystemUnderTest,
    *,
    scorers: Sequence[Scorer] | None = None,
    progress: ProgressCallback | None = None,
    telemetry: Telemetry | None = None,
    engine: Engine | None = None,
    parts: RunParts | None = None,
) -> Report:
    """Continue a stored run: only its missing (example, repetition) pairs are run.

    The run is leased first: while another live process executes it, the resume is
    refused before the system is called.

    Args:
        store: The store holding the run.
        run_id: Id (or unique prefix) of the run.
        system: The system under test, rebuilt from the run's stored description.
        scorers: The run's scorers, rebuilt from its stored specs (a registry's
            ``build_all``); None: the built-in scorers the specs name.
        progress: Called with ``(done, total)`` after each completed pair.
        telemetry: As for :func:`run_eval_async`.
        engine: Where the missing pairs run; None: this process (a run started on one
            engine resumes on any: no result depends on where a pair ran).
        parts: As for :func:`run_eval_async`.

    Raises:
        StoreError: No such run.
        RunBusy: Another live process is executing the run.
    """
    info = await asyncio.to_thread(store.get_run, run_id)
    lease = await asyncio.to_thread(store.acquire_lease, info.id)
    try:
        config = info.run_config
        dataset = await asyncio.to_thread(store.load_dataset, info.dataset_hash)
        examples = dataset.examples[: config.limit] if config.limit else list(dataset.examples)
        prior = await asyncio.to_thread(store.results, info.id)
    except BaseException:
        lease.release()
        raise
    try:
        chosen = list(scorers) if scorers is not None else stored_scorers(config)
        if [s.spec for s in chosen] != (config.scorers or [s.spec for s in chosen]):
            raise invalid("scorers", "resume_eval", "the scorers the run was started with", chosen)
    except BaseException:
        lease.release()
        raise
    done = {(r.example_id, r.repetition) for r in prior}
    pairs = [(e, rep) for e in examples for rep in range(config.k) if (e.id, rep) not in done]
    run = _run_pairs(
        engine or LocalEngine(),
        PairWork(system, chosen, config, parts=parts, limit_key=_limit_key(info.system)),
        dataset,
        examples,
        pairs,
        config,
        info.system,
        store=store,
        run_id=info.id,
        lease=lease,
        progress=progress,
        prior=prior,
        prior_elapsed=info.elapsed_seconds,
    )
    return await _observed(run, telemetry, dataset.name, info.system, config.k, info.id)


def stored_scorers(
    config: RunConfig,
    registry: ScorerRegistry | None = None,
    *,
    context: ScoringContext | None = None,
) -> list[Scorer]:
    """The scorers a stored run used, rebuilt from its specs (``label`` for older runs).

    Raises:
        InputError: A spec names a scorer the registry does not know, or another version.
    """
    if not config.scorers:
        return default_scorers(config)
    registry = registry or ScorerRegistry.default()
    return list(registry.build_all(config.scorers, context=context))


def run_eval(system: SystemUnderTest, dataset: Dataset, **options: Any) -> Report:
    """Sync wrapper of :func:`run_eval_async`; same arguments."""
    return asyncio.run(run_eval_async(system, dataset, **options))


def resume_eval(store: RunStore, run_id: str, system: SystemUnderTest, **options: Any) -> Report:
    """Sync wrapper of :func:`resume_eval_async`; same arguments."""
    return asyncio.run(resume_eval_async(store, run_id, system, **options))
