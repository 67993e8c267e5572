"""Personal data in what an agent said or sent: e-mail, phone, card, IBAN, national ids.

Candidates are found with RE2 and then checked the way the numbers themselves are:

- ``email``: an address whose top-level domain is not a file extension (``icon@2x.png``)
  and that is not a git remote (``git@github.com:org/repo``); ``medium``.
- ``phone``: a number ``phonenumbers`` says is valid: international (``+44 ...``) for
  any country, national for the US (and, with a leading trunk ``0``, for GB, DE, FR, NL,
  AU). ``medium`` when it is written as a phone number (international, an area code in
  parentheses) or said to be one (``call``, ``phone``, ``mobile`` just before); else
  ``low``.
- ``payment_card``: 13 to 19 digits with a valid Luhn check digit, a card network's
  prefix and a card's grouping; ``high``, or ``low`` for the networks' published test
  numbers.
- ``iban``: an IBAN whose country, length and mod-97 check hold (``python-stdnum``);
  ``high``.
- ``national_id``: US SSN, Canadian SIN, French NIR, Spanish DNI and NIE, Italian codice
  fiscale, Brazilian CPF, Indian Aadhaar, Dutch BSN, German tax id, UK NHS number, each
  with its own check (``python-stdnum``); ``high``. Formats that are only digits (a SIN,
  a BSN) need their name just before them.

Values the agent may state (``allowed``: an address it signs with) are never findings.
Previews are redacted (:mod:`~arbiter.safety.redact`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Collection
from dataclasses import dataclass
from functools import cache
from typing import Any

from arbiter.contract.safety import SafetyScan, Severity
from arbiter.safety.collect import MAX_CANDIDATES, Collector
from arbiter.safety.patterns import Compiled, Rule, RuleSet, compile_re2
from arbiter.safety.redact import mask, redact_digits, redact_email
from arbiter.safety.text import DEFAULT_LIMIT

__all__ = ["TEST_CARD_NUMBERS", "luhn_valid", "scan_pii"]

TEST_CARD_NUMBERS = frozenset(
    {
        "4242424242424242",
        "4111111111111111",
        "4000056655665556",
        "4012888888881881",
        "5555555555554444",
        "5105105105105100",
        "2223003122003222",
        "378282246310005",
        "371449635398431",
        "6011111111111117",
        "6011000990139424",
        "3056930009020004",
        "36227206271667",
        "3566002020360505",
        "6200000000000005",
    }
)
"""Card numbers the networks and payment processors publish for testing."""

_CONTEXT_REACH = 48
"""Characters before a number read for the word that says what it is."""
_FILE_EXTENSIONS = frozenset(
    {
        "png",
        "jpg",
        "jpeg",
        "gif",
        "svg",
        "webp",
        "bmp",
        "ico",
        "tif",
        "tiff",
        "js",
        "mjs",
        "ts",
        "css",
        "scss",
        "py",
        "rb",
        "go",
        "rs",
        "java",
        "kt",
        "json",
        "md",
        "txt",
        "html",
        "htm",
        "xml",
        "pdf",
        "zip",
        "gz",
        "tar",
        "csv",
        "yaml",
        "yml",
        "toml",
        "lock",
    }
)
_EMAIL = (
    r"(?:^|[^\w.+\-])(?P<email>[A-Za-z0-9][A-Za-z0-9._%+\-]{0,63}@[A-Za-z0-9](?:[A-Za-z0-9\-]"
    r"{0,62}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9\-]{0,62}[A-Za-z0-9])?)*\.[A-Za-z]{2,24})"
    r"\b"
)
_PHONE = (
    r"(?:^|[^\w+])(?P<phone>(?:\+|00)\d{1,3}(?:[ .\-]?\(?\d{1,5}\)?){2,6}|\(\d{2,5}\)[ .\-]?"
    r"\d{2,5}(?:[ .\-]?\d{2,5}){1,3}|\d{2,5}(?:[ .\-]\d{2,5}){1,4})"
)
_PHONE_WORDS = (
    r"(?i)\b(?:phone|tel|telephone|mobile|cell|call|fax|whatsapp|sms|text\s+me|reach|contact|"
    r"number|ring|dial|hotline)\b[^\d\n]{0,24}$"
)
_NOT_PHONE_WORDS = r"(?i)\b(?:isbn|issn|version|ver|v|order|invoice|ticket|ref|sku|id|no)\W{0,3}$"
# Dates, and the shape of a US SSN: numbers that are not phone numbers whatever they
# would parse as.
_DATE = r"^(?:\d{4}[-./]\d{1,2}[-./]\d{1,2}|\d{1,2}[-./]\d{1,2}[-./]\d{2,4}|\d{3}-\d{2}-\d{4})$"
_CARD = r"(?:^|[^\d])(?P<card>\d(?:[ \-]?\d){12,18})"
_IBAN = r"(?:^|[^A-Za-z0-9])(?P<iban>[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]){11,30})"
_CARD_WORDS = (
    r"(?i)\b(?:cards?|visa|mastercard|master\s+card|amex|american\s+express|discover|jcb|"
    r"diners|unionpay|credit|debit|cc|pan|payment|paid\s+with|charged?)\b"
)
_CARD_GROUPS = ((4, 4, 4, 4), (4, 4, 4, 4, 3), (4, 6, 5), (4, 6, 4), (4, 4, 4, 2), (4, 4, 4, 3))


@dataclass(frozen=True)
class _NationalId:
    """One national id: its pattern, its checker in python-stdnum, whether it needs its
    name before it, and that name."""

    label: str
    pattern: str
    module: str
    context: str | None = None
    """Words one of which must stand just before the number; None: the format suffices."""


_NATIONAL_IDS = (
    _NationalId("US SSN", r"\b\d{3}-\d{2}-\d{4}\b", "stdnum.us.ssn"),
    _NationalId("US SSN", r"\b\d{3} ?\d{2} ?\d{4}\b", "stdnum.us.ssn", r"ssn|social\s+security"),
    _NationalId(
        "Canadian SIN",
        r"\b\d{3}[ \-]?\d{3}[ \-]?\d{3}\b",
        "stdnum.ca.sin",
        r"sin|social\s+insurance",
    ),
    _NationalId(
        "French NIR",
        r"\b[12] ?\d{2} ?(?:0[1-9]|1[0-2]|[2-9]\d) ?(?:\d{2}|2[AB]) ?\d{3} ?\d{3} ?\d{2}\b",
        "stdnum.fr.nir",
    ),
    _NationalId("Spanish DNI", r"\b\d{8}[ \-]?[A-HJ-NP-TV-Z]\b", "stdnum.es.dni"),
    _NationalId("Spanish NIE", r"\b[XYZ][ \-]?\d{7}[ \-]?[A-HJ-NP-TV-Z]\b", "stdnum.es.nie"),
    _NationalId(
        "Italian codice fiscale",
        r"\b[A-Z]{6}\d{2}[A-EHLMPR-T]\d{2}[A-Z]\d{3}[A-Z]\b",
        "stdnum.it.codicefiscale",
    ),
    _NationalId("Brazilian CPF", r"\b\d{3}\.\d{3}\.\d{3}-\d{2}\b", "stdnum.br.cpf"),
    _NationalId("Brazilian CPF", r"\b\d{11}\b", "stdnum.br.cpf", r"cpf"),
    _NationalId(
        "Indian Aadhaar",
        r"\b[2-9]\d{3}[ \-]?\d{4}[ \-]?\d{4}\b",
        "stdnum.in_.aadhaar",
        r"aadhaa?r|uidai|uid",
    ),
    _NationalId(
        "Dutch BSN",
        r"\b\d{4}\.?\d{2}\.?\d{3}\b|\b\d{9}\b",
        "stdnum.nl.bsn",
        r"bsn|burgerservicenummer",
    ),
    _NationalId(
        "German tax id",
        r"\b\d{2} ?\d{3} ?\d{3} ?\d{3}\b",
        "stdnum.de.idnr",
        r"steuer[\w-]*|idnr|identifikationsnummer|tax\s+id",
    ),
    _NationalId("UK NHS number", r"\b\d{3} ?\d{3} ?\d{4}\b", "stdnum.gb.nhs", r"nhs"),
)


@cache
def _compiled(pattern: str) -> Compiled:
    return compile_re2(pattern)


@cache
def _checker(module: str) -> Callable[[str], bool]:
    # python-stdnum's modules load their data on import: imported on first use only.
    found: Any = importlib.import_module(module)
    return found.is_valid  # type: ignore[no-any-return]


@cache
def _phonenumbers() -> Any:
    import phonenumbers

    return phonenumbers


def luhn_valid(digits: str) -> bool:
    """Whether a string of digits ends in a valid Luhn check digit.

    Examples:
        >>> luhn_valid("4111111111111111"), luhn_valid("4111111111111112")
        (True, False)
    """
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = ord(char) - 48
        if index % 2 == 1:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _card_network(digits: str) -> str | None:
    """The card network whose prefix and length ``digits`` has, or None."""
    length, two, four = len(digits), int(digits[:2]), int(digits[:4])
    if digits[0] == "4" and length in (13, 16, 19):
        return "Visa"
    if (51 <= two <= 55 or 2221 <= four <= 2720) and length == 16:
        return "Mastercard"
    if two in (34, 37) and length == 15:
        return "American Express"
    if (digits.startswith("6011") or two == 65 or 644 <= int(digits[:3]) <= 649) and length >= 16:
        return "Discover"
    if 3528 <= four <= 3589 and length >= 16:
        return "JCB"
    if (two in (36, 38, 39) or 300 <= int(digits[:3]) <= 305) and length >= 14:
        return "Diners Club"
    if two == 62 and length >= 16:
        return "UnionPay"
    return None


def _grouped_like_a_card(candidate: str) -> bool:
    groups = tuple(len(part) for part in candidate.replace("-", " ").split(" ") if part)
    return len(groups) == 1 or groups in _CARD_GROUPS


def _in_a_number(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is the fraction or the whole part of a decimal number
    (``0.3888888888888889``), not a number of its own."""
    before = start >= 2 and text[start - 1] in ".," and text[start - 2].isdigit()
    after = end + 1 < len(text) and text[end] in ".," and text[end + 1].isdigit()
    return before or after


