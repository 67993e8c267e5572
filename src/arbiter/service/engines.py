"""Which engine a command runs on, and what its work needs to travel to a cluster.

``--engine local`` (the default) runs everything in this process, as Arbiter always
has; ``--engine ray`` runs the same code on a Ray cluster (:mod:`arbiter.engines`)::

    choice = EngineChoice("ray", ray_address="auto")
    with opened_engine(choice) as engine:
        parts = run_parts(plan.system, plan.headers, plan.scorers, use_cache=False)
        report = await start_run(system, dataset, config=config, store=store,
                                 engine=engine, parts=parts)

The work each command hands an engine lives beside what it runs:
:class:`~arbiter.harness.runner.PairWork` (runs, agent runs),
:class:`~arbiter.service.online_work.LineWork` (online batches),
:class:`~arbiter.service.agent_work.AgentScoreWork` (agent scoring). A worker rebuilds
what cannot travel from what can: the system from its stored
description (and the header values, which are sent to the workers, never stored), the
scorers from their specs, with the registry every command uses (plugins included).
"""

from __future__ import annotations

import contextlib
import functools
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arbiter.contract import ScorerSpec
from arbiter.engines.base import ENGINE_NAMES, CallGate, Engine, EngineName
from arbiter.engines.local import LocalEngine
from arbiter.engines.rate import CallLimit, LocalGate
from arbiter.errors import InputError
from arbiter.harness.runner import RunParts
from arbiter.scoring.base import Scorer, ScoringContext
from arbiter.systems.base import SystemUnderTest

__all__ = [
    "RATE_LIMIT_FORM",
    "SYSTEM",
    "EngineChoice",
    "agent_run_parts",
    "opened_engine",
    "parse_rate_limits",
    "run_parts",
]

SYSTEM = ""
"""The name a rate limit is given under when it is the run's system's (no ``NAME=``)."""

RATE_LIMIT_FORM = "[PROVIDER=]N/s or N/min, then optionally ,burst=B ,concurrency=C"
"""How a rate limit is written (``20/s``, ``openai=600/min,burst=5,concurrency=8``)."""

_RATE = re.compile(r"^(?:(?P<name>[A-Za-z0-9_.:-]+)=)?(?P<n>[0-9]*\.?[0-9]+)/(?P<per>s|min)$")


def parse_rate_limits(
    values: Sequence[str], *, where: str = "--rate-limit", calls_system: bool = True
) -> dict[str, CallLimit]:
    """Rate limits as written (:data:`RATE_LIMIT_FORM`), by name: :data:`SYSTEM` for the
    run's system, else a model provider's name (``openai``, ``llama_cpp``).

    Args:
        values: The limits as written.
        where: The option or key they were given as (errors name it).
        calls_system: False for a command that calls no system under test (``online
            score``): a limit without ``NAME=`` would limit nothing, so it is refused.

    Examples:
        >>> parse_rate_limits(["20/s", "openai=600/min,burst=5"])
        {'': CallLimit(concurrency=None, per_second=20.0, burst=1), \
'openai': CallLimit(concurrency=None, per_second=10.0, burst=5)}

    Raises:
        InputError: A value not of that form, a number out of range, a name twice, or a
            system's limit for a command that calls none.
    """
    limits: dict[str, CallLimit] = {}
    for value in values:
        head, *extras = str(value).strip().split(",")
        found = _RATE.match(head.strip())
        options: dict[str, int] = {}
        bad = found is None
        for extra in extras:
            key, _, number = extra.strip().partition("=")
            if key not in ("burst", "concurrency") or not number.isdigit() or key in options:
                bad = True
                break
            options[key] = int(number)
        if bad or found is None:
            raise InputError(f"{where} {value!r}: expected {RATE_LIMIT_FORM} (e.g. 20/s)")
        rate = float(found["n"]) / (60.0 if found["per"] == "min" else 1.0)
        name = found["name"] or SYSTEM
        if name == SYSTEM and not calls_system:
            raise InputError(
                f"{where} {value!r}: this command calls no system under test; name the "
                "model provider its limit is for (e.g. openai=20/s)"
            )
        try:
            limit = CallLimit(
                concurrency=options.get("concurrency"),
                per_second=rate,
                burst=options.get("burst", 1),
            )
        except ValueError as exc:
            raise InputError(f"{where} {value!r}: {exc}") from None
        if not math.isfinite(rate) or rate <= 0:
            raise InputError(f"{where} {value!r}: the rate must be above 0")
        if name in limits:
            which = "the system" if name == SYSTEM else repr(name)
            raise InputError(f"{where} {value!r}: a second rate limit for {which}")
        limits[name] = limit
    return limits


