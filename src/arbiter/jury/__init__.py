"""The jury: critics that must quote their evidence, and deterministic synthesis.

::

    from arbiter.jury import Jury, load_cases, bundled_cases_path

    jury = Jury()  # factual, logical and adversary lenses on the offline mock provider
    verdict = jury.judge(load_cases(bundled_cases_path())[0])
    print(verdict.decision, verdict.confidence, verdict.escalate)
"""

from arbiter.jury.cases import bundled_cases_path, load_cases
from arbiter.jury.critics import DEFAULT_ROSTER, CriticSpec
from arbiter.jury.evaluation import JuryEvaluation, evaluate_jury
from arbiter.jury.jury import Jury
from arbiter.jury.synthesis import synthesize

__all__ = [
    "DEFAULT_ROSTER",
    "CriticSpec",
    "Jury",
    "JuryEvaluation",
    "bundled_cases_path",
    "evaluate_jury",
    "load_cases",
    "synthesize",
]
