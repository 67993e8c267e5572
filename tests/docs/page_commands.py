"""The examples of a page whose commands are not all ``arbiter``: a ``pytest`` command
line (after optional ``NAME=value`` assignments) runs in bash, with what the other
examples of the page see (the page's Arbiter home, its width, its path), in page order
among them; every other example runs as ``doc_examples`` runs it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.docs.doc_examples import REPO, RUN_ID, Example, Outcome, Session, blocks, examples

__all__ = ["page_examples", "run"]

_PYTEST = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*pytest\b")


def page_examples(page: Path) -> list[Example]:
    """The page's examples (``doc_examples``'s and its ``pytest`` commands), in page order."""
    found = {e.line: e for e in examples(page)}
    every = blocks(page)
    for index, block in enumerate(every):
        if block.language != "sh" or not _PYTEST.match(block.text.strip()):
            continue
        after = every[index + 1] if index + 1 < len(every) else None
        shown = None
        if after is not None and after.language == "text" and after.follows_block:
            shown = tuple(after.text.splitlines())
        code = block.text.replace("\\\n", " ").strip()
        found[block.line] = Example(page, block.line, block.chapter, "sh", code, shown)
    return [found[line] for line in sorted(found)]


def run(session: Session, example: Example) -> Outcome:
    """Run an example of :func:`page_examples` in ``session``."""
    if not _PYTEST.match(example.code):
        return session.run(example)
    code = RUN_ID.sub(session._actual_id, example.code)
    done = subprocess.run(
        ["bash", "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=REPO,
        env=session.environment(),
        timeout=300,
    )
    text = done.stdout.decode().replace(str(session.home), ".arbiter")
    lines = text.splitlines()
    if done.returncode:
        lines.append(f"(exit {done.returncode})")
    session._remember(example.shown or (), lines)  # the page's run ids stand for these
    return Outcome(done.returncode, lines)
