"""The ``arbiter`` command line (Typer); one module per command group."""

from arbiter.cli.main import main

__all__ = ["main"]