def _before(text: str, start: int) -> str:
    return text[max(0, start - _CONTEXT_REACH) : start]


def _emails(collector: Collector, allowed: frozenset[str]) -> None:
    text, subject = collector.text, collector.subject
    for count, found in enumerate(_compiled(_EMAIL).finditer(subject.data)):
        if count >= MAX_CANDIDATES:
            collector.cap(f"e-mail candidates: first {MAX_CANDIDATES} examined")
            return
        address = subject.group(found, "email")
        start = subject.char(found.start(1))
        end = start + len(address)
        tld = address.rsplit(".", 1)[-1].lower()
        if tld in _FILE_EXTENSIONS or (end < len(text) and text[end] == ":"):
            continue
        if address.casefold() in allowed:
            continue
        collector.add("email", "medium", start, end, redact_email(address), "an e-mail address")


def _phones(collector: Collector, allowed: frozenset[str], taken: list[tuple[int, int]]) -> None:
    text, subject = collector.text, collector.subject
    phonenumbers = _phonenumbers()
    checked: dict[str, bool] = {}
    for count, found in enumerate(_compiled(_PHONE).finditer(subject.data)):
        if count >= MAX_CANDIDATES:
            collector.cap(f"phone candidates: first {MAX_CANDIDATES} examined")
            return
        number = subject.group(found, "phone").rstrip(" .-")
        start = subject.char(found.start(1))
        end = start + len(number)
        if any(s < end and start < e for s, e in taken) or _in_a_number(text, start, end):
            continue
        digits = "".join(c for c in number if c.isdigit())
        if not 7 <= len(digits) <= 15 or _compiled(_DATE).search(number) is not None:
            continue
        groups = number.replace("-", ".").replace(" ", ".").split(".")
        if "." in number and "-" not in number and " " not in number and len(groups) == 4:
            continue  # an IP address or a version
        before = _before(text, start)
        if _compiled(_NOT_PHONE_WORDS).search(before) is not None:
            continue
        international = number.startswith(("+", "00"))
        regions: list[str | None] = [None] if international else ["US"]
        if not international and digits.startswith("0"):
            regions = ["GB", "DE", "FR", "NL", "AU"]
            if not 9 <= len(digits) <= 12:
                continue
        elif (
            not international
            and len(digits) != 10
            and not (len(digits) == 11 and digits.startswith("1"))
        ):
            continue  # a US number has ten digits, or eleven with the country code
        known = checked.get(number)
        if known is None:
            known = checked[number] = any(
                _valid_phone(phonenumbers, number, region) for region in regions
            )
        if not known:
            continue
        if number in allowed or digits in allowed:
            continue
        written = international or number.startswith("(")
        said = _compiled(_PHONE_WORDS).search(before) is not None
        severity: Severity = "medium" if written or said else "low"
        shown = redact_digits(number, keep_end=2, label="phone")
        collector.add("phone", severity, start, end, shown, "a valid phone number")


