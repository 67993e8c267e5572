"""Generate the bundled demo dataset of ``arbiter demo``: screened card, wire and crypto payments.

Every example is drawn from a named *scenario* -- a kind of legitimate activity
(groceries, payroll, a trip abroad, ...) or a kind of confirmed threat (card testing,
account takeover, structuring, money-mule wires, ...). The ground truth is the
scenario's outcome as a fraud team would confirm it: binary ``high`` (threat) or
``low`` (legitimate). It never looks at the demo classifier's rules, so where the
classifier's rules are blind (structuring, aged mule accounts, scam victims) or
over-eager (big purchases abroad), the evaluation shows it.

The draw is seeded, so the file is reproducible byte for byte::

    python scripts/make_demo_dataset.py                     # rewrite the bundled file
    python scripts/make_demo_dataset.py --out /tmp/t.jsonl  # write elsewhere
"""

from __future__ import annotations

import argparse
import json
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arbiter.contract import Example

SEED = 20240611
"""Seed of the one random generator behind the whole file."""

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "src/arbiter/demo/data/transactions.jsonl"
"""Where the bundled dataset lives."""

HOME_COUNTRIES = ("US", "GB", "DE", "FR", "NL", "ES")
HOME_WEIGHTS = (35, 20, 15, 10, 10, 10)
CURRENCY = {"US": "USD", "GB": "GBP", "DE": "EUR", "FR": "EUR", "NL": "EUR", "ES": "EUR"}
TRAVEL_DESTINATIONS = ("IT", "PT", "GR", "US", "GB", "FR", "ES", "CH", "MX", "TH", "JP", "AE")
SUPPLIER_COUNTRIES = ("DE", "NL", "FR", "IT", "PL", "CN", "US", "GB", "IE")
FRAUD_COUNTRIES = ("RO", "BR", "ID", "UA", "NG", "RU", "VN", "PH", "MY", "US", "GB")
MULE_DESTINATIONS = ("LT", "RO", "BG", "HK", "AE", "TR", "NG", "RU", "GB", "PL")


class Draw:
    """Named draws on one seeded generator, so scenarios read like their description."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def amount(self, low: float, high: float) -> float:
        """A log-uniform amount in [low, high], rounded to cents (small sums are commoner)."""
        return round(math.exp(self.rng.uniform(math.log(low), math.log(high))), 2)

    def flat_amount(self, low: float, high: float) -> float:
        """A uniform amount in [low, high], rounded to cents."""
        return round(self.rng.uniform(low, high), 2)

    def integer(self, low: int, high: int) -> int:
        """A uniform integer in [low, high]."""
        return self.rng.randint(low, high)

    def chance(self, p: float) -> bool:
        """True with probability ``p``."""
        return self.rng.random() < p

    def pick(self, options: Sequence[str]) -> str:
        """One of ``options``, uniformly."""
        return self.rng.choice(options)

    def abroad(self, options: Sequence[str], home: str) -> str:
        """One of ``options`` other than ``home``."""
        return self.rng.choice([c for c in options if c != home])

    def home(self) -> str:
        """A customer's home country, weighted like the book of a European/US bank."""
        return self.rng.choices(HOME_COUNTRIES, weights=HOME_WEIGHTS)[0]


def _txn(
    draw: Draw,
    *,
    home: str,
    amount: float,
    category: str,
    country: str | None = None,
    age: tuple[int, int],
    velocity: tuple[int, int],
    new_device: float,
    hours: tuple[int, int],
    memos: Sequence[str] = ("",),
) -> dict[str, Any]:
    """One transaction's input fields, in the order a screening API would list them."""
    return {
        "amount": amount,
        "currency": CURRENCY[home],
        "merchant_category": category,
        "country": country or home,
        "customer_country": home,
        "account_age_days": draw.integer(*age),
        "txn_count_24h": draw.integer(*velocity),
        "is_new_device": draw.chance(new_device),
        "hour_of_day": draw.integer(*hours) % 24,
        "memo": draw.pick(memos),
    }


