"""The verdict's confidence: how far it is from flipping, and how much critics agree.

    confidence = 0.34 + 0.61 × (0.6 × flip_margin / 2 + 0.4 × agreement)

in [0.34, 0.95] — never 1.0. Capped at 0.50 when the verdict escalates, and at 0.70
when every critic gave the very same scores and none quoted any evidence: unanimity
without evidence is what correlated error looks like.
"""

from __future__ import annotations

__all__ = ["CAP_ESCALATE", "CAP_UNEVIDENCED", "CEILING", "FLOOR", "confidence_of"]

FLOOR = 0.34
"""Lowest confidence: a verdict that any one ±1 change flips, with total disagreement."""
CEILING = 0.95
"""Highest confidence: never certainty."""
CAP_ESCALATE = 0.50
"""Ceiling for a verdict that escalates to a human."""
CAP_UNEVIDENCED = 0.70
"""Ceiling for unanimous scores with no verified quote behind them."""


def confidence_of(
    *, flip_margin: int, agreement: float, escalate: bool, unanimous_unevidenced: bool
) -> float:
    """The confidence of a verdict.

    Args:
        flip_margin: Single ±1 changes the decision survives, 0–2.
        agreement: Critic agreement in [0, 1].
        escalate: Whether the verdict escalates.
        unanimous_unevidenced: All critics scored alike and quoted nothing verifiable.

    Returns:
        A value in [0.34, 0.95], rounded to 4 places.
    """
    margin = min(max(flip_margin, 0), 2)
    value = FLOOR + (CEILING - FLOOR) * (0.6 * margin / 2 + 0.4 * min(max(agreement, 0.0), 1.0))
    if escalate:
        value = min(value, CAP_ESCALATE)
    if unanimous_unevidenced:
        value = min(value, CAP_UNEVIDENCED)
    return round(min(max(value, FLOOR), CEILING), 4)