@dataclass(frozen=True)
class EngineChoice:
    """The engine a command was told to use."""

    name: EngineName = "local"
    """``local`` (this process) or ``ray``."""
    ray_address: str = "auto"
    """With ``ray``: ``auto`` (the cluster this machine knows, else a local one started
    for the command), ``local``, or a cluster's address."""
    rate_limits: tuple[tuple[str, CallLimit], ...] = ()
    """Limits on calls, by name (:func:`parse_rate_limits`): on a cluster shared by
    every worker, on the local engine by this process."""

    def limits(self, system: str | None) -> dict[str, CallLimit]:
        """The limits by the name calls give: the system's under its short description
        ``system`` (as the report's ``system`` line shows it), providers' under theirs."""
        named: dict[str, CallLimit] = {}
        for name, limit in self.rate_limits:
            if name != SYSTEM:
                named[name] = limit
            elif system:
                named[system] = limit
        return named

    def gate(self, system: str | None) -> LocalGate | None:
        """On the local engine with limits: the gate every call of the run passes (the
        engine's and the scorers' model calls'); else None (a cluster gates its workers)."""
        if self.name != "local" or not self.rate_limits:
            return None
        return LocalGate(self.limits(system))

    @classmethod
    def of(
        cls,
        name: str | None,
        ray_address: str | None,
        *,
        where: str = "--engine",
        rate_limits: Sequence[str] = (),
        calls_system: bool = True,
    ) -> EngineChoice:
        """A choice from options; ``--ray-address`` without ``--engine ray`` is refused.

        Args:
            name: ``local``, ``ray`` or None (local).
            ray_address: With ``ray``: the cluster's address; None: ``auto``.
            where: The option the engine was given as.
            rate_limits: ``--rate-limit`` values (:func:`parse_rate_limits`).
            calls_system: False when the command calls no system under test: a limit
                without ``NAME=`` is then refused (see :func:`parse_rate_limits`).

        Raises:
            InputError: An unknown engine, a Ray address for the local engine, or a rate
                limit not as :func:`parse_rate_limits` reads them.
        """
        limits = tuple(parse_rate_limits(rate_limits, calls_system=calls_system).items())
        chosen = name or "local"
        if chosen not in ENGINE_NAMES:
            raise InputError(f"{where} {chosen!r}: expected one of {', '.join(ENGINE_NAMES)}")
        if ray_address is not None and chosen != "ray":
            raise InputError("--ray-address is for --engine ray")
        engine: EngineName = "ray" if chosen == "ray" else "local"
        return cls(engine, ray_address or "auto", limits)


@contextlib.contextmanager
def opened_engine(
    choice: EngineChoice | None = None,
    *,
    system: str | None = None,
    gate: LocalGate | None = None,
) -> Iterator[Engine]:
    """The chosen engine, opened (connected to its cluster, or a local cluster started)
    for the block and closed after.

    Args:
        choice: The engine and its limits; None: the local engine, no limits.
        system: The short description of the system the work calls (its limits' name).
        gate: On the local engine, the gate of the run's limits (:meth:`EngineChoice.gate`),
            made once and given to its scorers too; None: made here.

    Raises:
        EngineError: Ray is not installed, or the cluster cannot be reached or started.
    """
    if choice is None or choice.name == "local":
        yield LocalEngine(gate or (choice.gate(system) if choice is not None else None))
        return
    from arbiter.engines.ray import RayEngine

    with RayEngine(choice.ray_address, limits=choice.limits(system)) as engine:
        yield engine


def run_parts(
    system: Mapping[str, Any],
    headers: Mapping[str, str] | None,
    scorers: Sequence[ScorerSpec],
    *,
    use_cache: bool,
    cache_url: str | None = None,
) -> RunParts:
    """How a worker builds a run's system and scorers: from the system's description,
    the header values and the scorers' specs (a picklable callable).

    Args:
        system: The system's description.
        headers: The header values (sent to the workers, never stored).
        scorers: The scorers' specs.
        use_cache: Whether model calls may be answered from the model-call cache.
        cache_url: The run store's URL: the workers' model-call cache is its
            ``model_responses`` table, which every worker shares; None: each worker's
            own cache file.
    """
    return functools.partial(
        _build_run_parts,
        dict(system),
        dict(headers or {}),
        list(scorers),
        use_cache,
        cache_url=_reachable(cache_url),
    )


def _reachable(url: str | None) -> str | None:
    """``url`` as a worker elsewhere reaches it: a relative SQLite path made absolute
    (a worker's working folder is not the driver's); an in-memory database, which no
    other process sees, is no shared cache (None)."""
    if url is None:
        return None
    from sqlalchemy.engine import make_url

    try:
        parsed = make_url(url)
    except Exception:  # the store opened it already: an unreadable URL is no cache
        return None
    if parsed.get_backend_name() != "sqlite":
        return url
    database = parsed.database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return parsed.set(database=str(Path(database).resolve())).render_as_string(hide_password=False)


def agent_run_parts(
    system: Mapping[str, Any], scorers: Sequence[ScorerSpec], *, use_cache: bool
) -> RunParts:
    """How a worker builds an agent run's executor and scorers (a picklable callable)."""
    return functools.partial(_build_agent_parts, dict(system), list(scorers), use_cache)


def _scorers(
    specs: Sequence[ScorerSpec],
    use_cache: bool,
    gate: CallGate | None = None,
    cache_url: str | None = None,
) -> list[Scorer]:
    from arbiter.service.scoring import scorer_registry

    context = ScoringContext(use_cache=use_cache, gate=gate, cache_url=cache_url)
    return list(scorer_registry().build_all(specs, context=context))


def _build_run_parts(
    system: dict[str, Any],
    headers: dict[str, str],
    specs: list[ScorerSpec],
    use_cache: bool,
    gate: CallGate | None = None,
    *,
    cache_url: str | None = None,
) -> tuple[SystemUnderTest, list[Scorer]]:
    from arbiter.systems.factory import build_system

    return build_system(system, headers=headers), _scorers(specs, use_cache, gate, cache_url)


def _build_agent_parts(
    system: dict[str, Any], specs: list[ScorerSpec], use_cache: bool, gate: CallGate | None = None
) -> tuple[SystemUnderTest, list[Scorer]]:
    from arbiter.trajectories.executors import AgentSystem, build_executor

    return AgentSystem(build_executor(system)), _scorers(specs, use_cache, gate)
