"""Redacted previews: enough of a value to recognise its kind, never enough to use it.

Every preview of personal data or a secret goes through one of these; none returns
more than a few characters of the value itself, and the masked part says how long it
was, so two previews of different values rarely read the same.
"""

from __future__ import annotations

__all__ = ["mask", "redact_digits", "redact_email", "redact_secret"]

_MASK = "•"


def mask(value: str, *, keep_start: int = 0, keep_end: int = 0) -> str:
    """``value`` with all but ``keep_start`` leading and ``keep_end`` trailing characters
    masked, and its length said.

    Examples:
        >>> mask("hunter22", keep_start=1)
        'h••• (8 chars)'
    """
    keep_start = min(keep_start, len(value) // 4)
    keep_end = min(keep_end, len(value) // 4)
    head = value[:keep_start]
    tail = value[len(value) - keep_end :] if keep_end else ""
    return f"{head}{_MASK * 3}{tail} ({len(value)} chars)"


def redact_email(address: str) -> str:
    """An e-mail address as its first letter, the domain's first letter and its
    top-level domain.

    Examples:
        >>> redact_email("maria.lopez@gmail.com")
        'm•••@g•••.com'
    """
    local, _, domain = address.rpartition("@")
    host, _, tld = domain.rpartition(".")
    return f"{local[:1]}{_MASK * 3}@{host[:1]}{_MASK * 3}.{tld}"


def redact_digits(value: str, *, keep_end: int = 0, label: str) -> str:
    """A number as its label, its digit count and at most ``keep_end`` last digits.

    Examples:
        >>> redact_digits("4111 1111 1111 1111", keep_end=4, label="card")
        'card ••••1111 (16 digits)'
    """
    digits = [c for c in value if c.isdigit()]
    tail = "".join(digits[len(digits) - keep_end :]) if keep_end else ""
    return f"{label} {_MASK * 4}{tail} ({len(digits)} digits)"


def redact_secret(value: str, *, prefix: str = "") -> str:
    """A secret as its public prefix (``ghp_``, ``sk-proj-``) and its length.

    Examples:
        >>> redact_secret("ghp_abcdefghijklmnopqrstuvwxyz0123456789", prefix="ghp_")
        'ghp_••• (40 chars)'
    """
    return f"{prefix}{_MASK * 3} ({len(value)} chars)"