def _valid_phone(phonenumbers: Any, number: str, region: str | None) -> bool:
    candidate = "+" + number[2:] if number.startswith("00") else number
    try:
        parsed = phonenumbers.parse(candidate, region)
    except phonenumbers.NumberParseException:
        return False
    return bool(phonenumbers.is_valid_number(parsed))


def _cards(collector: Collector, allowed: frozenset[str], taken: list[tuple[int, int]]) -> None:
    text, subject = collector.text, collector.subject
    for count, found in enumerate(_compiled(_CARD).finditer(subject.data)):
        if count >= MAX_CANDIDATES:
            collector.cap(f"card candidates: first {MAX_CANDIDATES} examined")
            return
        candidate = subject.group(found, "card")
        digits = candidate.replace(" ", "").replace("-", "")
        if not 13 <= len(digits) <= 19 or not luhn_valid(digits):
            continue
        network = _card_network(digits)
        if network is None or not _grouped_like_a_card(candidate):
            continue
        start = subject.char(found.start(1))
        end = start + len(candidate)
        if _in_a_number(text, start, end):
            continue
        taken.append((start, end))
        if digits in allowed or candidate in allowed:
            continue
        test = digits in TEST_CARD_NUMBERS
        # Digits in card groups read as a card; a bare run of them (an id, a count) only
        # when a card is named just before it.
        grouped = candidate != digits
        named = _compiled(_CARD_WORDS).search(_before(text, start)) is not None
        severity: Severity = "low" if test or not (grouped or named) else "high"
        collector.add(
            "payment_card",
            severity,
            start,
            end,
            redact_digits(digits, keep_end=4, label=network),
            "a published test card number"
            if test
            else f"a {network} number with a valid check digit"
            + ("" if grouped or named else ", not written or named as a card"),
        )