# --- legitimate scenarios ---------------------------------------------------------------


def groceries(d: Draw, home: str) -> dict[str, Any]:
    """Weekly shop at a local supermarket."""
    return _txn(
        d,
        home=home,
        amount=d.amount(6, 180),
        category=d.pick(("grocery", "pharmacy")),
        age=(120, 5000),
        velocity=(1, 5),
        new_device=0.02,
        hours=(7, 21),
        memos=("", "weekly shop", "groceries"),
    )


def dining(d: Draw, home: str) -> dict[str, Any]:
    """Restaurants, cafes and fuel near home."""
    return _txn(
        d,
        home=home,
        amount=d.amount(4, 160),
        category=d.pick(("restaurant", "cafe", "fuel")),
        age=(60, 5000),
        velocity=(1, 6),
        new_device=0.03,
        hours=(7, 24),
    )


def large_purchase(d: Draw, home: str) -> dict[str, Any]:
    """A big-ticket purchase at home: a sofa, a laptop, an engagement ring."""
    return _txn(
        d,
        home=home,
        amount=d.amount(1200, 6500),
        category=d.pick(("furniture", "electronics", "jewelry", "home_improvement")),
        age=(300, 5000),
        velocity=(1, 3),
        new_device=0.05,
        hours=(10, 20),
    )


def travel_spend(d: Draw, home: str) -> dict[str, Any]:
    """Spending on a trip abroad; sometimes big, late, and on a freshly set-up phone wallet."""
    return _txn(
        d,
        home=home,
        amount=d.amount(40, 5500),
        category=d.pick(("hotel", "restaurant", "jewelry", "electronics", "car_rental")),
        country=d.abroad(TRAVEL_DESTINATIONS, home),
        age=(400, 6000),
        velocity=(2, 9),
        new_device=0.12,
        hours=(8, 27),
    )


def online_shopping(d: Draw, home: str) -> dict[str, Any]:
    """Everyday e-commerce from the customer's usual devices."""
    return _txn(
        d,
        home=home,
        amount=d.amount(9, 420),
        category=d.pick(("apparel", "books", "home_goods", "electronics")),
        age=(60, 4000),
        velocity=(1, 4),
        new_device=0.08,
        hours=(8, 23),
        memos=("", "order confirmation"),
    )


def subscription(d: Draw, home: str) -> dict[str, Any]:
    """Monthly streaming and software renewals, often billed overnight."""
    return _txn(
        d,
        home=home,
        amount=d.amount(4.99, 29.99),
        category=d.pick(("digital_goods", "streaming", "software")),
        age=(90, 4000),
        velocity=(1, 2),
        new_device=0.0,
        hours=(0, 23),
        memos=("monthly plan", "renewal"),
    )


def travel_booking(d: Draw, home: str) -> dict[str, Any]:
    """Flights and hotels booked online with a foreign merchant."""
    return _txn(
        d,
        home=home,
        amount=d.amount(120, 3200),
        category=d.pick(("airline", "hotel")),
        country=d.abroad(TRAVEL_DESTINATIONS, home),
        age=(200, 5000),
        velocity=(1, 3),
        new_device=0.15,
        hours=(7, 23),
        memos=("", "booking ref"),
    )


def payroll(d: Draw, home: str) -> dict[str, Any]:
    """Salary runs of a small business: large, domestic, in office hours."""
    return _txn(
        d,
        home=home,
        amount=d.amount(1800, 48000),
        category="payroll",
        age=(700, 6000),
        velocity=(1, 6),
        new_device=0.02,
        hours=(8, 17),
        memos=("salary", "payroll run", "wages"),
    )


def supplier_invoice(d: Draw, home: str) -> dict[str, Any]:
    """Paying a foreign supplier's invoice from a long-standing business account."""
    return _txn(
        d,
        home=home,
        amount=d.amount(1500, 14000),
        category="business_services",
        country=d.abroad(SUPPLIER_COUNTRIES, home),
        age=(500, 6000),
        velocity=(1, 4),
        new_device=0.03,
        hours=(8, 18),
        memos=("invoice", "INV payment", "PO settlement"),
    )


