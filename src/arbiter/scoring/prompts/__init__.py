"""Versioned prompt files of the model scorers: ``*.md`` for people, ``*_vN.txt`` the
exact text sent to the model."""
