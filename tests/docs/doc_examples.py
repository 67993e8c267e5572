"""The examples of a docs page: found in its Markdown, run as a reader would, compared.

A *shell example* is a fenced ``sh`` block whose command starts with ``arbiter`` (after
optional ``NAME=value`` assignments); a *Python example* is a fenced ``python`` block. Either
is followed by the ``text`` block of what it printed, when the page shows that. A page's
examples run in order in one private Arbiter home, from the root of the repository, at a
terminal width of 120 columns.

What a page shows must appear in what the example printed, line by line and in order
(lines may be left out, and ``...`` marks where). Not compared: run ids (the page's ids
stand for the ids the run printed, in commands too), signing key ids (16 hex digits after
``key``, ``key id`` or ``(``: each session makes its own key), timings (the ``latency``
and ``throughput`` lines, the progress bar). A shown ``(exit N)`` line says the command
exits with N; without one it must exit 0.

When the output of a command changes on purpose, ``python -m tests.docs.refresh_pages
PAGE...`` brings the pages' shown blocks up to date (review its diff).

Commands without a pipe run in this process, through ``arbiter.cli.main.main`` (bash only
expands their words: quotes, ``$(...)``), since starting a Python per command would cost
most of the time; commands with a pipe run in bash.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from unittest import mock

REPO = Path(__file__).resolve().parents[2]
WIDTH = 120
RUN_ID = re.compile(r"\b\d{8}-\d{6}-[0-9a-f]{6}\b")
KEY_ID = re.compile(r"(\bkey(?: id)? |\()[0-9a-f]{16}\b")
_EXIT = re.compile(r"^\(exit (\d+)\)$")
_VOLATILE = re.compile(r"^(latency|throughput) |━.*(/s|eta \d)")
_COMMAND = re.compile(
    r"""^((?:[A-Za-z_][A-Za-z0-9_]*=(?:'[^']*'|"[^"]*"|\S*)\s+)*)(arbiter\b.*)$""", re.S
)
_SHELL_OPERATORS = {"|", "||", "&&", ";", "&", ">", ">>", "<"}
_CLEARED_ENV = (
    "ARBITER_DB_URL",
    "ARBITER_CACHE_DIR",
    "ARBITER_PRICES",
    "ARBITER_MODEL_PRICES",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    # A CI marker makes pytest print its summary lines whole instead of cut to the
    # terminal's width: the examples run as on a person's terminal.
    "CI",
    "BUILD_NUMBER",
)


@dataclass(frozen=True)
class Block:
    """One fenced block of a page."""

    language: str
    text: str
    line: int
    """1-based line of the opening fence."""
    chapter: str
    """The ``##`` heading it sits under."""
    caption: str | None
    """The file it shows, when the line before the fence is ``\\`path\\`:``."""
    follows_block: bool
    """Whether only blank lines separate it from the block before it."""


@dataclass(frozen=True)
class Example:
    """A command or script of a page, with what the page says it prints."""

    page: Path
    line: int
    chapter: str
    kind: Literal["sh", "python"]
    code: str
    shown: tuple[str, ...] | None

    @property
    def name(self) -> str:
        """``scorers.md:120``: where the example is."""
        return f"{self.page.name}:{self.line}"

    @property
    def exit_code(self) -> int:
        """The exit code the page shows, 0 unless an ``(exit N)`` line says otherwise."""
        for line in self.shown or ():
            found = _EXIT.match(line.strip())
            if found:
                return int(found[1])
        return 0


def blocks(page: Path) -> list[Block]:
    """Every fenced block of a Markdown page, in order."""
    found: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    chapter, i, closed = "", 0, -2
    while i < len(lines):
        line = lines[i]
        if line.startswith("## "):
            chapter = line[3:].strip()
        if line.startswith("```") and len(line) > 3:
            end = lines.index("```", i + 1)
            previous = next((t.strip() for t in reversed(lines[:i]) if t.strip()), "")
            caption = re.fullmatch(r"`([^`]+)`:", previous)
            follows = closed >= 0 and not any(t.strip() for t in lines[closed + 1 : i])
            text = "\n".join(lines[i + 1 : end]) + "\n"
            language, captioned = line[3:].strip(), caption[1] if caption else None
            found.append(Block(language, text, i + 1, chapter, captioned, follows))
            i = closed = end
        i += 1
    return found


def examples(page: Path) -> list[Example]:
    """The shell and Python examples of a page, each with the output block after it."""
    found: list[Example] = []
    all_blocks = blocks(page)
    for index, block in enumerate(all_blocks):
        if block.language == "sh" and _COMMAND.match(block.text.strip()):
            kind: Literal["sh", "python"] = "sh"
        elif block.language == "python" and block.caption is None:
            kind = "python"
        else:
            continue
        after = all_blocks[index + 1] if index + 1 < len(all_blocks) else None
        shown = None
        if after is not None and after.language == "text" and after.follows_block:
            shown = tuple(after.text.splitlines())
        code = block.text.replace("\\\n", " ").strip() if kind == "sh" else block.text
        found.append(Example(page, block.line, block.chapter, kind, code, shown))
    return found


@dataclass
class Outcome:
    """What an example printed (stdout and stderr as a terminal shows them) and its code."""

    code: int
    lines: list[str]

    def problem(self, example: Example, *, shown_required: bool = True) -> str | None:
        """Why the example did not do what the page says (wrong exit code, a shown line
        not printed, no output shown to check), or None when it did."""
        printed = "\n".join(self.lines)
        if self.code != example.exit_code:
            return f"{example.code}\nexit {self.code}, the page says {example.exit_code}\n{printed}"
        if example.shown is None:
            return f"{example.name} shows no output to check" if shown_required else None
        missing = self.missing(example.shown)
        if missing is not None:
            return f"{example.code}\nnot printed: {missing!r}\n{printed}"
        return None

    def missing(self, shown: Sequence[str]) -> str | None:
        """The first shown line not found (in order) in the output; None when all are."""
        actual = [_normal(line) for line in self.lines]
        position = 0
        for line in shown:
            wanted = _normal(line)
            if not wanted or wanted == "..." or _EXIT.match(wanted) or _VOLATILE.search(wanted):
                continue
            try:
                position = actual.index(wanted, position) + 1
            except ValueError:
                return line
        return None


def _normal(line: str) -> str:
    return KEY_ID.sub(r"\1KEY", RUN_ID.sub("RUN", line)).rstrip()


@dataclass
class Session:
    """Runs one page's examples in order, in a private Arbiter home, as a reader would."""

    home: Path
    """The Arbiter home (store, cache); shown as ``.arbiter``, the default, in outputs."""
    python_path: list[Path] = field(default_factory=list)
    """Folders on the Python path of every example (plugins, example modules)."""
    _ids: dict[str, str] = field(default_factory=dict)
    _latest: str | None = None

    def run(self, example: Example) -> Outcome:
        """Run an example; the page's run ids in it stand for those printed before."""
        code = RUN_ID.sub(self._actual_id, example.code)
        if example.kind == "python":
            outcome = self._subprocess([sys.executable, "-c", code])
        else:
            outcome = self._shell(code)
        self._remember(example.shown or (), outcome.lines)
        return outcome

    def _actual_id(self, found: re.Match[str]) -> str:
        return self._ids.get(found[0]) or self._latest or found[0]

    def _remember(self, shown: Sequence[str], printed: Sequence[str]) -> None:
        documented = _unique(RUN_ID.findall("\n".join(shown)))
        actual = _unique(RUN_ID.findall("\n".join(printed)))
        self._ids.update(zip(documented, actual, strict=False))
        if actual:
            self._latest = actual[-1]

    def environment(self) -> dict[str, str]:
        """The variables every example sees."""
        env = {name: value for name, value in os.environ.items() if name not in _CLEARED_ENV}
        env.update(
            ARBITER_HOME=str(self.home),
            COLUMNS=str(WIDTH),
            NO_COLOR="1",
            PYTHONUNBUFFERED="1",
            PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
            PYTHONPATH=os.pathsep.join(str(p) for p in self.python_path),
        )
        return env

    def _shell(self, command: str) -> Outcome:
        found = _COMMAND.match(command)
        assert found, command
        assignments, words = found[1], found[2]
        tokens = list(shlex.shlex(words, posix=True, punctuation_chars=True))
        if _SHELL_OPERATORS & set(tokens):
            return self._subprocess(["bash", "-c", command])
        expanded = subprocess.run(
            ["bash", "-c", f"printf '%s\\0' {words}"],
            capture_output=True,
            check=True,
            cwd=REPO,
            env=self.environment(),
        ).stdout.decode()
        argv = expanded.split("\0")[:-1]
        extra = dict(pair.split("=", 1) for pair in shlex.split(assignments))
        return self._in_process(argv[1:], extra)

    def _subprocess(self, argv: list[str]) -> Outcome:
        done = subprocess.run(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=REPO,
            env=self.environment(),
            timeout=300,
        )
        return self._outcome(done.returncode, done.stdout.decode())

    def _in_process(self, argv: list[str], extra: dict[str, str]) -> Outcome:
        from arbiter.cli.main import main

        printed = io.StringIO()
        with (
            self._process_state(extra),
            contextlib.redirect_stdout(printed),
            contextlib.redirect_stderr(printed),
        ):
            try:
                main(argv)
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
        return self._outcome(code, printed.getvalue())

    @contextlib.contextmanager
    def _process_state(self, extra: dict[str, str]) -> Iterator[None]:
        """This process as the examples' shell would start it: environment, folder, path."""
        from arbiter.cli import common

        saved_path, saved_folder = list(sys.path), Path.cwd()
        env = {**self.environment(), **extra}
        with mock.patch.dict(os.environ, env, clear=True):
            sys.path[:0] = [str(p) for p in self.python_path]
            importlib.invalidate_caches()
            os.chdir(REPO)
            # The consoles are made once per process; the width must be this one's.
            common.out_console.cache_clear()
            common.err_console.cache_clear()
            try:
                yield
            finally:
                sys.path[:] = saved_path
                os.chdir(saved_folder)
                common.out_console.cache_clear()
                common.err_console.cache_clear()

    def _outcome(self, code: int, printed: str) -> Outcome:
        text = printed.replace(str(self.home), ".arbiter")
        lines = text.splitlines()
        if code:
            lines.append(f"(exit {code})")
        return Outcome(code, lines)


def _unique(ids: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(ids))
