"""A toy sensor-health classifier, written as every kind of `python` target Arbiter accepts.

Each reading has a `value` and a `limit`. The label is cut from value / limit:
below 0.85 is "nominal", below 1.0 is "degraded", 1.0 and above is "critical".

Use it from the repository root with:

    PYTHONPATH=docs/examples .venv/bin/arbiter run --dataset docs/examples/tiny.jsonl \
        --target my_system:predict
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from arbiter.contract import Prediction

CUTS = {"degraded": 0.85, "critical": 1.0}


def _label(ratio: float, cuts: dict[str, float]) -> str:
    if ratio >= cuts["critical"]:
        return "critical"
    if ratio >= cuts["degraded"]:
        return "degraded"
    return "nominal"


def _confidence(ratio: float, cuts: dict[str, float]) -> float:
    """Grows with the distance from the nearest cut; 0.5 right on a cut."""
    distance = min(abs(ratio - cut) for cut in cuts.values())
    return round(min(0.99, 0.5 + 2 * distance), 2)


# 1. A plain sync function returning a dict in the shape of a Prediction.
#    A missing value (None) makes the division raise: Arbiter records SystemCrashed.
def predict(input: dict[str, Any]) -> dict[str, Any]:
    ratio = input["value"] / input["limit"]
    return {
        "label": _label(ratio, CUTS),
        "confidence": _confidence(ratio, CUTS),
        "raw_output": {"ratio": round(ratio, 4)},
    }


# 2. An async function returning a Prediction.
async def predict_async(input: dict[str, Any]) -> Prediction:
    ratio = input["value"] / input["limit"]
    return Prediction(
        id=input["source_id"],
        label=_label(ratio, CUTS),
        confidence=_confidence(ratio, CUTS),
        raw_output={"ratio": round(ratio, 4)},
    )


# 3. A function returning only the label string (no confidence).
def predict_label(input: dict[str, Any]) -> str:
    return _label(input["value"] / input["limit"], CUTS)


# 4. "Version 2" with tighter cuts: fixes ev-07, breaks ev-02 and ev-05.
V2_CUTS = {"degraded": 0.9, "critical": 0.95}


def predict_v2(input: dict[str, Any]) -> dict[str, Any]:
    ratio = input["value"] / input["limit"]
    return {"label": _label(ratio, V2_CUTS), "confidence": _confidence(ratio, V2_CUTS)}


# 5. A factory: a callable with no parameters, called once per run, that returns the
#    predicting callable. This one imitates a model that is unstable near a cut: the
#    second time it sees a reading within 0.05 of a cut, it answers the other side.
def make_unstable() -> Any:
    seen: Counter[str] = Counter()
    lock = threading.Lock()  # sync targets run in worker threads

    def predict_unstable(input: dict[str, Any]) -> dict[str, Any]:
        ratio = input["value"] / input["limit"]
        with lock:
            seen[input["source_id"]] += 1
            call = seen[input["source_id"]]
        nearest = min(CUTS.values(), key=lambda cut: abs(ratio - cut))
        if call == 2 and abs(ratio - nearest) < 0.05:
            ratio = nearest - 0.01 if ratio >= nearest else nearest
        return {"label": _label(ratio, CUTS), "confidence": _confidence(ratio, CUTS)}

    return predict_unstable


# 6. A slow system (half a second per call), to try interrupting and resuming a run.
def predict_slow(input: dict[str, Any]) -> dict[str, Any]:
    import time

    time.sleep(0.5)
    return predict(input)


# 7. A "version 2" of the bundled demo screener that raised its alert threshold: it
#    reports "medium" risk as "low". Used in docs/gate.md to show a real regression.
def screener_v2(input: dict[str, Any]) -> Prediction:
    from arbiter.demo.classifier import classify

    prediction = classify(input)
    if prediction.label == "medium":
        return prediction.model_copy(update={"label": "low"})
    return prediction


# 8. A system that has "seen the test set": it looks the answer up in tiny.jsonl.
#    A perfect score like this one is what the gate's over-fit warning is for.
def make_memorised() -> Any:
    import json
    from pathlib import Path

    path = Path(__file__).with_name("tiny.jsonl")
    answers: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        example = json.loads(line)
        answers[example["input"]["source_id"]] = example["expected_label"]

    def memorised(input: dict[str, Any]) -> str:
        return answers[input["source_id"]]

    return memorised
