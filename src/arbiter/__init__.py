"""Arbiter: judge what AI systems produce, from outside them.

The public API of the offline harness::

    from arbiter import PythonSystem, load_dataset, run_eval

    report = run_eval(PythonSystem("my_pkg.model:predict"), load_dataset("data.jsonl"), k=3)
    print(report.primary.accuracy, report.pass_hat_k)

Importing the package loads no engine: each public name is imported from its module on
first use (PEP 562), so ``import arbiter`` and the ``arbiter`` command start at once.
"""

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
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
    from arbiter.harness.runner import resume_eval, resume_eval_async, run_eval, run_eval_async
    from arbiter.scoring.metrics import classification_metrics
    from arbiter.service.runs import StoredRun, load_run
    from arbiter.store import Store
    from arbiter.systems import ResponseMapping, SystemUnderTest
    from arbiter.systems.http import HttpSystem
    from arbiter.systems.mcp import McpToolSystem
    from arbiter.systems.python import PythonSystem
    from arbiter.testing import assert_output

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
    "assert_output",
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
__version__ = "0.3.0"

_MODULES = {
    "ArbiterError": "arbiter.errors",
    "Dataset": "arbiter.contract",
    "Example": "arbiter.contract",
    "GateFailed": "arbiter.errors",
    "GateResult": "arbiter.harness.gate",
    "HttpSystem": "arbiter.systems.http",
    "InputError": "arbiter.errors",
    "McpToolSystem": "arbiter.systems.mcp",
    "Prediction": "arbiter.contract",
    "ProviderError": "arbiter.errors",
    "PythonSystem": "arbiter.systems.python",
    "Report": "arbiter.contract",
    "ResponseMapping": "arbiter.systems",
    "Settings": "arbiter.config",
    "Store": "arbiter.store",
    "StoreError": "arbiter.errors",
    "StoredRun": "arbiter.service.runs",
    "SystemUnderTest": "arbiter.systems",
    "SystemUnderTestError": "arbiter.errors",
    "assert_output": "arbiter.testing",
    "classification_metrics": "arbiter.scoring.metrics",
    "diff_runs": "arbiter.harness.diff",
    "evaluate_gate": "arbiter.harness.gate",
    "load_dataset": "arbiter.datasets",
    "load_run": "arbiter.service.runs",
    "resume_eval": "arbiter.harness.runner",
    "resume_eval_async": "arbiter.harness.runner",
    "run_eval": "arbiter.harness.runner",
    "run_eval_async": "arbiter.harness.runner",
}


def __getattr__(name: str) -> _typing.Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module 'arbiter' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
