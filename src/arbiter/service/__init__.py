"""Orchestration as library functions, shared by the command line and a server.

- :mod:`~arbiter.service.runs`: start, resume, read back, compare and gate offline runs;
- :mod:`~arbiter.service.jury`: choose critics and cases, judge and store, replay;
- :mod:`~arbiter.service.online`: score a file of unlabelled predictions.

They take callbacks for progress, never print and never start an event loop: the caller
owns the loop (``asyncio.run`` at the command line, the server's own loop there).
"""
