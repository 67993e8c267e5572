"""Agent trajectories: importers of traces and agent logs as ``Trajectory`` values.

- :mod:`~arbiter.trajectories.openai_messages`: OpenAI chat conversations with ``tool_calls``.
"""

from arbiter.trajectories.openai_messages import load_openai_messages, parse_openai_messages

__all__ = ["load_openai_messages", "parse_openai_messages"]
