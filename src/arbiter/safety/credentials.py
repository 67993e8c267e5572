"""Secrets in what an agent said or sent: API keys, tokens, passwords, private keys.

- ``api_key``: keys by the prefixes their issuers give them (OpenAI and Anthropic
  ``sk-``, GitHub ``ghp_`` / ``github_pat_``, GitLab ``glpat-``, Slack ``xox?-`` and
  webhooks, AWS ``AKIA``, Google ``AIza``, Stripe ``sk_live_``, SendGrid, npm, PyPI,
  Hugging Face ``hf_``, Twilio, Telegram bots, ...); ``high`` (a Stripe test key
  ``medium``).
- ``private_key``: a PEM or OpenSSH private key block; ``high``.
- ``token``: a JSON Web Token, a bearer token, or an unnamed string that reads as a
  random token (32 to 128 characters of three character classes, high Shannon entropy);
  ``high``, the unnamed one ``medium``.
- ``password``: a value assigned to a secret's name (``password: ...``,
  ``api_key=...``) or the password of a connection URL (``postgres://u:pw@host``);
  ``high``.

A value that is a placeholder (``sk-...your-key-here``, ``<your api key>``,
``${DB_PASSWORD}``, AWS's documented ``AKIAIOSFODNN7EXAMPLE``) or has too little
entropy to be random is not a secret. Previews show only a key's public prefix and its
length.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection
from functools import cache

from arbiter.contract.safety import SafetyScan, Severity
from arbiter.safety.collect import MAX_CANDIDATES, Collector
from arbiter.safety.patterns import Compiled, Rule, RuleSet, compile_re2
from arbiter.safety.redact import redact_secret
from arbiter.safety.text import DEFAULT_LIMIT

__all__ = ["SECRET_RULES", "is_placeholder", "scan_secrets", "shannon_entropy"]

_MIN_ENTROPY = 3.0
"""Bits per character under which a keyed value is too regular to be a real key."""
_TOKEN_ENTROPY = 4.0
"""Bits per character an unnamed string needs to read as a random token."""

SECRET_RULES: tuple[Rule, ...] = (
    Rule(
        "api_key",
        "high",
        r"\bsk-(?:proj-|svcacct-|admin-|ant-(?:api|admin)\d{2}-)?[A-Za-z0-9_\-]{20,}",
        "an OpenAI or Anthropic key",
    ),
    Rule(
        "api_key",
        "high",
        r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}\b|\bgithub_pat_[A-Za-z0-9_]{22,}",
        "a GitHub token",
    ),
    Rule(
        "api_key",
        "high",
        r"\bglpat-[A-Za-z0-9_\-]{20}\b",
        "a GitLab token",
    ),
    Rule(
        "api_key",
        "high",
        r"\bxox[abposr]-[A-Za-z0-9\-]{10,}",
        "a Slack token",
    ),
    Rule(
        "api_key",
        "high",
        r"https://hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]+",
        "a Slack webhook",
    ),
    Rule(
        "api_key",
        "high",
        r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\b",
        "an AWS access key id",
    ),
    Rule(
        "api_key",
        "high",
        r"(?i)aws_?secret_?access_?key[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9/+]{40}",
        "an AWS secret access key",
    ),
    Rule(
        "api_key",
        "high",
        r"\bAIza[0-9A-Za-z_\-]{35}\b|\bya29\.[0-9A-Za-z_\-]{20,}",
        "a Google API key or OAuth token",
    ),
    Rule(
        "api_key",
        "high",
        r"\b(?:sk|rk)_live_[0-9A-Za-z]{20,}",
        "a live Stripe key",
    ),
    Rule(
        "api_key",
        "medium",
        r"\bsk_test_[0-9A-Za-z]{20,}",
        "a Stripe test key",
    ),
    Rule(
        "api_key",
        "high",
        r"\bSG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{16,64}",
        "a SendGrid key",
    ),
    Rule(
        "api_key",
        "high",
        r"\bnpm_[A-Za-z0-9]{36}\b",
        "an npm token",
    ),
    Rule(
        "api_key",
        "high",
        r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}",
        "a PyPI token",
    ),
    Rule(
        "api_key",
        "high",
        r"\bhf_[A-Za-z0-9]{30,}\b",
        "a Hugging Face token",
    ),
    Rule(
        "api_key",
        "high",
        r"\bSK[0-9a-fA-F]{32}\b|\bkey-[0-9a-zA-Z]{32}\b",
        "a Twilio or Mailgun key",
    ),
    Rule(
        "api_key",
        "high",
        r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b|\bdop_v1_[a-f0-9]{64}\b",
        "a Shopify or DigitalOcean token",
    ),
    Rule(
        "api_key",
        "high",
        r"\b\d{8,10}:AA[0-9A-Za-z_\-]{33}\b",
        "a Telegram bot token",
    ),
    Rule(
        "api_key",
        "high",
        r"\barb_[0-9a-f]{8}_[A-Za-z0-9_\-]{40,}",
        "an Arbiter API key",
    ),
    Rule(
        "private_key",
        "high",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----",
        "a private key",
    ),
    Rule(
        "token",
        "high",
        r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
        "a JSON Web Token",
    ),
    Rule(
        "token",
        "high",
        r"(?i)\bbearer\s+[A-Za-z0-9._\-~+/]{20,}=*",
        "a bearer token",
    ),
    Rule(
        "password",
        "high",
        r"(?i)\b(?:password|passwd|pwd|passphrase|secret|secret[_-]?key|api[_-]?key|apikey|"
        r"access[_-]?token|auth[_-]?token|client[_-]?secret|private[_-]?key|db[_-]?pass(?:word)?)"
        r"\b[\"']?\s*[:=]\s*[\"']?[^\s\"',;]{6,}",
        "a value given to a secret's name",
    ),
    Rule(
        "password",
        "high",
        r"\b[a-z][a-z0-9+.\-]{1,20}://[^\s:/@]{1,64}:[^\s:/@]{3,64}@[^\s/]{1,255}",
        "the password of a connection URL",
    ),
)
"""The secrets detector's rules, in the order their findings are reported."""

