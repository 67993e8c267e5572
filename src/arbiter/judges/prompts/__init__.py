"""Versioned judge prompts: ``NAME.md`` for people, ``NAME.txt`` the exact text for the model."""
