"""LLM providers behind one Protocol; each vendor's module is imported lazily."""

from arbiter.providers.base import CompletionRequest, CompletionResponse, Provider, Subject

__all__ = ["CompletionRequest", "CompletionResponse", "Provider", "Subject"]