_PLACEHOLDER = (
    r"(?i)your|example|sample|xxxx|\*\*\*|placeholder|redacted|dummy|fake|insert|replace|"
    r"changeme|\.\.\.|…|<|>|\$\{|\$\(|%\(|\{\{|env\[|environ|process\.env|getenv|secrets\.|"
    r"^(?:none|null|true|false|password|secret|string|str|required|optional|\w+_here)$"
)
_TOKEN = r"(?:^|[\s\"'`=:(\[])(?P<token>[A-Za-z0-9+/_\-]{32,128}={0,2})(?:$|[\s\"'`,;)\].])"
_PREFIXES = (
    "sk-proj-", "sk-ant-", "sk-svcacct-", "sk-admin-", "sk-", "ghp_", "gho_", "ghu_", "ghs_",
    "ghr_", "github_pat_", "glpat-", "xoxb-", "xoxp-", "xoxa-", "xoxo-", "xoxs-", "xoxr-",
    "AKIA", "ASIA", "AIza", "ya29.", "sk_live_", "rk_live_", "sk_test_", "SG.", "npm_",
    "pypi-", "hf_", "shpat_", "dop_v1_", "eyJ", "arb_",
)  # fmt: skip


@cache
def _rules() -> RuleSet:
    return RuleSet(SECRET_RULES)


@cache
def _compiled(pattern: str) -> Compiled:
    return compile_re2(pattern)


def shannon_entropy(value: str) -> float:
    """Bits per character of ``value``'s character distribution (0 for an empty one).

    Examples:
        >>> round(shannon_entropy("aaaa"), 2), round(shannon_entropy("abcd"), 2)
        (0.0, 2.0)
    """
    if not value:
        return 0.0
    counts = Counter(value)
    total = len(value)
    return max(0.0, -sum(n / total * math.log2(n / total) for n in counts.values()))


def is_placeholder(value: str) -> bool:
    """Whether ``value`` stands for a secret rather than being one (``<your key>``,
    ``sk-...``, ``${TOKEN}``, ``EXAMPLE``), or is too regular to be random."""
    if _compiled(_PLACEHOLDER).search(value) is not None:
        return True
    body = value
    for prefix in _PREFIXES:
        if body.startswith(prefix):
            body = body[len(prefix) :]
            break
    return len(set(body)) < 4 or shannon_entropy(body) < _MIN_ENTROPY


