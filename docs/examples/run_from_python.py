"""Run an evaluation from Python instead of the command line.

    PYTHONPATH=docs/examples .venv/bin/python docs/examples/run_from_python.py

Uses the store named by ARBITER_DB_URL, or SQLite at .arbiter/arbiter.db.
"""

import asyncio
from typing import Any

from arbiter import Prediction, PythonSystem, Settings, Store, load_dataset, run_eval_async


class ThresholdSystem:
    """A system under test written as a class: anything with async __call__ will do."""

    def __init__(self, critical_at: float) -> None:
        self.critical_at = critical_at

    async def __call__(self, input: dict[str, Any]) -> Prediction:
        ratio = input["value"] / input["limit"]
        label = "critical" if ratio >= self.critical_at else "nominal"
        return Prediction(label=label, raw_output={"ratio": ratio})

    def describe(self) -> dict[str, Any]:
        # Optional: shown in reports and `arbiter runs`. A kind Arbiter cannot rebuild
        # means the run can be resumed only from Python, with resume_eval.
        return {"kind": "threshold", "target": f"critical_at={self.critical_at}"}


async def main() -> None:
    dataset = load_dataset("docs/examples/tiny.jsonl")
    store = Store(Settings().database_url())
    try:
        for system in (PythonSystem("my_system:predict"), ThresholdSystem(critical_at=0.95)):
            report = await run_eval_async(
                system,
                dataset,
                k=1,
                concurrency=4,
                label_map={"nominal": "ok", "*": "alert"},
                store=store,
            )
            accuracy = report.primary.accuracy
            print(
                f"{report.run_id}  {report.system:<34} accuracy {accuracy.estimate:.3f} "
                f"[{accuracy.low:.3f}, {accuracy.high:.3f}]  errors {report.errors_by_type}"
            )
    finally:
        store.close()


if __name__ == "__main__":
    asyncio.run(main())
