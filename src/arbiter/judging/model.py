"""A model reference: which model judges, through which provider, under which bounds."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["ModelRef", "Price"]

Price = tuple[float, float]
"""USD per million input tokens and per million output tokens."""


class ModelRef(BaseModel):
    """One model a judging call goes to: provider, model, vendor, and the call's bounds.

    The family (vendor) is the provider registry's (:meth:`ProviderRegistry.family
    <arbiter.providers.registry.ProviderRegistry.family>`) unless given, and whether the
    model can be called at all is the registry entry's credential check
    (:meth:`~arbiter.judging.context.JudgingContext.can_call`).

    Examples:
        >>> ModelRef(provider="gemini", model="gemini-2.5-flash").family
        'google'
        >>> ModelRef(provider="mock").name
        'mock'
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: str = Field(min_length=1)
    """The provider's registered name (``openai``, ``anthropic``, ``llama_cpp``, ...)."""
    model: str | None = None
    """The model, as the provider names it (needed with any provider but ``mock``)."""
    family: str = ""
    """The vendor; empty: the one the provider is registered with."""
    timeout: float = Field(default=60.0, gt=0)
    """Seconds one call may take, the provider's retries included."""
    max_output_tokens: int = Field(default=1024, ge=64)
    """Upper bound of the answer's length."""
    price: Price | None = None
    """USD per million input and output tokens; None: the settings' price table."""

    @model_validator(mode="after")
    def _derive_family(self) -> ModelRef:
        if not self.family:
            from arbiter.providers.registry import BUILTIN_FAMILIES

            family = BUILTIN_FAMILIES.get(self.provider, self.provider)
            object.__setattr__(self, "family", family)
        if self.provider != "mock" and not self.model:
            raise ValueError(f"provider {self.provider!r} needs a model")
        return self

    @property
    def name(self) -> str:
        """``provider:model``, as votes, attempts and reasons name the model."""
        return f"{self.provider}:{self.model}" if self.model else self.provider

    @property
    def model_name(self) -> str:
        """The model as sent in the request (``mock`` for the mock without one)."""
        return self.model or "mock"
