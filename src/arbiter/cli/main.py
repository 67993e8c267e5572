"""Entry point of the ``arbiter`` command: dispatch, and the one-line error contract.

Every failure prints one line to stderr and exits with the code of the README's exit
table (1 gate failed / system or store unreachable, 2 usage, 3 invalid input, 130
interrupted); ``--debug`` anywhere on the command line shows the traceback instead.
The command-line framework's own errors follow the same rule: an option value that
cannot be used (not a number, out of range, not one of the choices) is invalid input,
exit 3; a command line that cannot be parsed (an unknown option, a missing argument) is
a usage error, exit 2. Both are one line naming the option, with where to find help.
"""

from __future__ import annotations

import gc
import sys
from typing import cast

# isort: off
# Registration order is the order `arbiter --help` lists the commands in: the offline
# loop first, then the jury, then judges' calibration and the grounding gate.
from arbiter.cli import run as _run  # noqa: F401  (registers commands)
from arbiter.cli import inspect as _inspect  # noqa: F401  (registers commands)
from arbiter.cli import log_import as _log_import  # noqa: F401  (registers commands)
from arbiter.cli import scorers as _scorers  # noqa: F401  (registers commands)
from arbiter.cli import jury as _jury  # noqa: F401  (registers commands)
from arbiter.cli import agent as _agent  # noqa: F401  (registers commands)
from arbiter.cli import calibrate as _calibrate  # noqa: F401  (registers commands)
from arbiter.cli import annotate as _annotate  # noqa: F401  (registers commands)
from arbiter.cli import gate_bench as _gate_bench  # noqa: F401  (registers commands)
from arbiter.cli import gate_review as _gate_review  # noqa: F401  (registers commands)
from arbiter.cli import online as _online  # noqa: F401  (registers commands)
from arbiter.cli import keys as _keys  # noqa: F401  (registers commands)
from arbiter.cli import serve as _serve  # noqa: F401  (registers commands)
from arbiter.cli import mcp as _mcp  # noqa: F401  (registers commands)
from arbiter.cli import signing as _signing  # noqa: F401  (registers commands)
from arbiter.cli import verify as _verify  # noqa: F401  (registers commands)
from arbiter.cli import audit_pack as _audit_pack  # noqa: F401  (registers commands)
from arbiter.cli import trust as _trust  # noqa: F401  (registers commands)
from arbiter.cli import inbox as _inbox  # noqa: F401  (registers commands)
from arbiter.cli import redteam as _redteam  # noqa: F401  (registers commands)
from arbiter.cli import assurance as _assurance  # noqa: F401  (registers commands)

# isort: on
import typer

from arbiter.cli.app import app, tidy_help
from arbiter.cli.common import note, usage_error
from arbiter.errors import ArbiterError, GateFailed, Interrupted

__all__ = ["GC_YOUNG_THRESHOLD", "main", "tune_gc"]

tidy_help(app)  # every command is registered above: their help reads whole

# Typer vendors click in newer releases: click's usage error and base exception are
# found from the one Typer exports, whichever click it runs on.
_USAGE_ERROR = cast("type[Exception]", typer.BadParameter.__mro__[1])
_CLICK_EXCEPTION = cast("type[Exception]", typer.BadParameter.__mro__[2])

GC_YOUNG_THRESHOLD = 20_000
"""Allocations between collections of the youngest generation in the ``arbiter`` process."""


def tune_gc() -> None:
    """Collect the youngest generation every 20,000 net allocations instead of 700.

    A run keeps every result (and each result its scores) until its report is built;
    with Python's default threshold the collector walks that growing heap again and
    again, which costs a four-scorer run about a third of its speed
    (``bench/scorer_speed.py``: 3,600 -> 5,400 examples/s). The older generations keep
    their ratios, so memory is still reclaimed, only in fewer, larger passes. The
    process owns this setting: library code leaves the collector alone.
    """
    young, middle, old = gc.get_threshold()
    if 0 < young < GC_YOUNG_THRESHOLD:
        gc.set_threshold(GC_YOUNG_THRESHOLD, middle, old)


def _command_path(args: list[str]) -> str:
    """``arbiter jury eval``: the (sub)command the words of a command line name."""
    command = typer.main.get_command(app)
    path = ["arbiter"]
    for word in args:
        found = (
            command.get_command(typer.Context(command), word)
            if hasattr(command, "get_command")
            else None
        )
        if found is None:
            break
        path.append(word)
        command = found
    return " ".join(path)


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; never lets a traceback reach the user unless ``--debug`` is given."""
    tune_gc()
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    if debug:
        args.remove("--debug")
    try:
        code = app(args=args, prog_name="arbiter", standalone_mode=False)
    except _USAGE_ERROR as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":
            sys.exit(2)  # the help is already printed
        if debug:
            raise
        message, exit_code = usage_error(exc, args, command=_command_path(args))
        note(f"arbiter: error: {message}")
        sys.exit(exit_code)
    except _CLICK_EXCEPTION as exc:
        if debug:
            raise
        text = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        note(f"arbiter: error: {' '.join(text.split())}")
        sys.exit(getattr(exc, "exit_code", 1))
    except typer.Abort:
        note("arbiter: aborted")
        sys.exit(1)
    except GateFailed as exc:
        if debug:
            raise
        sys.exit(exc.exit_code)  # the reasons are already printed
    except ArbiterError as exc:
        if debug:
            raise
        note(f"arbiter: {'interrupted' if isinstance(exc, Interrupted) else 'error'}: {exc}")
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        note("arbiter: interrupted")
        sys.exit(130)
    except Exception as exc:
        if debug:
            raise
        message = " ".join(str(exc).split()) or type(exc).__name__
        note(f"arbiter: internal error: {type(exc).__name__}: {message} (rerun with --debug)")
        sys.exit(1)
    if isinstance(code, int) and code:  # a command or --help ended with typer.Exit(code)
        sys.exit(code)


if __name__ == "__main__":
    main()
