"""``arbiter scorers``: the scorers a run can name, with their arguments.

Lists the built-in scorers, the engines' and every installed plugin's (the entry-point
group ``arbiter.scorers``), as ``arbiter run --scorer`` finds them. A plugin that cannot
be loaded is named on stderr and the others are still listed.
"""

from __future__ import annotations

import inspect
import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

from arbiter.cli.app import app
from arbiter.cli.common import TableColumn, echo_json, fitted_table, note, out_console

if TYPE_CHECKING:
    from rich.console import RenderableType

    from arbiter.scoring.base import ScorerFactory

__all__ = ["describe_scorer", "scorers"]


def describe_scorer(factory: ScorerFactory) -> dict[str, Any]:
    """What ``arbiter scorers --json`` says of one scorer: a JSON object.

    Keys: ``name``, ``kind``, ``version``, ``reference`` (what of an example it needs,
    or null), ``description`` (one line), ``details`` (the factory's docstring before
    its sections), ``usage`` (the ``--scorer`` form) and ``arguments``: per argument its
    ``name``, ``type``, ``required``, ``default`` (absent when required) and ``doc``.
    """
    arguments = []
    for argument in factory.arguments():
        entry: dict[str, Any] = {
            "name": argument.name,
            "type": argument.annotation,
            "required": argument.required,
        }
        if not argument.required:
            entry["default"] = _jsonable(argument.default)
        entry["doc"] = _plain(argument.doc)
        arguments.append(entry)
    return {
        "name": factory.name,
        "kind": factory.kind,
        "version": factory.version,
        "reference": factory.reference,
        "description": _plain(factory.description),
        "details": _plain(_details(factory.__doc__ or "")),
        "usage": _usage(factory.name, arguments),
        "arguments": arguments,
    }


def _plain(text: str) -> str:
    """Docstring markup made plain: ````code```` becomes ```code```."""
    return text.replace("``", "`")


def _jsonable(value: object) -> Any:
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        return repr(value)


def _details(docstring: str) -> str:
    """The docstring without its first line and its ``Args:`` / ``Returns:`` sections."""
    body = inspect.cleandoc(docstring).split("\n", 1)[1:]
    kept: list[str] = []
    for line in body[0].splitlines() if body else []:
        if line.rstrip().endswith(":") and line[:1].isalpha() and " " not in line.strip():
            break  # Args:, Returns:, Raises:, Examples: close the prose
        kept.append(line)
    return "\n".join(kept).strip()


def _usage(name: str, arguments: list[dict[str, Any]]) -> str:
    """``regex:pattern=VALUE[,ARG=VALUE,...]``: the required arguments, then the rest."""
    required = ",".join(f"{a['name']}=VALUE" for a in arguments if a["required"])
    usage = f"{name}:{required}" if required else name
    if any(not a["required"] for a in arguments):
        usage += f"[{',' if required else ':'}ARG=VALUE,...]"
    return usage


def _shown_default(argument: dict[str, Any]) -> str:
    if argument["required"]:
        return "required"
    return json.dumps(argument["default"], ensure_ascii=False)


SCORER_COLUMNS = (
    TableColumn("scorer", keep=0),
    TableColumn("kind", keep=3),
    TableColumn("version", keep=4),
    TableColumn("arguments", keep=2, wrap=True, narrowest=16),
    TableColumn("description", keep=1, wrap=True, narrowest=24),
)
"""The columns of ``arbiter scorers``; at a narrow width version and kind go first, and
a scorer's name is never cut."""


def _list_table(described: list[dict[str, Any]], width: int) -> tuple[RenderableType, list[str]]:
    rows = []
    for entry in described:
        arguments = "\n".join(
            f"{a['name']} (required)" if a["required"] else f"{a['name']}={_shown_default(a)}"
            for a in entry["arguments"]
        )
        rows.append(
            [
                _t(entry["name"]),
                entry["kind"],
                _t(entry["version"]),
                _multiline(arguments or "-"),
                _t(entry["description"]),
            ]
        )
    return fitted_table("scorers", SCORER_COLUMNS, rows, width)


def _t(value: object) -> Any:
    """Text from a factory (a plugin's too) as a Rich Text: controls shown, never markup."""
    from rich.text import Text

    from arbiter import escape

    return Text(escape.terminal(value, single_line=True))


def _multiline(text: str) -> Any:
    from rich.text import Text

    from arbiter import escape

    return Text("\n".join(escape.terminal(line, single_line=True) for line in text.split("\n")))


def _one_scorer(entry: dict[str, Any]) -> RenderableType:
    from rich.console import Group
    from rich.table import Table

    needs = {
        "label": "expected_label, else a text expected (a run needs it on some example)",
        "expected": "expected, else expected_label (a run needs it on some example)",
    }
    parts: list[Any] = [
        _t(f"{entry['name']} ({entry['kind']}, version {entry['version']})"),
        _t(entry["description"]),
    ]
    if entry["details"]:
        parts.append(_multiline(entry["details"]))
    parts.append(_t(f"reference: {needs.get(entry['reference'] or '', 'none required')}"))
    parts.append(_t(f"usage: --scorer {entry['usage']}"))
    if entry["arguments"]:
        table = Table(title="arguments", title_justify="left")
        for column in ("argument", "type", "default", "meaning"):
            table.add_column(column)
        for argument in entry["arguments"]:
            table.add_row(
                _t(argument["name"]),
                _t(argument["type"]),
                _t(_shown_default(argument)),
                _t(argument["doc"]),
            )
        parts.append(table)
    return Group(*parts)


@app.command("scorers")
def scorers(
    name: Annotated[
        str | None, typer.Argument(help="Show this scorer in full (its arguments' docs).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """List the scorers installed (built-ins and plugins) with their arguments."""
    from arbiter.errors import InputError
    from arbiter.service.scoring import scorer_registry

    registry = scorer_registry()
    described: list[dict[str, Any]] = []
    for each in [name] if name is not None else registry.names():
        try:
            described.append(describe_scorer(registry.factory_of(each)))
        except InputError as exc:
            if name is not None:
                raise
            note(f"warning: {exc}", style="yellow")
    if as_json:
        echo_json(described[0] if name is not None else described)
    elif name is not None:
        out_console().print(_one_scorer(described[0]))
    else:
        console = out_console()
        table, hidden = _list_table(described, console.width)
        console.print(table)
        if hidden:
            note(
                f"{console.width} columns: {', '.join(hidden)} left out (a wider terminal "
                "shows them; arbiter scorers NAME shows one in full)"
            )
