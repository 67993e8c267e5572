"""A second version of the demo's screener, so two runs of one dataset can be compared.

Importable as ``tests.server.pages.screener_v2:classify``. It learned about structuring
(a personal transfer kept just under the 10,000 reporting threshold is ``high``) and
became jumpy on new devices (a new device on a card-not-present payment is ``medium``),
so a comparison with v1 shows flips both ways.
"""

from __future__ import annotations

from typing import Any

from arbiter.contract import Prediction
from arbiter.demo.classifier import classify as classify_v1

__all__ = ["classify"]


def classify(input: dict[str, Any]) -> Prediction:
    """The v1 verdict, corrected for structuring and jumpier on new devices."""
    first = classify_v1(input)
    amount = float(input.get("amount", 0.0))
    if 9_000 <= amount < 10_000 and input.get("merchant_category") == "personal_transfer":
        return first.model_copy(update={"label": "high"})
    if input.get("is_new_device") and first.label == "low" and amount > 200:
        return first.model_copy(update={"label": "medium"})
    return first