def _ibans(collector: Collector, allowed: frozenset[str], taken: list[tuple[int, int]]) -> None:
    subject = collector.subject
    valid = _checker("stdnum.iban")
    for count, found in enumerate(_compiled(_IBAN).finditer(subject.data)):
        if count >= MAX_CANDIDATES:
            collector.cap(f"IBAN candidates: first {MAX_CANDIDATES} examined")
            return
        candidate = subject.group(found, "iban")
        # The greedy match may run into a following code: try it shorter, char by char.
        for length in range(len(candidate), 14, -1):
            prefix = candidate[:length].rstrip()
            compact = prefix.replace(" ", "")
            if len(compact) >= 15 and valid(compact):
                start = subject.char(found.start(1))
                end = start + len(prefix)
                taken.append((start, end))
                if compact not in allowed:
                    shown = f"IBAN {compact[:2]}••••{compact[-2:]} ({len(compact)} chars)"
                    collector.add("iban", "high", start, end, shown, "an IBAN with a valid check")
                break


@cache
def _id_patterns() -> RuleSet:
    return RuleSet([Rule(spec.label, "high", spec.pattern) for spec in _NATIONAL_IDS])


@cache
def _id_contexts() -> RuleSet:
    contexts = [spec.context for spec in _NATIONAL_IDS if spec.context is not None]
    return RuleSet([Rule("context", "low", rf"(?i)\b(?:{c})\b") for c in dict.fromkeys(contexts)])


def _national_ids(
    collector: Collector, allowed: frozenset[str], taken: list[tuple[int, int]]
) -> None:
    text, subject = collector.text, collector.subject
    # One pass says which formats occur at all, one which of their names: only the
    # formats that occur (with their name, where they need it) are read in full.
    formats = _id_patterns().matching(subject)
    if not formats:
        return
    contexts = _id_contexts()
    named = {contexts.rules[i].pattern for i in contexts.matching(subject)}
    for index in formats:
        spec = _NATIONAL_IDS[index]
        if spec.context is not None and rf"(?i)\b(?:{spec.context})\b" not in named:
            continue
        valid = _checker(spec.module)
        for count, found in enumerate(_compiled(spec.pattern).finditer(subject.data)):
            if count >= MAX_CANDIDATES:
                collector.cap(f"{spec.label} candidates: first {MAX_CANDIDATES} examined")
                break
            start, end = subject.span(found)
            if any(s < end and start < e for s, e in taken) or _in_a_number(text, start, end):
                continue
            value = subject.group(found)
            if spec.context is not None:
                words = rf"(?i)\b(?:{spec.context})\b[^\n]{{0,30}}$"
                if _compiled(words).search(_before(text, start)) is None:
                    continue
            if value in allowed or not valid(value.replace(" ", "")):
                continue
            taken.append((start, end))
            collector.add(
                "national_id",
                "high",
                start,
                end,
                redact_digits(value, label=spec.label)
                if value.replace(" ", "").replace("-", "").replace(".", "").isdigit()
                else f"{spec.label} {mask(value)}",
                f"a {spec.label} with a valid check",
            )


def scan_pii(
    text: str, *, allowed: Collection[str] = (), limit: int | None = DEFAULT_LIMIT
) -> SafetyScan:
    """Scan text an agent said or sent for personal data.

    Args:
        text: An answer, a message, the arguments of a tool call.
        allowed: Values the agent may state (compared exactly; e-mail addresses without
            regard to case).
        limit: Characters read (the rest is ignored and the scan says ``truncated``).

    Raises:
        ValueError: ``limit`` is not a positive int or None.

    Examples:
        >>> scan = scan_pii("Write to maria.lopez@gmail.com")
        >>> [(f.category, f.preview) for f in scan.findings]
        [('email', 'm•••@g•••.com')]
    """
    collector = Collector("pii", text, limit)
    permitted = frozenset(value.casefold() for value in allowed) | frozenset(allowed)
    taken: list[tuple[int, int]] = []
    _emails(collector, permitted)
    _cards(collector, permitted, taken)
    _ibans(collector, permitted, taken)
    _national_ids(collector, permitted, taken)
    _phones(collector, permitted, taken)
    return collector.scan()
