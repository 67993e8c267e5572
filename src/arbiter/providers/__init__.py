"""LLM providers behind one Protocol and a registry; each vendor's module is imported lazily."""

from arbiter.providers.base import CompletionRequest, CompletionResponse, Provider, close_provider

__all__ = ["CompletionRequest", "CompletionResponse", "Provider", "close_provider"]
