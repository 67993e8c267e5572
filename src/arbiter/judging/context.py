"""The shared context of judging calls: providers, the model-call cache, budget, meter.

Every judging call goes through a :class:`JudgingContext`. It builds each provider once
(one connection pool and concurrency limit per name, shared by every judge of a run),
puts it behind the model-call cache when the context uses one (the mock, which answers
for free, never is), refuses calls once its :class:`CallBudget` is spent, and adds
every call's record to its :class:`CallMeter` the moment the call returns, so a caller
that is cut off still counts what it paid for. The context owns what it builds:
:meth:`JudgingContext.aclose` closes it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from pydantic import BaseModel

from arbiter.contract import ModelCalls
from arbiter.judging.ask import Ask, Judged, ask

if TYPE_CHECKING:
    import httpx

    from arbiter.config import Settings
    from arbiter.engines.base import CallGate
    from arbiter.judging.model import ModelRef
    from arbiter.providers.base import Provider
    from arbiter.providers.cache import AnswerCache, ResponseCache
    from arbiter.providers.registry import ProviderRegistry

__all__ = ["CallBudget", "CallMeter", "JudgingContext"]

A = TypeVar("A", bound=BaseModel)


@dataclass
class CallMeter:
    """Model calls summed as each returns (so a cut-off keeps what finished).

    Safe to share between threads: one run may judge on several event loops.
    """

    total: ModelCalls = field(default_factory=ModelCalls)
    """Every call so far."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, calls: ModelCalls) -> None:
        """Count one more call's record."""
        with self._lock:
            self.total = self.total + calls


@dataclass(frozen=True)
class CallBudget:
    """The most a context may spend; a call past it is refused, never made.

    Examples:
        >>> CallBudget(max_calls=2).spent(ModelCalls(calls=2))
        'the budget of 2 model calls is spent'
    """

    max_calls: int | None = None
    """Most calls (cached ones included); None: no limit."""
    max_cost_usd: float | None = None
    """Most dollars; None: no limit. Calls of unknown cost count as nothing."""

    def spent(self, total: ModelCalls) -> str | None:
        """Why no further call may be made after ``total``; None while one may."""
        if self.max_calls is not None and total.calls >= self.max_calls:
            return f"the budget of {self.max_calls} model calls is spent"
        cost = total.cost_usd or 0.0
        if self.max_cost_usd is not None and cost >= self.max_cost_usd:
            return f"the budget of ${self.max_cost_usd:g} is spent (${cost:.4f})"
        return None


@dataclass
class JudgingContext:
    """How judging calls reach models: settings, registry, cache, budget and meter.

    Examples:
        >>> context = JudgingContext(use_cache=False)
        >>> context.provider("mock").name
        'mock'
    """

    settings: Settings | None = None
    """The settings providers are built from; None: read from the environment once."""
    providers: ProviderRegistry | None = None
    """The provider registry; None: the default one."""
    use_cache: bool = True
    """Whether model requests may be answered from the on-disk cache."""
    cache: ResponseCache | None = None
    """The model-call cache; None: the table of ``cache_url`` when given, else the
    file ``settings.model_cache_path()`` names, opened on the first lookup."""
    cache_url: str | None = None
    """A database (the run store's URL) whose ``model_responses`` table is the cache
    when no ``cache`` is given: what the workers of a cluster share."""
    transport: httpx.AsyncBaseTransport | None = None
    """An httpx transport for every provider built here (tests); None: the network."""
    budget: CallBudget = field(default_factory=CallBudget)
    """The most this context may spend; by default no limit."""
    meter: CallMeter = field(default_factory=CallMeter)
    """Every call made through this context, summed."""
    given: dict[str, Provider] = field(default_factory=dict)
    """Providers by name owned by the caller (tests, a jury's injected providers): used
    as they are, never cached, never closed here."""
    gate: CallGate | None = None
    """What every call that reaches a provider built here passes (a cluster's shared
    limits, by provider name); None: nothing. An answer from the cache passes nothing."""
    _built: dict[str, Provider] = field(default_factory=dict, init=False, repr=False)
    _owned_cache: AnswerCache | None = field(default=None, init=False, repr=False)

    def resolved_settings(self) -> Settings:
        """The settings in use (read from the environment on first need)."""
        if self.settings is None:
            from arbiter.config import Settings

            self.settings = Settings()
        return self.settings

    def registry(self) -> ProviderRegistry:
        """The provider registry in use (the default one unless given)."""
        if self.providers is None:
            from arbiter.providers.registry import ProviderRegistry

            self.providers = ProviderRegistry.default()
        return self.providers

    def response_cache(self) -> AnswerCache:
        """The model-call cache in use (nothing is opened until it is first asked)."""
        if self.cache is not None:
            return self.cache
        if self._owned_cache is None:
            if self.cache_url is not None:
                from arbiter.providers.cache_sql import SqlResponseCache

                self._owned_cache = SqlResponseCache(self.cache_url)
            else:
                from arbiter.providers.cache import ResponseCache

                self._owned_cache = ResponseCache(self.resolved_settings().model_cache_path())
        return self._owned_cache

    def provider(self, name: str) -> Provider:
        """The provider ``name``, built once per context; behind the cache if ``use_cache``.

        Raises:
            InputError: No provider has that name (the message lists the known ones).
        """
        if name in self.given:
            return self.given[name]
        built = self._built.get(name)
        if built is None:
            built = self.registry().build(name, self.resolved_settings(), transport=self.transport)
            if self.gate is not None:
                from arbiter.judging.gated import GatedProvider

                built = GatedProvider(built, self.gate)
            # A provider that answers for free (the mock) says so: caching it only writes.
            if self.use_cache and getattr(built, "cacheable", True):
                from arbiter.providers.cache import CachedProvider

                built = CachedProvider(built, self.response_cache())
            self._built[name] = built
        return built

    def family(self, ref: ModelRef) -> str:
        """The vendor of ``ref``: its own family when given, else the registry entry's."""
        if ref.family and ref.family != ref.provider:
            return ref.family
        return self.registry().family(ref.provider)

    def can_call(self, ref: ModelRef) -> bool:
        """Whether the settings hold the credentials ``ref``'s provider needs."""
        if ref.provider in self.given:
            return True
        return self.registry().has_credentials(ref.provider, self.resolved_settings())

    def budget_refusal(self) -> str | None:
        """Why the budget refuses another call; None while it allows one."""
        return self.budget.spent(self.meter.total)

    async def ask(
        self, ref: ModelRef, question: Ask[A], *, meter: CallMeter | None = None
    ) -> Judged[A]:
        """Ask one model one structured question (:func:`arbiter.judging.ask.ask`).

        Never raises for the call; its record is added to this context's meter and to
        ``meter`` as soon as it returns.
        """
        judged = await ask(self, ref, question)
        self.meter.add(judged.calls)
        if meter is not None:
            meter.add(judged.calls)
        return judged

    async def aclose(self) -> None:
        """Close the providers' connections and the cache this context opened.

        Safe to call more than once; a provider used again afterwards reconnects.
        """
        from arbiter.providers.base import close_provider

        for provider in self._built.values():
            await close_provider(provider)
        if self._owned_cache is not None:
            self._owned_cache.close()
