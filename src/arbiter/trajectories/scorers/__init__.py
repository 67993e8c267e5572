"""The deterministic trajectory scorers: code only, no model, reproducible (CI-pure).

Every one is an ordinary ``@scorer`` factory declared with
:func:`~arbiter.trajectories.scorers.common.trajectory_scorer`; :data:`TRAJECTORY_SCORERS`
names them for the registry (``module:factory``, imported on first use).
"""

from __future__ import annotations

__all__ = ["TRAJECTORY_SCORERS"]

_PACKAGE = "arbiter.trajectories.scorers"

TRAJECTORY_SCORERS: dict[str, str] = {
    name: f"{_PACKAGE}.{module}:{name}"
    for module, names in {
        "outcome": ["completed", "answer_present", "clean_termination", "output_sanity"],
        "tools": [
            "required_tools",
            "forbidden_tools",
            "tool_success_rate",
            "no_tool_loops",
            "tool_calls",
            "self_correction",
        ],
        "matching": ["trajectory_match", "tool_call_precision", "tool_call_recall", "tool_call_f1"],
        "efficiency": ["steps", "efficiency", "cost", "latency", "tokens"],
        "tasks": ["tasks", "parallel_efficiency"],
        "grounding": [
            "expect_retrieval",
            "retrieval_relevance",
            "citation_present",
            "grounded_overlap",
            "numeric_fidelity",
        ],
        "scope": ["scope_adherence"],
        "answers": ["must_contain", "must_not_contain", "answer_regex", "max_answer_length"],
        "experts": ["expert_success"],
        "flows": ["flow_complete", "required_nodes", "forbidden_nodes", "flow_cost", "flow_steps"],
    }.items()
    for name in names
}
"""Every trajectory scorer by name: ``module:factory`` (the factory is named as the scorer)."""
