"""The README and docs/ point only at what the repository holds, and say what is true.

Defect 15 of the foundation issue: the docs said the working directory is not importable
(it is), that the run id is printed only at the end (it is printed at the start), and
that an unreachable store exits 3 (it exits 1); and they pointed to files outside the
repository (``../shared/...``). Links are read as GitHub renders them: not inside code.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)")
INLINE_LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^\s)]+)(?:\s+[\"'(][^)]*)?\)"
)
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
HTML_LINK = re.compile(r"<(?:a|img)\s[^>]*?(?:href|src)=\"([^\"]+)\"", re.I)
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)  # https:, mailto:, ...


def page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


def outside_code_blocks(page: Path) -> list[tuple[int, str]]:
    """The page's lines that are not in fenced code, numbered from 1."""
    lines: list[tuple[int, str]] = []
    fence: str | None = None
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        opened = FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
        elif opened:
            fence = opened.group(1)
        else:
            lines.append((number, line))
    return lines


def prose_lines(page: Path) -> list[tuple[int, str]]:
    """The lines outside fenced code, with code spans blanked: what is read as prose."""
    return [(number, CODE_SPAN.sub("``", line)) for number, line in outside_code_blocks(page)]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text, lower-cased, punctuation dropped, dashed."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text stays
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@cache
def anchors(page: Path) -> frozenset[str]:
    """Every anchor the page's headings give, repeated headings numbered as GitHub does."""
    seen: dict[str, int] = {}
    for _, line in outside_code_blocks(page):
        heading = HEADING.match(line)
        if heading:
            base = slug(heading.group(2))
            seen[base] = seen.get(base, 0) + 1
            if seen[base] > 1:
                seen[f"{base}-{seen[base] - 1}"] = 1
    return frozenset(seen)


def links(page: Path) -> list[tuple[int, str]]:
    """Every link target of the page (inline, reference and HTML), by line."""
    found: list[tuple[int, str]] = []
    for number, line in prose_lines(page):
        for pattern in (INLINE_LINK, REFERENCE, HTML_LINK):
            found.extend((number, m.group(1).strip("<>")) for m in pattern.finditer(line))
    return found


def relative_links(page: Path) -> list[tuple[int, str]]:
    """The page's links to files of its own repository (or to its own headings)."""
    return [(number, target) for number, target in links(page) if not EXTERNAL.match(target)]


def test_the_docs_have_pages_and_relative_links_to_check() -> None:
    assert len(PAGES) > 5
    assert sum(len(relative_links(page)) for page in PAGES) > 20  # the reader finds links


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_relative_link_resolves_inside_the_repository(page: Path) -> None:
    broken: list[str] = []
    for number, target in relative_links(page):
        path, _, fragment = target.partition("#")
        resolved = (page.parent / unquote(path)).resolve() if path else page
        where = f"{page_id(page)}:{number}: {target}"
        if not resolved.is_relative_to(ROOT):
            broken.append(f"{where} points outside the repository")
        elif not resolved.exists():
            broken.append(f"{where}: no such file")
        elif fragment and resolved.suffix == ".md" and unquote(fragment) not in anchors(resolved):
            broken.append(f"{where}: no heading with that anchor in {page_id(resolved)}")
    assert broken == []


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_no_page_names_a_path_outside_the_repository(page: Path) -> None:
    # Code included: a command to run from ../shared cannot work in a clone.
    text = page.read_text(encoding="utf-8")
    assert "../shared" not in text
    assert "/work/shared" not in text


WRONG_CLAIMS = {
    "the working directory is not importable": re.compile(
        r"(?:does not|doesn't|never) (?:import from|put|add) the (?:current|working) directory"
        r"|(?:current|working) directory is (?:not|never) (?:importable|on (?:the|python's) "
        r"import path)",
        re.I,
    ),
    "the run id is printed only at the end": re.compile(
        r"run id is (?:only )?printed only (?:when|after|at the end)"
        r"|run id is printed (?:only )?(?:when|after) (?:a|the) run (?:finishes|ends)",
        re.I,
    ),
    "an unreachable store exits 3": re.compile(
        r"(?:store|database) (?:cannot be reached|is unreachable)[^.]*?"
        r"exits? (?:with )?(?:code )?(?:\*\*)?3\b",
        re.I,
    ),
}


@pytest.mark.parametrize("claim", WRONG_CLAIMS, ids=list(WRONG_CLAIMS))
def test_a_claim_found_wrong_never_returns(claim: str) -> None:
    pattern = WRONG_CLAIMS[claim]
    found: list[str] = []
    for page in PAGES:
        prose = " ".join(line for _, line in prose_lines(page))
        found.extend(
            f"{page_id(page)}: {m.group(0)!r}" for m in pattern.finditer(" ".join(prose.split()))
        )
    assert found == []


UNREACHABLE = re.compile(r"unreachable|cannot be reached|could not be reached", re.I)


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_an_exit_code_table_puts_an_unreachable_store_under_1(page: Path) -> None:
    rows = [line for _, line in prose_lines(page) if re.match(r"^\| *\d+ *\|", line)]
    store_rows = [row for row in rows if "store" in row and UNREACHABLE.search(row)]
    assert [row for row in store_rows if int(row.split("|")[1]) != 1] == []
