"""The jury: fan one case out to every critic concurrently, then synthesize."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence

from arbiter.contract import Case, CriticOutcome, Verdict
from arbiter.judging import JudgingContext, Provider, close_provider
from arbiter.jury.critics import DEFAULT_ROSTER, CriticSpec, run_critic
from arbiter.jury.offline import OFFLINE_PROVIDER, run_offline_critic
from arbiter.jury.synthesis import synthesize
from arbiter.params import check_number

__all__ = ["Jury"]

ProviderFactory = Callable[[str], Provider]


class Jury:
    """Several critics and the code that turns their critiques into a verdict.

    Critics on the ``mock`` provider are the offline ones (the string detectors, run
    directly); every other critic asks its model through the judging layer.

    Args:
        critics: The roster, in the order results are kept.
        providers: Provider per name, owned by the caller; a name the mapping lacks is
            built by ``provider_factory``, else by ``context``.
        provider_factory: Builds a provider from its name; only called for names
            ``providers`` lacks. Providers it builds are the jury's: :meth:`aclose`
            closes them.
        context: The judging context the other providers come from (settings, cache,
            budget, meter); None: one without the model-call cache, owned by the jury.

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
        context: JudgingContext | None = None,
    ) -> None:
        names = [c.name for c in critics]
        if len(set(names)) != len(names):
            raise ValueError(f"critic names must be unique, got {names}")
        self.critics = tuple(critics)
        self._given: dict[str, Provider] = dict(providers or {})
        self._factory = provider_factory
        self._factory_built: list[str] = []
        self._owns_context = context is None
        self.context = context if context is not None else JudgingContext(use_cache=False)
        """Where the critics' calls go: every call's record lands in its meter."""

    def _context_for(self, name: str) -> JudgingContext:
        """The context whose provider ``name`` a critic asks (given or factory-built
        providers join the context as the caller's, never cached)."""
        if name not in self.context.given:
            if name in self._given:
                self.context.given[name] = self._given[name]
            elif self._factory is not None:
                self.context.given[name] = self._factory(name)
                self._factory_built.append(name)
        return self.context

    async def critique(self, case: Case) -> list[CriticOutcome]:
        """Every critic's outcome for one case, concurrently, in roster order."""
        return list(await asyncio.gather(*(self._one(spec, case) for spec in self.critics)))

    async def _one(self, spec: CriticSpec, case: Case) -> CriticOutcome:
        if spec.provider == OFFLINE_PROVIDER and spec.provider not in self._given:
            return run_offline_critic(spec.name, spec.lens, spec.model, case)
        return await run_critic(spec, self._context_for(spec.provider), case)

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
        built, self._factory_built = self._factory_built, []
        for name in built:
            await close_provider(self.context.given.pop(name))
        if self._owns_context:
            await self.context.aclose()

    async def __aenter__(self) -> Jury:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
