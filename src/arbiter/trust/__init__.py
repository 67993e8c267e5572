"""The trust loop's pure core: policy, conduct, the state ladder, integrity caps, the
breaker's decision and the backtest, as functions over :mod:`arbiter.contract.trust`
shapes. Nothing here reads a store or a clock: the service layer passes both in.
"""

from arbiter.trust.assess import assess
from arbiter.trust.backtest import band_of, gate_outcome, reband_run, replay_breaker
from arbiter.trust.breaker import BreakerDecision, breaker_decision
from arbiter.trust.conduct import RANK, Conduct, behaviour_state, conduct_of, lower
from arbiter.trust.integrity import CAPS, apply_cap, integrity_of
from arbiter.trust.policy import (
    TrustPolicy,
    default_policy,
    load_policy,
    parse_policy,
    policy_document,
    policy_from_mapping,
    policy_toml,
)

__all__ = [
    "CAPS",
    "RANK",
    "BreakerDecision",
    "Conduct",
    "TrustPolicy",
    "apply_cap",
    "assess",
    "band_of",
    "behaviour_state",
    "breaker_decision",
    "conduct_of",
    "default_policy",
    "gate_outcome",
    "integrity_of",
    "load_policy",
    "lower",
    "parse_policy",
    "policy_document",
    "policy_from_mapping",
    "policy_toml",
    "reband_run",
    "replay_breaker",
]
