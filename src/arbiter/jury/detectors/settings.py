"""How sensitive each detector is, and the presets of the three standard lenses.

Every critic runs every detector; its lens only moves these thresholds. ``factual`` is
strict on figures and lenient on polarity, ``logical`` the reverse, and ``adversary``
strict on unsupported claims and the task's list constraints.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_SETTINGS", "LENS_SETTINGS", "DetectorSettings", "settings_for"]


@dataclass(frozen=True)
class DetectorSettings:
    """Sensitivities of the string detectors for one lens.

    Scores are sums over shared words of the product of their closeness weights
    (1 for the adjacent word, 1/2 for the next, ...; half across a comma), so 1.0 means
    "one word right next to both figures" and higher means more shared context.

    Attributes:
        figure_match: Least noun-overlap score for a context figure to count as the
            counterpart of an output figure (lower = stricter on numbers).
        lone_counterpart: Whether the one context figure of the same kind and unit
            that the output does not restate elsewhere counts as the counterpart even
            without shared words.
        unsupported_figures: Whether an output figure with no counterpart in the
            context is flagged as unsupported.
        hedge_tolerance: Relative slack when either figure is hedged ("about 40").
        inconsistency_match: Least score for two output figures to be one quantity.
        restatements: Whether a sentence opening with "In short", "To confirm" and the
            like is read as restating an earlier figure of the same kind and unit.
        polarity_match: Least alignment score of an output and a context polar phrase.
        polarity_margin: How many times better the opposite-polarity alignment must be
            than the best same-polarity one.
        negation_flips: Whether a bare "not" inserted or removed on a shared predicate
            counts (the polarity word pairs always do).
        list_prose: Whether list items are also counted in prose ("X and Y") and from
            the output's own stated count ("Two examples ..."), not only bullet lines.
        weak_markers: Whether weak absolutes ("always", "completely", "the best") are
            unsupported-claim markers too, besides "studies show", "guaranteed", "100%".
    """

    figure_match: float = 0.5
    lone_counterpart: bool = False
    unsupported_figures: bool = True
    hedge_tolerance: float = 0.1
    inconsistency_match: float = 0.75
    restatements: bool = True
    polarity_match: float = 1.0
    polarity_margin: float = 1.25
    negation_flips: bool = True
    list_prose: bool = False
    weak_markers: bool = False


LENS_SETTINGS: dict[str, DetectorSettings] = {
    "factual": DetectorSettings(
        figure_match=0.3,
        lone_counterpart=True,
        unsupported_figures=True,
        hedge_tolerance=0.05,
        inconsistency_match=1.0,
        polarity_match=2.0,
        polarity_margin=1.5,
        negation_flips=False,
    ),
    "logical": DetectorSettings(
        figure_match=0.9,
        unsupported_figures=False,
        hedge_tolerance=0.1,
        inconsistency_match=0.4,
        polarity_match=0.6,
        polarity_margin=1.1,
        negation_flips=True,
    ),
    "adversary": DetectorSettings(
        figure_match=0.5,
        unsupported_figures=True,
        hedge_tolerance=0.1,
        inconsistency_match=0.75,
        polarity_match=1.0,
        polarity_margin=1.25,
        negation_flips=True,
        list_prose=True,
        weak_markers=True,
    ),
}
"""The presets of the standard lenses."""

DEFAULT_SETTINGS = DetectorSettings()
"""Middle-of-the-road sensitivities, used for a lens with no preset (``custom``)."""


def settings_for(lens: str) -> DetectorSettings:
    """The preset of ``lens``, or ``DEFAULT_SETTINGS`` for a lens without one."""
    return LENS_SETTINGS.get(lens, DEFAULT_SETTINGS)
