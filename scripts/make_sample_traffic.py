"""Generate the bundled sample of unlabelled traffic for ``arbiter online score``.

Each line is one prediction as a Synapse-style anomaly service emits it: a status
(``nominal`` / ``degraded`` / ``critical``, also the label), an anomaly score, a model
confidence and a free-text narrative, with the policies the service declared it relied
on (``policy_refs``, as Sentinel-style services report them). Most items are clean;
the rest carry the faults online scoring exists to catch, in a realistic mix:

- ``silent_contradiction``: anomaly_score >= 0.8 with a status other than critical;
- ``low_confidence``: a confidence under 0.5 (some from a rule-based fallback, 0.0);
- ``missing_field``: no status, no anomaly_score or no label;
- ``ungrounded_citation``: the narrative cites a policy, section or article that is
  not among the declared ``policy_refs``;
- ``grounded_variant``: a citation that *is* declared, written the way narratives
  really write it (a Unicode hyphen, a trailing " Section N"): must not be flagged;
- ``nan_confidence``: a confidence written as the JSON ``NaN`` token or as null;
- ``off_vocabulary``: a label outside the declared vocabulary.

The draw is seeded, so the file is reproducible byte for byte::

    python scripts/make_sample_traffic.py                     # rewrite the bundled file
    python scripts/make_sample_traffic.py --out /tmp/t.jsonl  # write elsewhere
"""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

SEED = 20240612
"""Seed of the one random generator behind the whole file."""

N_ITEMS = 300
"""Lines in the bundled sample."""

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "src/arbiter/online/data/sample_traffic.jsonl"
"""Where the bundled sample lives."""

FAULTS: dict[str, int] = {
    "clean": 78,
    "silent_contradiction": 7,
    "low_confidence": 7,
    "missing_field": 5,
    "ungrounded_citation": 8,
    "grounded_variant": 6,
    "nan_confidence": 3,
    "off_vocabulary": 2,
}
"""Relative weight of each kind of item."""

SERVICES = (
    "payments-gateway",
    "ledger-db",
    "auth-service",
    "onboarding-api",
    "settlement-batch",
    "card-issuing",
    "fx-pricing",
    "notification-bus",
)
REGIONS = ("eu-west-1", "eu-central-1", "us-east-1", "ap-southeast-2")
POLICIES = {
    "IR-POL-004": "Incident Response Policy",
    "SEC-POL-011": "Access Control Policy",
    "DR-POL-002": "Disaster Recovery Policy",
    "CHG-POL-007": "Change Management Policy",
    "DPA-POL-003": "Data Protection Policy",
    "AML-POL-009": "Transaction Monitoring Policy",
}
UNDECLARED_CLAIMS = (
    "per policy FRD-POL-014",
    "as required by Article 33 of the GDPR",
    "under Regulation (EU) 2022/2554 (DORA) Article 19",
    "per policy SEC-POL-019",
    "in line with Section 7.3 of the Outsourcing Policy",
    "as PCI DSS Requirement 10.6 demands",
)
UNICODE_HYPHENS = ("\u2011", "\u2013", "\u2010")
"""Non-breaking hyphen, en dash, hyphen: what rich-text editors put in policy ids."""

SCORE_RANGE = {"nominal": (0.02, 0.38), "degraded": (0.41, 0.78), "critical": (0.81, 0.99)}

OBSERVATIONS = {
    "nominal": (
        "{svc} error rate {err:.2f}% and p99 latency {lat} ms are within the weekly baseline.",
        "Traffic on {svc} follows the usual daily curve; no unusual callers were seen.",
        "A short retry burst on {svc} cleared within {mins} minutes without user impact.",
    ),
    "degraded": (
        "{svc} p99 latency rose to {lat} ms, about {x}x its baseline, for {mins} minutes.",
        "{svc} error rate climbed to {err:.2f}% after a deploy; retries absorb most of it.",
        "Queue depth on {svc} kept growing for {mins} minutes; consumers are falling behind.",
    ),
    "critical": (
        "{svc} is failing {err:.1f}% of requests; upstream callers are timing out.",
        "Replication lag on {svc} passed {mins} minutes; writes risk being lost on failover.",
        "A burst of failed logins against {svc} from {n} addresses suggests credential stuffing.",
    ),
}
ACTIONS = {
    "nominal": "No action needed",
    "degraded": "Paging the owning team",
    "critical": "Opening a major incident",
}


