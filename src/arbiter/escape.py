"""Untrusted text made inert for where it lands: a terminal, Markdown, XML or HTML.

What a system under test, a dataset, a trace or a model produced is data. Before it is
printed or written into a report it goes through the function for that medium:

- :func:`terminal`: control characters (ESC sequences that clear the screen or retitle
  the window, carriage returns that overwrite a line, bidirectional overrides that
  reorder what is read) become visible escapes such as ``\\x1b``;
- :func:`markdown`: the same, plus what Markdown would interpret (table pipes, links,
  emphasis, HTML tags, line breaks), for one table cell or inline run;
- :func:`xml`: characters XML 1.0 cannot hold (NUL, BEL, lone surrogates) become
  visible escapes; ElementTree escapes ``&``, ``<`` and ``>`` itself;
- :func:`html`: HTML-escaped, after :func:`terminal`;
- :func:`json_text`: a JSON document that prints inertly and parses back to the same
  data (what a terminal would obey is written as ``\\uXXXX`` escapes).

Each runs in time linear in its input and bounds it when asked (``limit``).
"""

from __future__ import annotations

import html as _html
import json
import re
from typing import Any

__all__ = ["clip", "html", "json_text", "markdown", "terminal", "xml"]

# C0 controls, DEL, C1 controls, and the Unicode controls that reorder or hide text.
_TERMINAL_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064"
    "\u2066-\u2069\ud800-\udfff\ufeff]"
)
_TERMINAL_UNSAFE_LINES = re.compile(_TERMINAL_UNSAFE.pattern[:-1] + "\n\t]")
# What XML 1.0 cannot carry at all: C0 controls but tab/newline/return, lone
# surrogates, U+FFFE and U+FFFF.
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
# What json.dumps leaves raw that a terminal obeys: DEL, C1 controls, the characters that
# reorder or hide text, and lone surrogates (json.dumps escapes the C0 controls itself).
_JSON_UNSAFE = re.compile(
    "[\x7f-\x9f\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u2069\ud800-\udfff\ufeff]"
)
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()|~])")
# What GitHub's Markdown turns into a link with no brackets at all: a URL scheme before
# its colon, ``www`` before its dot, the ``@`` of an e-mail address.
_BARE_LINK = re.compile(
    r"(?i)(?<![a-z0-9])(?:https?|ftp|mailto|xmpp)(?=:)|(?<![a-z0-9])www(?=\.)|@(?=\w)"
)
_WORD_JOINER = "&#8288;"
"""An invisible character (U+2060, as an entity) that splits a bare link apart."""


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clip(text: str, limit: int | None) -> str:
    """``text`` cut to ``limit`` characters, with ``…`` saying it was cut."""
    if limit is None or len(text) <= limit:
        return text
    return text[: max(0, limit - 1)] + "…"


def terminal(text: object, *, limit: int | None = None, single_line: bool = False) -> str:
    """Text safe to print to a terminal: every control character shown, not obeyed.

    Args:
        text: Anything; it is turned into a string first.
        limit: Longest result (characters), or None.
        single_line: Show newlines and tabs as ``\\x0a`` / ``\\x09`` too (table cells).

    Examples:
        >>> terminal("ok\\x1b[2J")
        'ok\\\\x1b[2J'
    """
    value = clip(str(text), limit)
    pattern = _TERMINAL_UNSAFE_LINES if single_line else _TERMINAL_UNSAFE
    return pattern.sub(_visible, value)


def markdown(text: object, *, limit: int | None = None) -> str:
    """Text for one Markdown table cell or inline run: shown as written, never interpreted.

    Newlines become spaces; pipes, brackets, emphasis and HTML are escaped, and a bare
    URL, ``www.`` name or e-mail address is split by an invisible word joiner so that it
    shows as written but is not made a link.

    Examples:
        >>> markdown("a|b [x](javascript:alert(1)) <b>")
        'a\\\\|b \\\\[x\\\\]\\\\(javascript:alert\\\\(1\\\\)\\\\) &lt;b&gt;'
    """
    value = terminal(" ".join(str(text).split()), limit=limit, single_line=True)
    value = _MARKDOWN_SPECIAL.sub(r"\\\1", value)
    value = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _BARE_LINK.sub(lambda m: m.group(0) + _WORD_JOINER, value)


def xml(text: object, *, limit: int | None = None) -> str:
    """Text XML 1.0 can hold and a viewer shows as written: invalid characters, and the
    controls :func:`terminal` escapes, shown as escapes (markup is left to the XML
    writer, which escapes ``&``, ``<`` and ``>``).

    Examples:
        >>> xml("bell\\x07 nul\\x00")
        'bell\\\\x07 nul\\\\x00'
    """
    return _XML_INVALID.sub(_visible, terminal(text, limit=limit))


def html(text: object, *, limit: int | None = None) -> str:
    """Text for HTML element content or a quoted attribute."""
    return _html.escape(terminal(text, limit=limit), quote=True)


def json_text(payload: Any, *, indent: int | None = 2) -> str:
    """``payload`` as JSON text, UTF-8 as is but inert on a terminal, and lossless.

    Characters a terminal would obey (and lone surrogates, which no UTF-8 stream can
    carry) are written as ``\\uXXXX`` escapes: valid JSON that parses back to the very
    same string. No trailing newline.
    """
    text = json.dumps(payload, indent=indent, ensure_ascii=False)
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)
