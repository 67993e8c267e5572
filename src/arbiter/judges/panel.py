"""A panel of judge models across vendors, and one call of it on one item.

:func:`build_panel` picks up to N judge configurations, one per provider *family* (a
family is a vendor: a panel of three OpenAI models shares their blind spots). Two
configurations of one family sit on the panel only when no other family is available,
and the panel says so. A configuration may opt out (``enabled=False``): an explicit
operator decision, never an eviction. An empty panel says by name why it is empty.

:meth:`Panel.ask` calls every member concurrently, each bounded by its own timeout; a
member that hangs, fails or answers something unreadable votes ``unknown`` for that
item, never raises. Every call goes through the judging layer
(:meth:`~arbiter.judging.context.JudgingContext.ask`: cache, retries, price table,
budget) and its record lands in a :class:`~arbiter.judging.context.CallMeter` the
moment it returns, so a caller that is cut off still counts what it paid for. A vendor's
family and whether its credentials are set are the provider registry's to say.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import ConfigDict, Field

from arbiter.contract import Evidence, ModelCalls
from arbiter.judges.consensus import Tally, tally
from arbiter.judges.verdicts import JudgeAnswer, MemberRuling, Vote, checked_ruling
from arbiter.judging import Ask, CallMeter, JudgingContext, ModelRef

if TYPE_CHECKING:
    from arbiter.config import Settings

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "CallMeter",
    "MemberVote",
    "Panel",
    "PanelModel",
    "PanelRuling",
    "build_panel",
]

DEFAULT_CALL_TIMEOUT = 20.0
"""Seconds one judge call may take by default, the provider's retries included."""

_MAX_ERROR = 300


class PanelModel(ModelRef):
    """One model that may sit on a judge panel: a model reference an operator may opt out.

    Examples:
        >>> PanelModel(provider="gemini", model="gemini-2.5-flash").family
        'google'
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    timeout: float = Field(default=DEFAULT_CALL_TIMEOUT, gt=0)
    """Seconds one call may take; past it the member votes ``unknown``."""
    enabled: bool = True
    """False opts this configuration out of every panel (the family may stay)."""

    @classmethod
    def parse(cls, value: str | Mapping[str, Any] | ModelRef) -> PanelModel:
        """A configuration from ``"provider[:model]"``, a mapping, or a model reference.

        Raises:
            ValueError: The value names no provider, or breaks a field's rule.
        """
        if isinstance(value, PanelModel):
            return value
        if isinstance(value, ModelRef):
            return cls.model_validate(value.model_dump())
        if isinstance(value, str):
            provider, _, model = value.partition(":")
            return cls(provider=provider.strip(), model=model.strip() or None)
        return cls.model_validate(value)


@dataclass(frozen=True)
class Panel:
    """The judge models chosen for a panel, and why any were left out."""

    members: tuple[PanelModel, ...]
    """The members, in the order their configurations were given."""
    shared_family: str | None = None
    """A family with two or more members, seated because no other family was available."""
    excluded: tuple[tuple[str, str], ...] = ()
    """``(configuration, why)`` for each configuration left out."""
    reason: str | None = None
    """Why the panel is empty; None when it has members."""

    @property
    def empty(self) -> bool:
        """Whether no model sits on the panel (its judges then abstain)."""
        return not self.members

    @property
    def call_timeout(self) -> float:
        """The longest a member may take: how long one panel call can last."""
        return max((m.timeout for m in self.members), default=0.0)

    def describe(self) -> str:
        """One line: the members, or the reason the panel is empty."""
        if self.reason is not None:
            return f"empty panel: {self.reason}"
        names = ", ".join(m.name for m in self.members)
        if self.shared_family is not None:
            return f"{names} (two of family {self.shared_family}: no other family available)"
        return names

    async def ask(
        self,
        context: JudgingContext,
        ask_for: Callable[[PanelModel], Ask[JudgeAnswer]],
        shown: Sequence[str],
        meter: CallMeter | None = None,
    ) -> PanelRuling:
        """Ask every member at once; each is bounded by its own timeout and never raises.

        Args:
            context: Where the members' providers come from (cache, retries, prices).
            ask_for: The question to put to a member.
            shown: The texts the judges were shown; their quotes are checked in these.
            meter: Where each call's record is added as it returns.
        """
        votes = await asyncio.gather(
            *(_ask_member(m, context, ask_for, shown, meter) for m in self.members)
        )
        return PanelRuling(votes=tuple(votes))


def build_panel(
    configs: Iterable[ModelRef | str | Mapping[str, Any]],
    *,
    max_members: int = 3,
    settings: Settings | None = None,
    credentials: Callable[[PanelModel], bool] | None = None,
    context: JudgingContext | None = None,
) -> Panel:
    """Choose up to ``max_members`` judge models, one per provider family.

    Configurations are taken in the order given: the first of each family that is
    enabled and has credentials is seated. Only when no other family is left are more
    configurations of a seated family added (up to ``max_members``), and the panel names
    that family in ``shared_family``.

    Args:
        configs: The judge configurations (``"provider:model"`` strings, mappings or
            model references).
        max_members: Most models seated.
        settings: The settings whose keys decide who has credentials; None: those of
            ``context``, else read from the environment (only when ``credentials`` is
            not given).
        credentials: Whether a configuration can be called; default: the provider
            registry entry's credential check.
        context: Whose provider registry tells families and credential checks apart;
            None: the default registry.

    Raises:
        ValueError: ``max_members`` is below 1, or a configuration is malformed.
    """
    if max_members < 1:
        raise ValueError(f"max_members must be at least 1; got {max_members}")
    parsed = [PanelModel.parse(c) for c in configs]
    if not parsed:
        return Panel(members=(), reason="no judge configuration given")
    if credentials is None:
        judging = JudgingContext(settings=settings or (context.settings if context else None))
        judging.providers = context.providers if context is not None else None
        credentials = judging.can_call
    if context is not None:
        # A plugin's family is its registry entry's, unless the configuration names one.
        parsed = [c.model_copy(update={"family": context.family(c)}) for c in parsed]
    excluded: list[tuple[str, str]] = []
    usable: list[PanelModel] = []
    for config in parsed:
        if not config.enabled:
            excluded.append((config.name, "opted out (enabled=false)"))
        elif not credentials(config):
            excluded.append((config.name, f"no credentials for provider {config.provider!r}"))
        else:
            usable.append(config)
    if not usable:
        return Panel(members=(), excluded=tuple(excluded), reason=_empty_reason(excluded))
    # Seats are positions in ``usable``: two equal configurations are two candidates.
    seated: list[int] = []
    for index, config in enumerate(usable):
        families = {usable[i].family for i in seated}
        if len(seated) < max_members and config.family not in families:
            seated.append(index)
    shared: str | None = None
    for index, config in enumerate(usable):
        if len(seated) >= max_members:
            break
        if index not in seated:  # every family is seated: doubling up is all that is left
            seated.append(index)
            shared = shared or config.family
    members = tuple(config for index, config in enumerate(usable) if index in seated)
    for index, config in enumerate(usable):
        if index not in seated:
            excluded.append((config.name, f"panel full ({max_members} members)"))
    return Panel(members=members, shared_family=shared, excluded=tuple(excluded))


def _empty_reason(excluded: Sequence[tuple[str, str]]) -> str:
    why = {reason for _, reason in excluded}
    if why == {"opted out (enabled=false)"}:
        return "every judge configuration opted out: " + ", ".join(n for n, _ in excluded)
    if all(reason.startswith("no credentials") for reason in why):
        return "no judge configuration has credentials: " + ", ".join(n for n, _ in excluded)
    return "no usable judge configuration: " + "; ".join(f"{n} {r}" for n, r in excluded)


@dataclass(frozen=True)
class MemberVote:
    """What one member of the panel said about one item."""

    member: str
    """The member's ``provider:model``."""
    vote: Vote
    """Its vote; ``unknown`` when it abstained, failed, hung or answered nonsense."""
    ruling: MemberRuling | None = None
    """Its parsed, checked answer; None when there was none to read."""
    error: str | None = None
    """Why it has no ruling (``timeout after 20s``, ``InvalidResponse: ...``)."""
    calls: ModelCalls = field(default_factory=ModelCalls)
    """What its call cost."""