class Sample:
    """Named draws on one seeded generator, so the item builders read like the faults."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def status(self) -> str:
        """A status with the production mix: mostly nominal, some degraded, few critical."""
        return self.rng.choices(("nominal", "degraded", "critical"), weights=(60, 28, 12))[0]

    def score(self, status: str) -> float:
        """An anomaly score consistent with ``status``."""
        low, high = SCORE_RANGE[status]
        return round(self.rng.uniform(low, high), 3)

    def confidence(self, low: float = 0.62, high: float = 0.99) -> float:
        """A model confidence, uniform in [low, high]."""
        return round(self.rng.uniform(low, high), 3)

    def observation(self, status: str, service: str) -> str:
        """One sentence about what the service saw."""
        template = self.rng.choice(OBSERVATIONS[status])
        return template.format(
            svc=service,
            err=self.rng.uniform(0.1, 4.0) if status != "critical" else self.rng.uniform(8, 40),
            lat=self.rng.randint(180, 2400),
            mins=self.rng.randint(3, 45),
            x=self.rng.randint(2, 9),
            n=self.rng.randint(40, 900),
        )

    def policies(self, status: str) -> list[str]:
        """Declared policy references: none for most nominal items, one or two otherwise."""
        if status == "nominal" and self.rng.random() < 0.7:
            return []
        k = 1 if self.rng.random() < 0.6 else 2
        return sorted(self.rng.sample(sorted(POLICIES), k))

    def cite(self, ref: str) -> str:
        """How a narrative cites a declared policy, plainly."""
        form = self.rng.choice(("per policy {ref}", "as {ref} requires", "under {ref}"))
        return form.format(ref=ref)


def _base(s: Sample, index: int, status: str) -> dict[str, Any]:
    service = s.rng.choice(SERVICES)
    refs = s.policies(status)
    narrative = f"{s.observation(status, service)} {ACTIONS[status]}"
    narrative += f" {s.cite(refs[0])}." if refs and s.rng.random() < 0.5 else "."
    return {
        "id": f"evt-{index:05d}",
        "label": status,
        "confidence": s.confidence(),
        "raw_output": {
            "status": status,
            "anomaly_score": s.score(status),
            "narrative": narrative,
            "policy_refs": refs,
            "source": "model",
            "service": service,
            "region": s.rng.choice(REGIONS),
        },
        "metadata": {"producer": "synapse-l4", "model": "qwen3.5:9b-q4_K_M"},
    }


def _silent_contradiction(s: Sample, item: dict[str, Any]) -> None:
    status = s.rng.choice(("degraded", "degraded", "nominal"))
    item["label"] = item["raw_output"]["status"] = status
    item["raw_output"]["anomaly_score"] = round(s.rng.uniform(0.8, 0.97), 3)


def _low_confidence(s: Sample, item: dict[str, Any]) -> None:
    if s.rng.random() < 0.3:  # the rule-based fallback answered, no model involved
        item["confidence"] = 0.0
        item["raw_output"]["source"] = "fallback"
    else:
        item["confidence"] = s.confidence(0.18, 0.49)


def _missing_field(s: Sample, item: dict[str, Any]) -> None:
    where = s.rng.choice(("status", "anomaly_score", "label"))
    if where == "label":
        del item["label"]
    else:
        del item["raw_output"][where]


def _ungrounded_citation(s: Sample, item: dict[str, Any]) -> None:
    claim = s.rng.choice(UNDECLARED_CLAIMS)
    raw = item["raw_output"]
    raw["narrative"] = f"{raw['narrative'].rstrip('.')}, {claim}."


def _grounded_variant(s: Sample, item: dict[str, Any]) -> None:
    raw = item["raw_output"]
    if not raw["policy_refs"]:
        raw["policy_refs"] = [s.rng.choice(sorted(POLICIES))]
    ref = raw["policy_refs"][0]
    written = ref.replace("-", s.rng.choice(UNICODE_HYPHENS))
    section = f" Section {s.rng.randint(2, 9)}" if s.rng.random() < 0.6 else ""
    first = raw["narrative"].split(". ")[0].rstrip(".")
    raw["narrative"] = f"{first}. {ACTIONS[raw['status']]} per policy {written}{section}."


def _nan_confidence(s: Sample, item: dict[str, Any]) -> None:
    item["confidence"] = float("nan") if s.rng.random() < 0.5 else None


def _off_vocabulary(s: Sample, item: dict[str, Any]) -> None:
    item["label"] = s.rng.choice(("warning", "ok", "CRITICAL"))


MUTATIONS: dict[str, Callable[[Sample, dict[str, Any]], None]] = {
    "silent_contradiction": _silent_contradiction,
    "low_confidence": _low_confidence,
    "missing_field": _missing_field,
    "ungrounded_citation": _ungrounded_citation,
    "grounded_variant": _grounded_variant,
    "nan_confidence": _nan_confidence,
    "off_vocabulary": _off_vocabulary,
}


def generate(n: int = N_ITEMS, seed: int = SEED) -> list[tuple[str, dict[str, Any]]]:
    """``n`` items, each with the kind of fault it carries ("clean" for none)."""
    s = Sample(seed)
    kinds, weights = zip(*FAULTS.items(), strict=True)
    items: list[tuple[str, dict[str, Any]]] = []
    for index in range(1, n + 1):
        kind = s.rng.choices(kinds, weights=weights)[0]
        item = _base(s, index, s.status())
        if kind in MUTATIONS:
            MUTATIONS[kind](s, item)
        items.append((kind, item))
    return items


def main() -> None:
    """Write the sample (seeded, reproducible) and print its mix of faults."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--n", type=int, default=N_ITEMS)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()
    items = generate(args.n, args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8", newline="\n") as handle:
        for _, item in items:
            # allow_nan writes a NaN confidence as the bare token NaN, as some services do.
            handle.write(json.dumps(item, ensure_ascii=False, allow_nan=True) + "\n")
    mix = Counter(kind for kind, _ in items)
    print(f"wrote {len(items)} predictions to {args.out}")
    for kind in FAULTS:
        print(f"  {kind:<22} {mix[kind]:>4}")


if __name__ == "__main__":
    main()
