"""The jury: fan one case out to every critic concurrently, then synthesize."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence

from arbiter.contract import Case, CriticOutcome, Verdict
from arbiter.jury.critics import DEFAULT_ROSTER, CriticSpec, run_critic
from arbiter.jury.synthesis import synthesize
from arbiter.providers.base import Provider

__all__ = ["Jury"]

ProviderFactory = Callable[[str], Provider]


class Jury:
    """Several critics and the code that turns their critiques into a verdict.

    Args:
        critics: The roster, in the order results are kept.
        providers: Provider per name; a name the mapping lacks is built by
            ``provider_factory``.
        provider_factory: Builds a provider from its name (default: the registry, from
            ``Settings()``); only called for names ``providers`` lacks.

    Examples:
        >>> jury = Jury()  # three lenses on the deterministic mock provider
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
        self._providers: dict[str, Provider] = dict(providers or {})
        self._factory = provider_factory

    def provider(self, name: str) -> Provider:
        """The provider called ``name``, built once on first use."""
        if name not in self._providers:
            factory = self._factory or _default_factory
            self._providers[name] = factory(name)
        return self._providers[name]

    async def critique(self, case: Case) -> list[CriticOutcome]:
        """Every critic's outcome for one case, concurrently, in roster order."""
        return list(
            await asyncio.gather(
                *(run_critic(spec, self.provider(spec.provider), case) for spec in self.critics)
            )
        )

    async def judge_async(self, case: Case) -> Verdict:
        """Judge one case."""
        return synthesize(case.output, await self.critique(case))

    def judge(self, case: Case) -> Verdict:
        """Sync wrapper of :meth:`judge_async`."""
        return asyncio.run(self.judge_async(case))


def _default_factory(name: str) -> Provider:
    from arbiter.config import Settings
    from arbiter.providers.registry import make_provider

    return make_provider(name, Settings())
