"""Agent trajectories: importers of traces and agent logs as ``Trajectory`` values.

- :mod:`~arbiter.trajectories.openai_messages`: OpenAI chat conversations with ``tool_calls``;
- :mod:`~arbiter.trajectories.tau_bench`: τ-bench result records, trials with their reward.
"""

from arbiter.trajectories.openai_messages import load_openai_messages, parse_openai_messages
from arbiter.trajectories.tau_bench import (
    TauBenchTrial,
    load_tau_bench,
    parse_tau_bench,
    tau_bench_pass_hat_k,
)

__all__ = [
    "TauBenchTrial",
    "load_openai_messages",
    "load_tau_bench",
    "parse_openai_messages",
    "parse_tau_bench",
    "tau_bench_pass_hat_k",
]