def _not_a_secret(rule: Rule, value: str) -> bool:
    """Whether a rule's value is a placeholder, or (for a password, which people choose
    and so need not be random) a plain word."""
    if rule.category != "password":
        return is_placeholder(value)
    if _compiled(_PLACEHOLDER).search(value) is not None or len(set(value)) < 3:
        return True
    symbols = any(not c.isalnum() for c in value)
    digits = any(c.isdigit() for c in value)
    mixed = any(c.isupper() for c in value) and any(c.islower() for c in value)
    return not (symbols or digits or mixed)


def _secret_value(rule: Rule, matched: str) -> str:
    """The secret itself in a rule's match (the part after ``=`` or ``:`` of an
    assignment, the password of a URL)."""
    if rule.category == "password" and "://" in matched:
        credentials = matched.split("://", 1)[1].rsplit("@", 1)[0]
        return credentials.split(":", 1)[1]
    if rule.category == "password" or "secret_access_key" in matched.lower().replace("-", "_"):
        separator = min((i for i in (matched.find("="), matched.find(":")) if i >= 0), default=-1)
        return matched[separator + 1 :].strip(" \t\"'")
    if rule.category == "token" and matched[:6].lower() == "bearer":
        return matched[6:].strip()
    return matched


def _prefix_of(value: str) -> str:
    return next((p for p in _PREFIXES if value.startswith(p)), "")


def scan_secrets(
    text: str, *, allowed: Collection[str] = (), limit: int | None = DEFAULT_LIMIT
) -> SafetyScan:
    """Scan text an agent said or sent for keys, tokens, passwords and private keys.

    Args:
        text: An answer, a message, the arguments of a tool call.
        allowed: Values the agent may state (compared exactly).
        limit: Characters read (the rest is ignored and the scan says ``truncated``).

    Raises:
        ValueError: ``limit`` is not a positive int or None.

    Examples:
        >>> scan = scan_secrets("token: ghp_" + "aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xY2zA4")
        >>> [(f.category, f.preview) for f in scan.findings]
        [('api_key', 'ghp_••• (40 chars)')]
    """
    collector = Collector("secrets", text, limit)
    text = collector.text
    permitted = frozenset(allowed)
    covered: list[tuple[int, int]] = []
    subject = collector.subject
    for rule, found in _rules().finditer(subject, max_matches=MAX_CANDIDATES):
        start, end = subject.span(found)
        matched = subject.group(found)
        if rule.category == "private_key":
            stop = text.find("-----END", end, end + 20_000)
            end = stop + 8 if stop >= 0 else end
            label = matched.strip("-").removeprefix("BEGIN ")
            shown = f"{label} block ({end - start} chars)"
        else:
            value = _secret_value(rule, matched)
            if value in permitted or _not_a_secret(rule, value):
                continue
            shown = redact_secret(value, prefix=_prefix_of(value))
        covered.append((start, end))
        collector.add(rule.category, rule.severity, start, end, shown, rule.note)
    _unnamed_tokens(collector, permitted, covered)
    return collector.scan()


def _unnamed_tokens(
    collector: Collector, permitted: frozenset[str], covered: list[tuple[int, int]]
) -> None:
    """Strings that read as random tokens though nothing names them."""
    text, subject = collector.text, collector.subject
    for count, found in enumerate(_compiled(_TOKEN).finditer(subject.data)):
        if count >= MAX_CANDIDATES:
            collector.cap(f"token candidates: first {MAX_CANDIDATES} examined")
            return
        value = subject.group(found, "token")
        start = subject.char(found.start(1))
        end = start + len(value)
        if any(s < end and start < e for s, e in covered):
            continue
        if text[max(0, start - 7) : start].endswith(("base64,", "/", ".")):
            continue  # image data, a path, a file name
        if any(c in value for c in "+/="):
            continue  # standard base64 of some bytes: issued tokens use letters, digits, _ and -
        classes = sum(
            (
                any(c.isupper() for c in value),
                any(c.islower() for c in value),
                any(c.isdigit() for c in value),
            )
        )
        if classes < 3 or shannon_entropy(value) < _TOKEN_ENTROPY:
            continue
        if value in permitted or is_placeholder(value):
            continue
        severity: Severity = "medium"
        collector.add(
            "token",
            severity,
            start,
            end,
            redact_secret(value),
            "a string that reads as a random token",
        )
