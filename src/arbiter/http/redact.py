"""Secrets never reach a message, a report or the store: redaction of text and URLs."""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import SplitResult, parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["REDACTED", "SECRET_QUERY_KEYS", "redact", "redact_url"]

REDACTED = "[redacted]"
"""What stands where a secret was."""

SECRET_QUERY_KEYS = frozenset(
    {
        "access_token",
        "api-key",
        "api_key",
        "apikey",
        "auth",
        "authorization",
        "client_secret",
        "code",
        "key",
        "password",
        "pass",
        "pwd",
        "secret",
        "sig",
        "signature",
        "token",
        "x-api-key",
    }
)
"""Query parameters whose value is taken for a secret (compared case-insensitively)."""

# "api_key=...", "token: ...", "password=..." inside free text (an error echoing a URL).
_SECRET_IN_TEXT = re.compile(
    r"(?i)\b("
    + "|".join(re.escape(k) for k in sorted(SECRET_QUERY_KEYS, key=len, reverse=True))
    + r")=([^\s&#\"']+)"
)
_SHORT_SECRET = 8
"""Secrets shorter than this are replaced only where they stand as a whole word."""
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^/\s@:]+):([^/\s@]+)@")


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every given secret, URL password and secret query value replaced.

    Args:
        text: Any text that may echo a request (an error message, a URL).
        secrets: Exact values to hide (API keys, tokens); empty ones are ignored.

    Examples:
        >>> redact("GET http://h/x?api_key=s3cr3t&n=1 failed")
        'GET http://h/x?api_key=[redacted]&n=1 failed'
        >>> redact("refused key sk-123", ["sk-123"])
        'refused key [redacted]'
        >>> redact("expected 'text', key x", ["x"])
        "expected 'text', key [redacted]"
    """
    for secret in secrets:
        if not secret:
            continue
        if len(secret) >= _SHORT_SECRET:
            text = text.replace(secret, REDACTED)
        else:
            # A short value (a placeholder key such as "x" for a local server) would
            # blank every letter it matches: it is hidden only where it stands whole.
            whole = re.compile(rf"(?<![\w-]){re.escape(secret)}(?![\w-])")
            text = whole.sub(REDACTED, text)
    text = _USERINFO.sub(lambda m: f"{m.group(1)}{m.group(2)}:{REDACTED}@", text)
    return _SECRET_IN_TEXT.sub(lambda m: f"{m.group(1)}={REDACTED}", text)


def redact_url(url: str) -> str:
    """The URL as it may be shown or stored: password and secret query values replaced.

    Examples:
        >>> redact_url("https://bob:pw@api.example/v1?key=abc&model=m")
        'https://bob:[redacted]@api.example/v1?key=[redacted]&model=m'
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact(url)
    netloc = parts.netloc
    if parts.password is not None:
        user = parts.username or ""
        host = netloc.rpartition("@")[2]
        netloc = f"{user}:{REDACTED}@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(key.lower() in SECRET_QUERY_KEYS for key, _ in pairs):
            cleaned = [
                (key, REDACTED if key.lower() in SECRET_QUERY_KEYS else value)
                for key, value in pairs
            ]
            query = urlencode(cleaned, safe="[]")
    return urlunsplit(SplitResult(parts.scheme, netloc, parts.path, query, parts.fragment))
