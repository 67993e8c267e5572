"""Versioned prompt files: ``*.md`` for people, ``*.txt`` the exact text for the model."""
