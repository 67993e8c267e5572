"""Arbiter: judge what AI systems produce, from outside them.

The public API of the offline harness::

    from arbiter import PythonSystem, load_dataset, run_eval

    report = run_eval(PythonSystem("my_pkg.model:predict"), load_dataset("data.jsonl"), k=3)
    print(report.primary.accuracy, report.pass_hat_k)
"""

from arbiter.config import Settings
from arbiter.contract import Dataset, Example, Prediction, Report
from arbiter.datasets import load_dataset
from arbiter.errors import (
    ArbiterError,
    GateFailed,
    InputError,
    ProviderError,
    StoreError,
    SystemUnderTestError,
)
from arbiter.harness.diff import diff_runs
from arbiter.harness.gate import GateResult, evaluate_gate
from arbiter.harness.metrics import classification_metrics
from arbiter.harness.runner import resume_eval, resume_eval_async, run_eval, run_eval_async
from arbiter.harness.stored import StoredRun, load_run
from arbiter.store import Store
from arbiter.systems import ResponseMapping, SystemUnderTest
from arbiter.systems.http import HttpSystem
from arbiter.systems.mcp import McpToolSystem
from arbiter.systems.python import PythonSystem

__all__ = [
    "ArbiterError",
    "Dataset",
    "Example",
    "GateFailed",
    "GateResult",
    "HttpSystem",
    "InputError",
    "McpToolSystem",
    "Prediction",
    "ProviderError",
    "PythonSystem",
    "Report",
    "ResponseMapping",
    "Settings",
    "Store",
    "StoreError",
    "StoredRun",
    "SystemUnderTest",
    "SystemUnderTestError",
    "classification_metrics",
    "diff_runs",
    "evaluate_gate",
    "load_dataset",
    "load_run",
    "resume_eval",
    "resume_eval_async",
    "run_eval",
    "run_eval_async",
]
__version__ = "0.1.0"
