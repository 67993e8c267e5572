"""Bring the output a page shows up to date with what its examples print now.

    .venv/bin/python -m tests.docs.refresh_pages docs/scorers.md docs/eval-files.md

Runs each page's examples as the tests do (``doc_examples``) and, in every shown block
that no longer matches, replaces the lines that changed by what was printed between the
lines that still match. What the page leaves out stays left out: a ``...`` line, and the
printed lines around an unchanged stretch (progress, latency). The page's run ids are
kept. Review the diff: this rewrites what a reader is told, it does not judge it.
"""

from __future__ import annotations

import difflib
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from tests.docs.doc_examples import RUN_ID, Example, Outcome, Session, _normal, examples
from tests.docs.test_scorer_docs import EXAMPLE_MODULES, OWN_SCORER_CHAPTER, _install_plugin

__all__ = ["refresh_block", "refresh_page"]


def refresh_block(shown: Sequence[str], printed: Sequence[str]) -> list[str]:
    """The shown lines, each stretch between ``...`` lines matched anew against ``printed``."""
    ids = _id_map(shown, printed)
    refreshed: list[str] = []
    position = 0
    segments = _segments(shown)
    for index, segment in enumerate(segments):
        if index:
            refreshed.append("...")
        if not segment:
            continue
        last = index == len(segments) - 1
        lines, position = _refresh_segment(segment, printed, position, ids, last=last)
        refreshed.extend(lines)
    return refreshed


def _segments(shown: Sequence[str]) -> list[list[str]]:
    segments: list[list[str]] = [[]]
    for line in shown:
        if line.strip() == "...":
            segments.append([])
        else:
            segments[-1].append(line)
    return segments


def _refresh_segment(
    segment: list[str], printed: Sequence[str], start: int, ids: dict[str, str], *, last: bool
) -> tuple[list[str], int]:
    """The segment matched against ``printed[start:]``; and where the next one may start.

    A changed stretch at the end of a segment that a ``...`` follows has no unchanged line
    after it to say where it ends: it is taken to end at the next blank line (a table, a
    paragraph), and what follows stays left out.
    """
    wanted = [_normal(line) for line in segment]
    actual = [_normal(line) for line in printed[start:]]
    matcher = difflib.SequenceMatcher(None, wanted, actual, autojunk=False)
    opcodes = matcher.get_opcodes()
    # Drop what was printed before the first and after the last line the page kept.
    while opcodes and opcodes[0][0] == "insert":
        opcodes.pop(0)
    while opcodes and opcodes[-1][0] == "insert":
        opcodes.pop()
    if opcodes and opcodes[-1][0] in ("replace", "delete") and not last:
        tag, i1, i2, j1, j2 = opcodes[-1]
        opcodes[-1] = (tag, i1, i2, j1, _paragraph_end(actual, j1, j2))
    lines: list[str] = []
    end = start
    for number, (tag, i1, i2, j1, j2) in enumerate(opcodes):
        if tag == "equal":
            lines.extend(segment[i1:i2])
        elif tag == "replace":
            lines.extend(_shown_as(printed[start + j1 : start + j2], ids))
        elif tag == "insert":
            beside = {opcodes[number - 1][0], opcodes[number + 1][0]}
            if beside & {"delete", "replace"}:  # part of a changed stretch
                lines.extend(_shown_as(printed[start + j1 : start + j2], ids))
        end = start + j2
    return lines, end


def _paragraph_end(lines: Sequence[str], start: int, end: int) -> int:
    """Where the stretch ``lines[start:end]`` ends: at its first blank line after text."""
    seen_text = False
    for number in range(start, end):
        if lines[number].strip():
            seen_text = True
        elif seen_text:
            return number
    return end


def _shown_as(lines: Sequence[str], ids: dict[str, str]) -> list[str]:
    """Printed lines as the page writes them: its own run ids, no trailing spaces."""
    return [RUN_ID.sub(lambda found: ids.get(found[0], found[0]), line).rstrip() for line in lines]


def _id_map(shown: Sequence[str], printed: Sequence[str]) -> dict[str, str]:
    documented = list(dict.fromkeys(RUN_ID.findall("\n".join(shown))))
    actual = list(dict.fromkeys(RUN_ID.findall("\n".join(printed))))
    return dict(zip(actual, documented, strict=False))


def refresh_page(page: Path, session: Session, plugin: Path) -> int:
    """Refresh every shown block of ``page`` that no longer matches; how many changed.

    The examples of "Writing your own scorer" run with the page's plugin on the path
    (``plugin``), as the tests run them.
    """
    text = page.read_text(encoding="utf-8")
    changed = 0
    for example in examples(page):
        own = example.chapter == OWN_SCORER_CHAPTER
        session.python_path = [EXAMPLE_MODULES, plugin] if own else [EXAMPLE_MODULES]
        outcome = session.run(example)
        if example.shown is None or outcome.missing(example.shown) is None:
            continue
        new = refresh_block(example.shown, outcome.lines)
        if Outcome(outcome.code, outcome.lines).missing(new) is not None:
            print(f"{example.name}: could not be refreshed; edit it by hand", file=sys.stderr)
            continue
        text = _replace_shown(text, example, new)
        changed += 1
    page.write_text(text, encoding="utf-8")
    return changed


def _replace_shown(text: str, example: Example, new: list[str]) -> str:
    assert example.shown is not None
    old = "```text\n" + "\n".join(example.shown) + "\n```"
    assert text.count(old) >= 1, example.name
    return text.replace(old, "```text\n" + "\n".join(new) + "\n```", 1)


def main(paths: Sequence[str]) -> None:
    """Refresh each page, each in a private Arbiter home of its own."""
    with tempfile.TemporaryDirectory() as scratch:
        plugin = _install_plugin(Path(scratch) / "plugin")
        for number, path in enumerate(paths):
            page = Path(path).resolve()
            session = Session(Path(scratch) / f"home-{number}" / ".arbiter")
            print(f"{page.name}: {refresh_page(page, session, plugin)} block(s) refreshed")


if __name__ == "__main__":
    main(sys.argv[1:])
