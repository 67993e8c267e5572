"""Untrusted text in Markdown stays text on GitHub: rendered by GitHub's own cmark-gfm.

``escape.markdown`` must keep every table cell one cell, make no element of the text and
no link, bare URLs, ``www.`` names and e-mail addresses included (GitHub links those
with no brackets at all), and show the text as it was written.
"""

from __future__ import annotations

import html
import re

import cmarkgfm
import pytest
from cmarkgfm.cmark import Options
from hypothesis import given
from hypothesis import strategies as st

from arbiter import escape

HOSTILE = [
    "see https://evil.example/login?next=/ now",
    "HTTPS://EVIL.EXAMPLE",
    "ftp://files.example/x",
    "www.evil.example/path",
    "mail ceo@evil.example today",
    "mailto:ceo@evil.example",
    "xmpp:bot@evil.example",
    "[click](javascript:alert(1))",
    "![img](https://evil.example/p.png)",
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    "a | b | c",
    "`code` *em* __strong__ ~~gone~~",
    "line one\nline two\r\n| --- |",
    "<https://evil.example>",
    "&lt;b&gt; &amp; &#x3C;",
    "x_https://evil.example y@z",
]
_JOINER = "\u2060"


def rendered_cell(text: str) -> str:
    """``text`` escaped into the middle cell of a table row, rendered as GitHub does."""
    table = f"| a | b | c |\n|---|---|---|\n| left | {escape.markdown(text)} | right |\n"
    return cmarkgfm.github_flavored_markdown_to_html(table, options=Options.CMARK_OPT_UNSAFE)


def cells(page: str) -> list[str]:
    return re.findall(r"<td>(.*?)</td>", page, flags=re.S)


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_text_is_one_cell_with_no_link_and_no_element(text: str) -> None:
    page = rendered_cell(text)
    found = cells(page)
    assert len(found) == 3
    assert found[0] == "left"
    assert found[2] == "right"
    assert "<" not in found[1]  # no element at all: no <a>, <img>, <script>, <code>
    shown = html.unescape(found[1]).replace(_JOINER, "")
    assert shown == " ".join(text.split())


@given(st.text(alphabet=st.sampled_from(list("ab:/.@w|[]()<>&*_`\\ htpsfm")), max_size=40))
def test_any_text_of_link_characters_renders_as_written(text: str) -> None:
    found = cells(rendered_cell(text))
    assert len(found) == 3
    assert "<" not in found[1]
    assert html.unescape(found[1]).replace(_JOINER, "") == " ".join(text.split())
