"""Figures in text — numbers, money, percentages, dates, times, durations — normalised.

``1,200`` = ``twelve hundred`` = ``1.2k``; ``$2,500`` = ``$2.5k``; ``50%`` = ``fifty
percent`` = ``half of``; ``two weeks`` = ``14 days``; ``March 3, 2026`` = ``2026-03-03``;
``25p`` = ``£0.25``. Identifiers (``INC-2209``, ``p99``, ``v2``), version strings and
list markers are not figures.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from arbiter.jury.detectors.figure_words import (
    MONTH,
    MONTH_NUMBER,
    NUMBER_WORD,
    SCALES,
    WORD_VALUES,
    anchors,
)
from arbiter.jury.detectors.text import STOPWORDS, stem

__all__ = ["UNIT_TOLERANCE", "Kind", "Quantity", "extract_quantities", "same_value"]

Kind = Literal["number", "label", "ordinal", "year", "money", "percent", "date", "time", "duration"]
"""What a figure measures; only figures of one kind are compared."""

_DIGITS = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?!\d|\.\d|,\d{3})"
# Digits glued to a word, a path or an identifier ("p99", "v2/", "INC-2209") are no figure.
_NUMD = r"(?<![\w.,/#:\-])" + _DIGITS
_NUMW = rf"\b(?:{NUMBER_WORD})(?:[ \t-]+(?:{NUMBER_WORD}))*\b(?:\s*\(\s*\d[\d,.]*\s*\))?"
_NUM = rf"(?:{_NUMD}|{_NUMW})"
# The second end of a range may follow a hyphen ("2-4 weeks").
_RANGE_END = rf"(?:(?<![\w.,/#:]){_DIGITS}|{_NUMW})"
_YEAR = r"(?:19|20)\d{2}"
_WHOLE_YEAR = re.compile(_YEAR)
_NUMBER_WORD_GAP = re.compile(r"[\s\-]+")

_PATTERN = re.compile(
    "|".join(
        [
            r"(?P<listmark>(?:^|(?<=\n)|(?<=\n )|(?<=\n  )|(?<=\n   )|(?<=\n\t))"
            r"\d{1,2}[.)](?=\s))",
            r"(?P<version>(?<![\w.])\d+(?:\.\d+){2,}\b)",
            r"(?P<slash>(?<![\w/])\d{1,4}/\d{1,4}(?:/\d{1,4})?(?![\w/]))",
            rf"(?P<iso>(?<![\w\-])(?P<iso_y>{_YEAR})-(?P<iso_m>0[1-9]|1[0-2])"
            r"-(?P<iso_d>0[1-9]|[12]\d|3[01])(?!\w))",
            rf"(?P<dmy>\b(?P<dmy_d>[0-3]?\d)(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<dmy_m>{MONTH})\b"
            rf"(?:,?\s+(?P<dmy_y>{_YEAR})\b)?)",
            rf"(?P<mdy>\b(?P<mdy_m>{MONTH})\.?\s+(?P<mdy_d>[0-3]?\d)(?:st|nd|rd|th)?\b(?![:.]\d)"
            rf"(?:,?\s+(?P<mdy_y>{_YEAR})\b)?)",
            rf"(?P<my>\b(?P<my_m>{MONTH})\s+(?P<my_y>{_YEAR})\b)",
            r"(?P<time>(?<![\w:.])(?P<t_h>[01]?\d|2[0-3]):(?P<t_m>[0-5]\d)"
            r"(?:\s?(?P<t_ap>[ap]\.?m\b\.?))?(?!\d|:\d)"
            r"|(?<![\w:.])(?P<t_h2>1[0-2]|0?[1-9])\s?(?P<t_ap2>[ap]\.?m\b\.?))",
            rf"(?P<money>(?P<m_cur>US\$|A\$|C\$|NZ\$|HK\$|\$|€|£|¥|₹|(?:USD|EUR|GBP)(?=\s?\d))\s?(?P<m_n>{_NUMD})"
            r"(?P<m_mul>(?:k|bn|m)\b|\s(?:thousand|million|billion|bn)\b)?)",
            rf"(?P<money2>(?P<m2_n>{_NUM})(?P<m2_mul>\s(?:thousand|million|billion)\b)?\s?"
            r"(?P<m2_cur>dollars?|euros?|pounds?(?!\s+of)|usd|eur|gbp|cents?|pence|p)\b)",
            rf"(?P<pct>(?P<p_n>{_NUM})\s?(?:%|\s?per\s?cent\b|\s?percent\b))",
            r"(?P<half>\bhalf(?=\s+(?:of|the)\b))",
            rf"(?P<dur>(?P<d_n>{_NUM})(?:\s*(?:-|–|to|and|or)\s*(?P<d_n2>{_RANGE_END}))?[ \t-]*"
            r"(?:(?P<d_q>business|working|calendar|school)[ \t-]+)?"
            r"(?P<d_u>seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|nights?|weeks?|"
            r"fortnights?|months?|years?|yrs?|decades?)\b(?:['’]s\b|['’])?)",
            r"(?P<ord>(?<![\w.])\d+(?:st|nd|rd|th)\b)",
            rf"(?P<num>(?P<n_n>{_NUM})(?P<n_mul>(?<=\d)k\b|\s(?:thousand|million|billion)\b)?"
            r"(?![A-Za-z]))",
        ]
    ),
    re.IGNORECASE,
)
_PAREN = re.compile(r"\(\s*(\d[\d,.]*)\s*\)")
_MULTIPLIER = {"k": 1e3, "m": 1e6, "bn": 1e9, "thousand": 1e3, "million": 1e6, "billion": 1e9}
_CURRENCY = {
    "dollar": "$",
    "dollars": "$",
    "usd": "$",
    "cent": "$",
    "cents": "$",
    "euro": "€",
    "euros": "€",
    "eur": "€",
    "pound": "£",
    "pounds": "£",
    "gbp": "£",
    "pence": "£",
    "p": "£",
}
_DAYS = {
    "sec": 1 / 86400,
    "second": 1 / 86400,
    "min": 1 / 1440,
    "minute": 1 / 1440,
    "hour": 1 / 24,
    "hr": 1 / 24,
    "day": 1.0,
    "night": 1.0,
    "week": 7.0,
    "fortnight": 14.0,
    "month": 30.436875,
    "year": 365.2425,
    "yr": 365.2425,
    "decade": 3652.425,
}
_HEDGE = re.compile(
    r"(?:about|around|roughly|approximately|approx\.?|nearly|almost|circa|some|~|close\s+to|"
    r"just\s+over|just\s+under)\s*$",
    re.IGNORECASE,
)
_PREFIX_WORD = re.compile(r"([A-Za-z][A-Za-z\-]*)[ \t]+$")
_NEXT_WORD = re.compile(r"[ \t]*([A-Za-z][A-Za-z'’\-]*)")
UNIT_TOLERANCE = 0.005
"""Relative slack between two durations always allowed (units convert inexactly)."""


@dataclass(frozen=True, slots=True)
class Quantity:
    """One figure found in a text, normalised for comparison."""

    kind: Kind
    value: float
    """Canonical value: currency units, percent, days (durations), minutes after
    midnight (times), ``y*10000 + m*100 + d`` with 0 for an unknown part (dates)."""
    unit: str
    """Currency symbol (money), ``business`` or empty (durations), the preceding word's
    stem (labels such as ``Week 1``), else empty."""
    surface: str
    """The unit as written, singular (``minute``, ``%``, ``£``), for same-unit checks."""
    start: int
    end: int
    text: str
    """The figure as written, e.g. ``$2.5k`` or ``2 to 4 business days``."""
    hedged: bool
    """Preceded by "about", "nearly" and the like."""
    amount: float
    """The number as written, before units and multipliers (6 in "6 hours")."""


def _number(raw: str) -> float | None:
    paren = _PAREN.search(raw)
    if paren:
        raw = paren.group(1)
    raw = raw.strip()
    if raw[:1].isdigit():
        try:
            return float(raw.replace(",", ""))
        except ValueError:
            return None
    total = current = 0.0
    for word in _NUMBER_WORD_GAP.split(raw.lower()):
        if word in WORD_VALUES:
            current += WORD_VALUES[word]
        elif word == "hundred":
            current = (current or 1.0) * 100
        elif word in SCALES:
            total += (current or 1.0) * SCALES[word]
            current = 0.0
    return total + current


def _multiplier(raw: str | None) -> float:
    return _MULTIPLIER.get((raw or "").strip().lower(), 1.0)


def _date_value(year: str | None, month: str, day: str | None) -> float:
    y = int(year) if year else 0
    m = int(month) if month.isdigit() else MONTH_NUMBER[month.rstrip(".")]
    return float(y * 10000 + m * 100 + (int(day) if day else 0))


def _time_value(hour: str, minute: str | None, meridiem: str | None) -> float:
    h = int(hour)
    half = (meridiem or "").lower()[:1]
    if half == "p" and h < 12:
        h += 12
    elif half == "a" and h == 12:
        h = 0
    return float(h * 60 + int(minute or 0))


def extract_quantities(text: str) -> list[Quantity]:
    """Every figure of ``text``, in order of appearance, with non-overlapping spans.

    Examples:
        >>> [(q.kind, q.value) for q in extract_quantities("twelve hundred seats, $2.5k")]
        [('number', 1200.0), ('money', 2500.0)]
    """
    found: list[Quantity] = []
    position = 0
    # Every alternative of _PATTERN starts at an anchor: it is only tried there.
    for start, end in anchors(text):
        if start < position:
            continue
        match = _PATTERN.match(text, start)
        if match is None:
            position = end
            continue
        position = max(match.end(), end)
        group = match.lastgroup
        if group in ("listmark", "version", "slash", None):
            continue
        before = text[max(0, match.start() - 24) : match.start()]
        hedged = _HEDGE.search(before) is not None
        found.extend(_build(group, match, text, hedged))
    return found


def _build(group: str, m: re.Match[str], text: str, hedged: bool) -> list[Quantity]:
    s, e, raw = m.start(), m.end(), m.group()

    def one(
        kind: Kind, value: float, unit: str = "", surface: str = "", amount: float | None = None
    ) -> list[Quantity]:
        return [Quantity(kind, value, unit, surface, s, e, raw, hedged, amount or value)]

    if group in ("iso", "dmy", "mdy", "my"):
        prefix = group + "_"
        parts = m.groupdict()
        value = _date_value(parts.get(prefix + "y"), parts[prefix + "m"], parts.get(prefix + "d"))
        return one("date", value)
    if group == "time":
        if m.group("t_h") is not None:
            return one("time", _time_value(m.group("t_h"), m.group("t_m"), m.group("t_ap")))
        return one("time", _time_value(m.group("t_h2"), None, m.group("t_ap2")))
    if group == "money":
        amount = _number(m.group("m_n"))
        if amount is None:
            return []
        written = m.group("m_cur")
        symbol = "$" if written in ("$", "US$") else _CURRENCY.get(written.lower(), written)
        return one("money", amount * _multiplier(m.group("m_mul")), symbol, symbol, amount)
    if group == "money2":
        amount = _number(m.group("m2_n"))
        word = m.group("m2_cur").lower()
        if amount is None:
            return []
        scale = 0.01 if word in ("p", "pence", "cent", "cents") else 1.0
        symbol = _CURRENCY[word]
        return one("money", amount * scale * _multiplier(m.group("m2_mul")), symbol, symbol, amount)
    if group == "pct":
        percent = _number(m.group("p_n"))
        return one("percent", percent, "", "%") if percent is not None else []
    if group == "half":
        return one("percent", 50.0, "", "%")
    if group == "dur":
        return _durations(m, hedged)
    if group == "ord":
        return one("ordinal", float(re.sub(r"\D", "", raw)))
    number = _number(m.group("n_n"))
    if number is None or raw.strip().lower() == "one":
        return []
    value = number * _multiplier(m.group("n_mul"))
    if _WHOLE_YEAR.fullmatch(raw):
        return one("year", value)
    label = _label_of(text, s, e)
    return one("label", value, label) if label else one("number", value)


def _durations(m: re.Match[str], hedged: bool) -> list[Quantity]:
    unit_word = m.group("d_u").lower().rstrip("s")
    days = _DAYS[unit_word]
    surface = {"sec": "second", "min": "minute", "hr": "hour", "yr": "year"}.get(
        unit_word, unit_word
    )
    qualifier = "business" if (m.group("d_q") or "").lower() in ("business", "working") else ""
    raw = m.group()
    first = _number(m.group("d_n"))
    second = _number(m.group("d_n2")) if m.group("d_n2") else None
    if first is None:
        return []

    def make(amount: float, start: int, end: int) -> Quantity:
        return Quantity(
            "duration", amount * days, qualifier, surface, start, end, raw, hedged, amount
        )

    if second is not None:
        return [make(first, m.start("d_n"), m.end("d_n")), make(second, m.start("d_n2"), m.end())]
    return [make(first, m.start(), m.end())]


def _label_of(text: str, start: int, end: int) -> str:
    """The stem of the word naming a bare number ("Week 1", "HTTP 413"), or ''.

    A number is a label when a content word stands right before it and no content
    word follows it ("Week 1:", "Python 3.10 or newer"); "hire 4 engineers" is a count.
    """
    prefix = _PREFIX_WORD.search(text, max(0, start - 30), start)
    if prefix is None or prefix.group(1).lower() in STOPWORDS:
        return ""
    following = _NEXT_WORD.match(text, end)
    if following and following.group(1).lower().replace("’", "'") not in STOPWORDS:
        return ""
    return stem(prefix.group(1))


def same_value(a: Quantity, b: Quantity, *, tolerance: float = 0.0) -> bool:
    """Whether two figures of comparable kinds state the same value.

    Args:
        a: One figure.
        b: The other.
        tolerance: Relative slack, applied when either figure is hedged.
    """
    if a.kind == "date" or b.kind == "date":
        return a.kind == b.kind and _same_date(int(a.value), int(b.value))
    if a.kind == "money" and a.unit != b.unit:
        return False
    slack = tolerance if (a.hedged or b.hedged) else 0.0
    if a.kind == "duration":
        slack = max(slack, UNIT_TOLERANCE)
    largest = max(abs(a.value), abs(b.value))
    return abs(a.value - b.value) <= slack * largest + 1e-9


def _same_date(a: int, b: int) -> bool:
    ya, ma, da = a // 10000, a // 100 % 100, a % 100
    yb, mb, db = b // 10000, b // 100 % 100, b % 100
    return ma == mb and (not ya or not yb or ya == yb) and (not da or not db or da == db)
