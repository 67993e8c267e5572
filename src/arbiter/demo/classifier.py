"""A small rule-based transaction risk screener: the demo's system under test.

It stands in for a compliance service: each rule that fires adds points, and the
total is cut into a graded risk level ``low | medium | high | critical``. The rules
are plausible but deliberately incomplete, the way a real first-line screener is:

* it has no notion of structuring, so amounts kept just under the 10,000 reporting
  threshold look like any other mid-sized payment;
* it trusts account age, so money-mule wires sent from old, bought accounts pass;
* it treats every cross-border, large, late purchase as suspect, so legitimate
  spending on a trip abroad gets flagged.

The ground truth of the demo dataset is binary (confirmed threat or not), so only
the mapping "anything but ``low`` means ``high``" can be judged against it.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from arbiter.contract import Prediction

__all__ = ["LEVELS", "classify"]

HIGH_RISK_COUNTRIES = frozenset({"IR", "KP", "MM", "NG", "RU", "SY", "YE"})
"""Jurisdictions scored up when they are the merchant's or the customer's country."""

RISKY_CATEGORIES = frozenset({"crypto_exchange", "gift_cards", "money_transfer", "gambling"})
"""Merchant categories that are easy to cash out through."""

RESALEABLE_CATEGORIES = frozenset({"electronics", "jewelry", "digital_goods"})
"""Merchant categories whose goods are easily resold."""

LEVELS = ("low", "medium", "high", "critical")
"""The graded vocabulary, from least to most severe."""

# Score cuts between consecutive levels: 0-2 low, 3-4 medium, 5-6 high, 7+ critical.
_CUTS = (2.5, 4.5, 6.5)


def _score(input: dict[str, Any]) -> tuple[int, list[str]]:
    """Add up the points of every rule that fires, with a reason per rule."""
    points = 0
    reasons: list[str] = []

    def add(value: int, reason: str) -> None:
        nonlocal points
        points += value
        reasons.append(f"+{value} {reason}")

    amount = float(input.get("amount", 0.0))
    velocity = int(input.get("txn_count_24h", 0))
    age_days = int(input.get("account_age_days", 10_000))  # unknown age: no points
    country = str(input.get("country", ""))
    home = str(input.get("customer_country", country))
    category = str(input.get("merchant_category", ""))
    hour = int(input.get("hour_of_day", 12))

    if velocity >= 20:
        add(3, f"very high velocity ({velocity} in 24h)")
    elif velocity >= 8:
        add(2, f"high velocity ({velocity} in 24h)")
    if bool(input.get("is_new_device", False)):
        add(2, "new device")
    if country != home:
        add(1, f"cross-border ({home} -> {country})")
    if HIGH_RISK_COUNTRIES & {country, home}:
        add(2, "high-risk jurisdiction")
    if amount >= 10_000:
        add(2, "amount at or above 10,000")
    elif amount >= 2_500:
        add(1, "amount above 2,500")
    elif amount < 5 and velocity >= 8:
        add(3, "micro amount under high velocity (card testing)")
    if age_days < 30:
        add(3, f"account {age_days} days old")
    elif age_days < 90:
        add(1, f"account {age_days} days old")
    if category in RISKY_CATEGORIES:
        add(2, f"risky category {category}")
    elif category in RESALEABLE_CATEGORIES:
        add(1, f"resaleable goods ({category})")
    if 0 <= hour < 5:
        add(1, f"night-time ({hour}h)")
    return points, reasons


def _level(score: int) -> tuple[str, float]:
    """Cut a score into a risk level, with a confidence that grows away from the cuts."""
    level = LEVELS[sum(score > cut for cut in _CUTS)]
    distance = min(abs(score - cut) for cut in _CUTS)
    return level, round(min(0.97, 0.5 + 0.15 * distance), 2)


def _prediction_id(input: dict[str, Any]) -> str:
    """The input's own id if it carries one, else a short hash of its canonical JSON."""
    for key in ("id", "txn_id"):
        if input.get(key):
            return str(input[key])
    canonical = json.dumps(input, sort_keys=True, separators=(",", ":"), default=str)
    return "risk-" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def classify(input: dict[str, Any]) -> Prediction:
    """Screen one transaction and grade its risk.

    Deterministic: the same input always yields the same prediction.

    Args:
        input: Transaction fields (``amount``, ``merchant_category``, ``country``,
            ``customer_country``, ``account_age_days``, ``txn_count_24h``,
            ``is_new_device``, ``hour_of_day``, ...); missing fields score nothing.

    Returns:
        A prediction whose label is one of ``low``, ``medium``, ``high``, ``critical``
        and whose ``raw_output`` holds ``risk_level``, ``score`` and ``reasons``.

    Examples:
        >>> classify({"amount": 42.5, "country": "GB", "customer_country": "GB",
        ...           "merchant_category": "grocery", "account_age_days": 900,
        ...           "txn_count_24h": 2, "is_new_device": False, "hour_of_day": 18}).label
        'low'
    """
    score, reasons = _score(input)
    level, confidence = _level(score)
    return Prediction(
        id=_prediction_id(input),
        raw_output={"risk_level": level, "score": score, "reasons": reasons},
        label=level,
        confidence=confidence,
    )
