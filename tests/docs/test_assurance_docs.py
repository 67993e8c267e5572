"""docs/assurance.md: every example runs and prints what the page shows, and the standalone
verifier, copied beside the page's packs, prints what the page's console block shows.

The page's examples run in order in one private Arbiter home (see ``doc_examples``): the
demo store, a key, the pack, its verification, a tampered copy. When the output changes
on purpose: ``python -m tests.docs.refresh_pages docs/assurance.md``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from tests.docs.doc_examples import REPO, Example, Outcome, Session, blocks, examples

PAGE = REPO / "docs" / "assurance.md"
EXAMPLES = examples(PAGE)


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> tuple[Session, dict[str, Outcome]]:
    """Every example of the page, run once in page order; by ``Example.name``."""
    found = Session(tmp_path_factory.mktemp("home") / ".arbiter")
    return found, {example.name: found.run(example) for example in EXAMPLES}


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_example_prints_what_the_page_shows(
    example: Example, session: tuple[Session, dict[str, Outcome]]
) -> None:
    problem = session[1][example.name].problem(example)
    assert problem is None, problem


@pytest.mark.parametrize("command", ["demo", "keys signing init", "assurance pack", "verify"])
def test_page_runs_each_command(command: str) -> None:
    assert any(e.kind == "sh" and e.code.startswith(f"arbiter {command}") for e in EXAMPLES)


def test_the_standalone_verifier_prints_what_the_page_shows(
    session: tuple[Session, dict[str, Outcome]],
) -> None:
    home = session[0].home
    folder = home.parent / "auditor"
    folder.mkdir()
    shutil.copy(REPO / "src" / "arbiter" / "verify_standalone.py", folder)
    for name in ("assurance.zip", "edited.zip", "signing-key.pub.pem"):
        shutil.copy(home / name, folder)
    (console,) = [b for b in blocks(PAGE) if b.language == "console"]
    printed: list[str] = []
    for line in console.text.splitlines():
        if line.startswith("$ python "):
            done = subprocess.run(
                [sys.executable, "-I", *line.removeprefix("$ python ").split()],
                cwd=folder,
                env={"PATH": os.environ.get("PATH", "")},
                capture_output=True,
                text=True,
                check=False,
            )
            printed.append(line)
            printed += done.stdout.splitlines()
            if done.returncode:
                printed.append(f"(exit {done.returncode})")
    shown = [line for line in console.text.splitlines() if line]
    assert Outcome(0, printed).missing(shown) is None, printed
    assert "(exit 1)" in printed