@dataclass(frozen=True)
class PanelRuling:
    """The votes of a panel on one item, and what they add up to."""

    votes: tuple[MemberVote, ...]
    """One per member, in the panel's order."""

    @property
    def tally(self) -> Tally:
        """The count of pass / fail / unknown votes."""
        return tally(v.vote for v in self.votes)

    @property
    def passed(self) -> bool | None:
        """The consensus (:func:`arbiter.judges.consensus.consensus`)."""
        return self.tally.passed

    @property
    def calls(self) -> ModelCalls:
        """Every member's call, summed."""
        total = ModelCalls()
        for vote in self.votes:
            total = total + vote.calls
        return total

    @property
    def evidence(self) -> list[Evidence]:
        """The members' quotes, verified ones first, each once."""
        seen: dict[str, Evidence] = {}
        for vote in self.votes:
            for item in vote.ruling.evidence if vote.ruling else ():
                if item.quote not in seen:
                    seen[item.quote] = item
        return sorted(seen.values(), key=lambda e: e.verified is not True)


async def _ask_member(
    member: PanelModel,
    context: JudgingContext,
    ask_for: Callable[[PanelModel], Ask[JudgeAnswer]],
    shown: Sequence[str],
    meter: CallMeter | None,
) -> MemberVote:
    """One member's vote; whatever goes wrong is an ``unknown`` vote saying what."""
    judged = await context.ask(member, ask_for(member), meter=meter)
    if judged.answer is None:
        error = judged.error or "no answer"
        if judged.status == "timeout":
            error = f"timeout after {member.timeout:g}s"
        return MemberVote(member.name, "unknown", error=_clip(error), calls=judged.calls)
    ruling = checked_ruling(judged.answer, shown)
    return MemberVote(member.name, ruling.verdict, ruling=ruling, calls=judged.calls)


def _clip(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _MAX_ERROR else flat[:_MAX_ERROR] + " [...]"
