"""The README's service-wiring example runs as written and prints what it claims."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_online_wiring_example_runs_and_prints_what_it_shows(tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    (example,) = [b for b in blocks if "OnlineScorer" in b]
    code_lines = [line for line in example.splitlines() if line.strip()]
    assert len(code_lines) <= 15 + 2  # the wiring, plus the two lines of shown output
    shown = [line.removeprefix("# ") for line in example.splitlines() if line.startswith("# evt")]
    script = tmp_path / "service.py"
    script.write_text(example, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == shown


# ----------------------------------------------------------- the README's commands run
#
# Two kinds of example: a ``sh`` block of one ``arbiter`` command followed by the ``text``
# block it prints (as on the docs pages), and a transcript, a ``text`` block whose ``$ ``
# lines are commands, each followed by what it prints (``# exit N`` after a command is
# the code it exits with; ``$ export NAME=VALUE`` sets a variable for the commands after
# it). Every one runs, in order, in one private Arbiter home, and must print what the
# README shows. Masked, because they change from run to run: run ids (as on the docs
# pages), signing key ids, and durations.

import shlex  # noqa: E402

import pytest  # noqa: E402

from tests.docs.doc_examples import Example, Outcome, Session, blocks, examples  # noqa: E402

_KEY_ID = re.compile(r"\b[0-9a-f]{16}\b")
_DURATIONS = (
    re.compile(r"\b\d+(?:\.\d+)? ?(?:ms|s)\b"),
    # the judge's critic table: the ms column before the status
    re.compile(r"(?<= )\d+(?:\.\d+)?(?=\s+(?:ok|timeout|error|failed)$)"),
)


def _masked(line: str) -> str:
    line = _KEY_ID.sub("KEYID", line.rstrip())
    if "latency" in line:  # a line of latencies: every figure on it is a duration
        line = re.sub(r"\d+\.\d+", "T", line)
    for pattern in _DURATIONS:
        line = pattern.sub("T", line)
    return line


def transcripts(page: Path) -> list[Example]:
    """The ``$ `` commands of a page's text blocks, each with the lines it prints."""
    found: list[Example] = []
    for block in blocks(page):
        if block.language != "text":
            continue
        lines = block.text.splitlines()
        starts = [i for i, line in enumerate(lines) if line.startswith("$ ")]
        for n, start in enumerate(starts):
            end = starts[n + 1] if n + 1 < len(starts) else len(lines)
            command, _, comment = lines[start][2:].partition("#")
            shown = list(lines[start + 1 : end])
            exit_code = re.match(r"\s*exit (\d+)", comment)
            if exit_code:
                shown.append(f"(exit {exit_code[1]})")
            found.append(
                Example(
                    page, block.line + start + 1, block.chapter, "sh", command.strip(), tuple(shown)
                )
            )
    return found


README_EXAMPLES = sorted(
    [e for e in examples(README) if e.shown is not None] + transcripts(README),
    key=lambda e: e.line,
)


@pytest.fixture(scope="module")
def readme_outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    """Every example of the README, run once in page order; by ``Example.name``."""
    session = Session(tmp_path_factory.mktemp("readme") / ".arbiter")
    exported: dict[str, str] = {}
    results: dict[str, Outcome] = {}
    for example in README_EXAMPLES:
        if example.code.startswith("export "):
            name, _, value = example.code.removeprefix("export ").partition("=")
            exported[name] = value.replace(".arbiter", str(session.home), 1)
            results[example.name] = Outcome(0, [])
            continue
        assignments = " ".join(f"{k}={shlex.quote(v)}" for k, v in exported.items())
        code = f"{assignments} {example.code}".strip()
        results[example.name] = session.run(
            Example(example.page, example.line, example.chapter, "sh", code, example.shown)
        )
    return results


def test_the_readme_has_commands_to_run() -> None:
    commands = [e.code for e in README_EXAMPLES]
    assert any(c.startswith("arbiter jury eval") for c in commands)
    assert any(c.startswith("arbiter judge") for c in commands)
    assert any(c.startswith("arbiter verify") for c in commands)


@pytest.mark.parametrize("example", README_EXAMPLES, ids=[e.name for e in README_EXAMPLES])
def test_a_readme_command_prints_what_the_readme_shows(
    example: Example, readme_outcomes: dict[str, Outcome]
) -> None:
    outcome = readme_outcomes[example.name]
    assert outcome.code == example.exit_code, (example.code, outcome.lines)
    shown = [_masked(line) for line in example.shown or ()]
    masked = Outcome(outcome.code, [_masked(line) for line in outcome.lines])
    missing = masked.missing(shown)
    assert missing is None, f"{example.code}\nnot printed: {missing!r}\n" + "\n".join(outcome.lines)


def test_the_quick_start_names_the_installed_version() -> None:
    import arbiter

    page = (README.parent / "docs" / "quickstart.md").read_text(encoding="utf-8")
    (shown,) = re.findall(r"prints the installed version \(`arbiter ([^`]+)`\)", page)
    assert shown == arbiter.__version__


def test_the_quick_start_names_every_reason_a_test_is_skipped_for() -> None:
    # What the suite skips on when the machine lacks it; the quick start lists each.
    page = (README.parent / "docs" / "quickstart.md").read_text(encoding="utf-8")
    sources = "\n".join(
        path.read_text(encoding="utf-8") for path in (README.parent / "tests").rglob("*.py")
    )
    needs = {
        "ARBITER_TEST_POSTGRES_URL": "ARBITER_TEST_POSTGRES_URL",
        "/usr/bin/chromium": "/usr/bin/chromium",
        "inspect_ai is not installed": "`inspect_ai`",
        "no openssl": "`openssl`",
        "root writes": "other than root",
    }
    for in_tests, on_page in needs.items():
        assert in_tests in sources, in_tests  # the skip still exists
        assert on_page in page, on_page