def rent(d: Draw, home: str) -> dict[str, Any]:
    """Monthly rent or mortgage by standing order."""
    return _txn(
        d,
        home=home,
        amount=d.amount(700, 3200),
        category="real_estate",
        age=(200, 5000),
        velocity=(1, 2),
        new_device=0.0,
        hours=(6, 10),
        memos=("rent", "mortgage"),
    )


def retail_crypto_buy(d: Draw, home: str) -> dict[str, Any]:
    """A retail investor topping up an exchange account."""
    return _txn(
        d,
        home=home,
        amount=d.amount(40, 2200),
        category="crypto_exchange",
        age=(120, 4000),
        velocity=(1, 3),
        new_device=0.06,
        hours=(7, 23),
        memos=("", "BTC", "ETH"),
    )


def recurring_crypto_buy(d: Draw, home: str) -> dict[str, Any]:
    """A scheduled dollar-cost-averaging purchase."""
    return _txn(
        d,
        home=home,
        amount=d.amount(20, 250),
        category="crypto_exchange",
        age=(200, 4000),
        velocity=(1, 1),
        new_device=0.0,
        hours=(6, 9),
        memos=("recurring buy",),
    )


# --- threat scenarios -------------------------------------------------------------------


def cloned_card(d: Draw, home: str) -> dict[str, Any]:
    """A skimmed card cloned and used in person abroad on resaleable goods."""
    return _txn(
        d,
        home=home,
        amount=d.amount(250, 4200),
        category=d.pick(("electronics", "jewelry", "gift_cards", "apparel")),
        country=d.abroad(FRAUD_COUNTRIES, home),
        age=(300, 5000),
        velocity=(3, 14),
        new_device=0.0,
        hours=(12, 30),
    )


def card_testing(d: Draw, home: str) -> dict[str, Any]:
    """A bot probing a stolen card with tiny charges at high velocity."""
    return _txn(
        d,
        home=home,
        amount=d.flat_amount(0.5, 3.0),
        category=d.pick(("digital_goods", "charity", "gift_cards")),
        country=d.pick((home, home, d.abroad(FRAUD_COUNTRIES, home))),
        age=(30, 4000),
        velocity=(15, 60),
        new_device=0.7,
        hours=(0, 23),
    )


def account_takeover(d: Draw, home: str) -> dict[str, Any]:
    """A phished login on a new device, often from abroad, buying resaleable goods."""
    return _txn(
        d,
        home=home,
        amount=d.amount(250, 2600),
        category=d.pick(("electronics", "gift_cards", "apparel", "jewelry")),
        country=d.pick((home, d.abroad(FRAUD_COUNTRIES, home), d.abroad(FRAUD_COUNTRIES, home))),
        age=(200, 5000),
        velocity=(1, 6),
        new_device=0.92,
        hours=(0, 23),
    )


def structuring(d: Draw, home: str) -> dict[str, Any]:
    """Cash proceeds moved in amounts kept just under the 10,000 reporting threshold."""
    return _txn(
        d,
        home=home,
        amount=d.flat_amount(9000, 9950),
        category="personal_transfer",
        age=(100, 3000),
        velocity=(2, 5),
        new_device=0.05,
        hours=(9, 18),
        memos=("", "savings", "loan repayment", "gift"),
    )


def mule_wire(d: Draw, home: str) -> dict[str, Any]:
    """Fraud proceeds forwarded abroad by a money mule; half the mules use aged accounts."""
    aged = d.chance(0.5)
    return _txn(
        d,
        home=home,
        amount=d.amount(1500, 8500),
        category="personal_transfer",
        country=d.abroad(MULE_DESTINATIONS, home),
        age=(400, 3500) if aged else (3, 40),
        velocity=(1, 7),
        new_device=0.1,
        hours=(8, 22),
        memos=("", "family support", "invoice", "loan"),
    )


