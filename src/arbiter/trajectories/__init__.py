"""Agent trajectories: importers, deterministic scorers with bands, cases, executors.

- Importers, one module a format, each registered in
  :mod:`~arbiter.trajectories.formats` (:mod:`~arbiter.trajectories.loader` tells which
  a file is of):
  :mod:`~arbiter.trajectories.otlp` (OpenTelemetry GenAI traces, JSON and protobuf),
  :mod:`~arbiter.trajectories.openinference`, :mod:`~arbiter.trajectories.openai_messages`,
  :mod:`~arbiter.trajectories.tau_bench`, :mod:`~arbiter.trajectories.tau2_bench` and
  :mod:`~arbiter.trajectories.mapping` (platform records through dotted paths);
- :mod:`~arbiter.trajectories.scorers`: the deterministic trajectory scorers, banded by
  :mod:`~arbiter.trajectories.bands`; :mod:`~arbiter.trajectories.verdict`: whether a
  turn failed;
- :mod:`~arbiter.trajectories.cases` and :mod:`~arbiter.trajectories.executors`: agent
  cases and what runs them; :mod:`~arbiter.trajectories.mining` and
  :mod:`~arbiter.trajectories.diff`.

Names are imported on first use (PEP 562), so ``import arbiter.trajectories`` is cheap.
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing

_MODULES: dict[str, str] = {
    **dict.fromkeys(
        ["FORMATS", "ImportedRun", "detect_format", "iter_runs", "load_runs"],
        "arbiter.trajectories.loader",
    ),
    **dict.fromkeys(
        ["ImportOptions", "TrajectoryFormat", "TrajectoryFormatRegistry"],
        "arbiter.trajectories.formats",
    ),
    **dict.fromkeys(
        ["import_otlp", "load_otlp", "trajectories_from_spans"], "arbiter.trajectories.otlp"
    ),
    **dict.fromkeys(
        ["load_openinference", "trajectories_from_openinference"],
        "arbiter.trajectories.openinference",
    ),
    **dict.fromkeys(
        ["load_openai_messages", "parse_openai_messages"], "arbiter.trajectories.openai_messages"
    ),
    **dict.fromkeys(
        ["TauBenchTrial", "load_tau_bench", "parse_tau_bench", "tau_bench_pass_hat_k"],
        "arbiter.trajectories.tau_bench",
    ),
    **dict.fromkeys(
        ["load_tau2_bench", "parse_tau2_bench", "tau2_bench_pass_hat_k"],
        "arbiter.trajectories.tau2_bench",
    ),
    **dict.fromkeys(
        ["RecordMapping", "load_mapped", "load_mapping", "map_record"],
        "arbiter.trajectories.mapping",
    ),
    **dict.fromkeys(["banded_metric", "default_thresholds"], "arbiter.trajectories.bands"),
    **dict.fromkeys(["TurnVerdict", "turn_failed"], "arbiter.trajectories.verdict"),
    **dict.fromkeys(["load_cases", "cases_dataset"], "arbiter.trajectories.cases"),
    **dict.fromkeys(
        ["AgentExecutor", "AgentSystem", "PrecomputedExecutor", "PythonExecutor"],
        "arbiter.trajectories.executors",
    ),
    "HttpStepsExecutor": "arbiter.trajectories.executors_http",
    "TRAJECTORY_SCORERS": "arbiter.trajectories.scorers",
}

__all__ = [
    "FORMATS",
    "TRAJECTORY_SCORERS",
    "AgentExecutor",
    "AgentSystem",
    "HttpStepsExecutor",
    "ImportOptions",
    "ImportedRun",
    "PrecomputedExecutor",
    "PythonExecutor",
    "RecordMapping",
    "TauBenchTrial",
    "TrajectoryFormat",
    "TrajectoryFormatRegistry",
    "TurnVerdict",
    "banded_metric",
    "cases_dataset",
    "default_thresholds",
    "detect_format",
    "import_otlp",
    "iter_runs",
    "load_cases",
    "load_mapped",
    "load_mapping",
    "load_openai_messages",
    "load_openinference",
    "load_otlp",
    "load_runs",
    "load_tau2_bench",
    "load_tau_bench",
    "map_record",
    "parse_openai_messages",
    "parse_tau2_bench",
    "parse_tau_bench",
    "tau2_bench_pass_hat_k",
    "tau_bench_pass_hat_k",
    "trajectories_from_openinference",
    "trajectories_from_spans",
    "turn_failed",
]

if _typing.TYPE_CHECKING:
    from arbiter.trajectories.bands import banded_metric, default_thresholds
    from arbiter.trajectories.cases import cases_dataset, load_cases
    from arbiter.trajectories.executors import (
        AgentExecutor,
        AgentSystem,
        PrecomputedExecutor,
        PythonExecutor,
    )
    from arbiter.trajectories.executors_http import HttpStepsExecutor
    from arbiter.trajectories.formats import (
        ImportOptions,
        TrajectoryFormat,
        TrajectoryFormatRegistry,
    )
    from arbiter.trajectories.loader import (
        FORMATS,
        ImportedRun,
        detect_format,
        iter_runs,
        load_runs,
    )
    from arbiter.trajectories.mapping import RecordMapping, load_mapped, load_mapping, map_record
    from arbiter.trajectories.openai_messages import load_openai_messages, parse_openai_messages
    from arbiter.trajectories.openinference import (
        load_openinference,
        trajectories_from_openinference,
    )
    from arbiter.trajectories.otlp import import_otlp, load_otlp, trajectories_from_spans
    from arbiter.trajectories.scorers import TRAJECTORY_SCORERS
    from arbiter.trajectories.tau2_bench import (
        load_tau2_bench,
        parse_tau2_bench,
        tau2_bench_pass_hat_k,
    )
    from arbiter.trajectories.tau_bench import (
        TauBenchTrial,
        load_tau_bench,
        parse_tau_bench,
        tau_bench_pass_hat_k,
    )
    from arbiter.trajectories.verdict import TurnVerdict, turn_failed


def __getattr__(name: str) -> _typing.Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module 'arbiter.trajectories' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
