"""The jury: fan one case out to every critic concurrently, then synthesize."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence

from arbiter.contract import Case, CriticOutcome, Verdict
from arbiter.jury.critics import DEFAULT_ROSTER, CriticSpec, run_critic
from arbiter.jury.offline import OFFLINE_PROVIDER, run_offline_critic
from arbiter.jury.synthesis import synthesize
from arbiter.params import check_number
from arbiter.providers.base import Provider, close_provider

__all__ = ["Jury"]

ProviderFactory = Callable[[str], Provider]


class Jury:
    """Several critics and the code that turns their critiques into a verdict.

    Critics on the ``mock`` provider are the offline ones (the string detectors, run
    directly); every other critic calls its provider.

    Args:
        critics: The roster, in the order results are kept.
        providers: Provider per name, owned by the caller; a name the mapping lacks is
            built by ``provider_factory``.
        provider_factory: Builds a provider from its name (default: the provider
            registry, from ``Settings()``); only called for names ``providers`` lacks.
            Providers it builds are the jury's: :meth:`aclose` closes them.

    Examples:
        >>> jury = Jury()  # three lenses on the offline detectors
        >>> verdict = jury.judge(case)  # doctest: +SKIP
    """

    def __init__(
        self,
        critics: Sequence[CriticSpec] = DEFAULT_ROSTER,
        *,
        providers: Mapping[str, Provider] | None = None,
        provider_factory: ProviderFactory | None = None,
    ) -> None:
        names = [c.name for c in critics]
        if len(set(names)) != len(names):
            raise ValueError(f"critic names must be unique, got {names}")
        self.critics = tuple(critics)
        self._given: dict[str, Provider] = dict(providers or {})
        self._built: dict[str, Provider] = {}
        self._factory = provider_factory

    def provider(self, name: str) -> Provider:
        """The provider called ``name``, built once on first use."""
        if name in self._given:
            return self._given[name]
        if name not in self._built:
            factory = self._factory or _default_factory
            self._built[name] = factory(name)
        return self._built[name]

    async def critique(self, case: Case) -> list[CriticOutcome]:
        """Every critic's outcome for one case, concurrently, in roster order."""
        return list(await asyncio.gather(*(self._one(spec, case) for spec in self.critics)))

    async def _one(self, spec: CriticSpec, case: Case) -> CriticOutcome:
        if spec.provider == OFFLINE_PROVIDER and spec.provider not in self._given:
            return run_offline_critic(spec.name, spec.lens, spec.model, case)
        return await run_critic(spec, self.provider(spec.provider), case)

    async def judge_async(self, case: Case) -> Verdict:
        """Judge one case. An output with no text is rejected without asking any critic:
        nothing in it could answer the task, and no model should be billed to say so."""
        if not case.output.strip():
            return synthesize(case.output, [])
        return synthesize(case.output, await self.critique(case))

    async def judge_many(
        self,
        cases: Sequence[Case],
        *,
        concurrency: int = 16,
        on_done: Callable[[Case, Verdict], None] | None = None,
    ) -> list[Verdict]:
        """Judge every case, ``concurrency`` at a time; verdicts come back in case order.

        Args:
            cases: The cases.
            concurrency: Cases judged at once.
            on_done: Called with each case and its verdict as soon as it is made (to
                store it), in completion order.
        """
        check_number(concurrency, "concurrency", "Jury.judge_many", minimum=1, integer=True)
        gate = asyncio.Semaphore(concurrency)

        async def one(case: Case) -> Verdict:
            async with gate:
                verdict = await self.judge_async(case)
            if on_done is not None:
                on_done(case, verdict)
            return verdict

        return list(await asyncio.gather(*(one(case) for case in cases)))

    def judge(self, case: Case) -> Verdict:
        """Sync wrapper of :meth:`judge_async`; closes the providers it built afterwards."""

        async def once() -> Verdict:
            try:
                return await self.judge_async(case)
            finally:
                await self.aclose()

        return asyncio.run(once())

    async def aclose(self) -> None:
        """Close the providers this jury built (those given to it are the caller's)."""
        built, self._built = list(self._built.values()), {}
        for provider in built:
            await close_provider(provider)

    async def __aenter__(self) -> Jury:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _default_factory(name: str) -> Provider:
    from arbiter.config import Settings
    from arbiter.providers.registry import ProviderRegistry

    return ProviderRegistry.default().build(name, Settings())