def crypto_cash_out(d: Draw, home: str) -> dict[str, Any]:
    """Stolen funds converted to crypto from a freshly opened account."""
    return _txn(
        d,
        home=home,
        amount=d.amount(1500, 15000),
        category="crypto_exchange",
        age=(1, 45),
        velocity=(2, 12),
        new_device=0.6,
        hours=(0, 23),
    )


def scam_victim(d: Draw, home: str) -> dict[str, Any]:
    """A long-standing customer talked into 'investing' by a romance/pig-butchering scammer."""
    return _txn(
        d,
        home=home,
        amount=d.amount(300, 3200),
        category="crypto_exchange",
        age=(900, 7000),
        velocity=(1, 3),
        new_device=0.0,
        hours=(9, 21),
        memos=("", "investment", "trading platform"),
    )


@dataclass(frozen=True)
class Scenario:
    """A named kind of activity, its confirmed outcome, and how many examples to draw."""

    name: str
    cohort: str
    label: str
    count: int
    build: Callable[[Draw, str], dict[str, Any]]


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("groceries", "card_present", "low", 20, groceries),
    Scenario("dining", "card_present", "low", 10, dining),
    Scenario("large_legit_purchase", "card_present", "low", 8, large_purchase),
    Scenario("travel_spend", "card_present", "low", 10, travel_spend),
    Scenario("cloned_card", "card_present", "high", 12, cloned_card),
    Scenario("online_shopping", "card_not_present", "low", 16, online_shopping),
    Scenario("subscription", "card_not_present", "low", 8, subscription),
    Scenario("travel_booking", "card_not_present", "low", 8, travel_booking),
    Scenario("card_testing", "card_not_present", "high", 14, card_testing),
    Scenario("account_takeover", "card_not_present", "high", 14, account_takeover),
    Scenario("payroll", "wire", "low", 16, payroll),
    Scenario("supplier_invoice", "wire", "low", 12, supplier_invoice),
    Scenario("rent", "wire", "low", 8, rent),
    Scenario("structuring", "wire", "high", 10, structuring),
    Scenario("mule_wire", "wire", "high", 14, mule_wire),
    Scenario("retail_crypto_buy", "crypto_onramp", "low", 26, retail_crypto_buy),
    Scenario("recurring_crypto_buy", "crypto_onramp", "low", 14, recurring_crypto_buy),
    Scenario("crypto_cash_out", "crypto_onramp", "high", 14, crypto_cash_out),
    Scenario("scam_victim", "crypto_onramp", "high", 6, scam_victim),
)
"""Every scenario, 60 examples per cohort, 84 of 240 confirmed threats."""


def generate(seed: int = SEED) -> list[Example]:
    """Draw every scenario's examples, shuffle them, and number them ``txn-0001``...

    Args:
        seed: Seed of the random generator; the default reproduces the bundled file.

    Returns:
        The examples in file order.
    """
    draw = Draw(seed)
    drawn: list[tuple[Scenario, dict[str, Any]]] = [
        (scenario, scenario.build(draw, draw.home()))
        for scenario in SCENARIOS
        for _ in range(scenario.count)
    ]
    draw.rng.shuffle(drawn)
    return [
        Example(
            id=f"txn-{number:04d}",
            input=fields,
            expected_label=scenario.label,
            cohort=scenario.cohort,
            metadata={"scenario": scenario.name},
        )
        for number, (scenario, fields) in enumerate(drawn, start=1)
    ]


def write_jsonl(examples: Sequence[Example], path: Path) -> None:
    """Write one JSON object per line, UTF-8, ``\\n`` line ends on every platform."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as handle:
        for example in examples:
            record = example.canonical_dump()
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")


def main(argv: Sequence[str] | None = None) -> None:
    """Parse ``--out`` and ``--seed`` and write the dataset."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output JSONL path")
    parser.add_argument("--seed", type=int, default=SEED, help="random seed")
    args = parser.parse_args(argv)
    examples = generate(args.seed)
    write_jsonl(examples, args.out)
    print(f"wrote {len(examples)} examples to {args.out}")


if __name__ == "__main__":
    main()
