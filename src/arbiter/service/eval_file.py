"""Eval files: a whole run (dataset, system, scorers, options, gate) in one TOML file.

A CI job becomes one line, ``arbiter run eval.toml``. Paths in the file are relative to
the file: ``dataset.path``, a ``file.py:function`` target, and every scorer argument
that names a file (its type is a :class:`~arbiter.scoring.files.FileArgument`:
``rubric_file``, ``json_schema_file``, a jury ``roster``, a plugin's own). Header values
are never written in the file: ``headers = {Authorization = "env:API_TOKEN"}`` reads the
value from the environment when the run starts. The file's sha256 is stored with the run.
Everything is validated before anything is called or written; an error names
``file:line: key: why``.

Example::

    name = "qa-nightly"
    tags = {team = "search"}

    [dataset]
    path = "qa.jsonl"

    [system]
    kind = "python"
    target = "my_app.qa:answer"

    [run]
    k = 1
    concurrency = 16

    [[scorers]]
    name = "casefold"

    [[scorers]]
    name = "f1_tokens"
    args = {threshold = 0.6}
    gate = false

    [gate]
    min_accuracy = 0.8
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationError

from arbiter.contract import RunConfig, RunGate, ScorerSpec, StrictModel
from arbiter.datasets.tomlio import TomlDocument, read_toml_file
from arbiter.errors import InputError
from arbiter.scoring.files import file_arguments
from arbiter.scoring.labels import BINARY_LABEL_MAP
from arbiter.scoring.registry import ScorerRegistry
from arbiter.service.engines import EngineChoice, parse_rate_limits
from arbiter.service.runs import GateFloors, system_description
from arbiter.systems.registry import DEFAULT_KIND, SystemRegistry
from arbiter.validation import describe_validation_error

__all__ = ["EvalFile", "EvalPlan", "load_eval_file"]


class DatasetSection(StrictModel):
    """``[dataset]``: which examples."""

    path: str
    """The dataset file (.json, .jsonl, .csv), relative to the eval file."""
    limit: int | None = Field(default=None, ge=1)
    """Only the first N examples."""
    output_field: str = "output"
    """Where a precomputed output sits in a row (top level, or inside ``input``)."""


class SystemSection(StrictModel):
    """``[system]``: what is evaluated."""

    kind: str = DEFAULT_KIND
    """A registered system kind: python, http, mcp, precomputed or a plugin's."""
    target: str | None = None
    """python: ``package.module:function`` or ``path/to/file.py:function`` (relative to
    the eval file); http/mcp: the URL."""
    method: str = "POST"
    """http: request method."""
    body_template: Any = None
    """http: JSON body with ``{{input.field}}`` placeholders."""
    label_path: str | None = None
    """http/mcp: dotted path of the label in the answer."""
    confidence_path: str | None = None
    """http/mcp: dotted path of the confidence."""
    id_path: str | None = None
    """http/mcp: dotted path of the answer's id."""
    headers: dict[str, str] = Field(default_factory=dict)
    """http/mcp: header names and ``env:VARIABLE`` (the value is read from the environment)."""
    tool: str | None = None
    """mcp: the tool to call."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """mcp: fixed arguments merged into every call."""
    timeout: float | None = Field(default=None, gt=0)
    """Seconds per call (default: the settings' timeout)."""


class RunSection(StrictModel):
    """``[run]``: how the run executes."""

    k: int = Field(default=1, ge=1)
    """Repetitions per example."""
    concurrency: int | None = Field(default=None, ge=1)
    """Calls in flight at once (default: the settings')."""
    retries: int | None = Field(default=None, ge=0)
    """Retries of retryable failures (default: the settings')."""
    seed: int = 0
    """Seed of the bootstrap intervals and retry jitter."""
    label_map: Literal["binary"] | dict[str, str] | None = None
    """``"binary"`` or a table ``{from = "to"}`` for the ``label`` scorer."""
    cache: bool | None = None
    """Whether model scorers may answer from the cache (default: only when k is 1)."""
    engine: Literal["local", "ray"] = "local"
    """Where the pairs run: this process, or a Ray cluster (same results either way)."""
    ray_address: str | None = None
    """With ``engine = "ray"``: a cluster's address; unset: ``auto``."""
    rate_limit: str | list[str] = Field(default_factory=list)
    """Calls per second (or minute) the system, or a model provider, may be sent, on
    any engine (on a cluster shared by every worker): ``"20/s"``, or a list such as
    ``["20/s", "openai=600/min,burst=5,concurrency=8"]`` (see ``arbiter run --help``)."""


class ScorerEntry(StrictModel):
    """One ``[[scorers]]`` entry (a report's per-scorer figures are
    ``contract.ScorerSection``)."""

    name: str
    """The registered scorer (see ``arbiter scorers``)."""
    args: dict[str, Any] = Field(default_factory=dict)
    """Its arguments."""
    alias: str | None = Field(default=None, alias="as")
    """The name its scores carry in the run (to use one scorer twice)."""
    gate: bool | None = None
    """Whether it decides pass / fail; unset: the scorer's own default (LLM judges do not
    gate until promoted, every other scorer gates)."""


class GateSection(RunGate):
    """``[gate]``: what the run must reach; ``arbiter run`` exits 1 when it does not. It is
    stored with the run (``RunConfig.gate``), so ``--resume`` gates the same way."""

    model_config = ConfigDict(extra="forbid")


class EvalFile(StrictModel):
    """The whole eval file."""

    name: str | None = None
    """A name for the run."""
    tags: dict[str, str] = Field(default_factory=dict)
    """Tags for the run."""
    dataset: DatasetSection
    """The examples."""
    system: SystemSection
    """What is evaluated."""
    run: RunSection = Field(default_factory=RunSection)
    """How."""
    scorers: list[ScorerEntry] = Field(default_factory=list)
    """How each output is scored; none: ``label``."""
    gate: GateSection | None = None
    """What the run must reach."""


@dataclass(frozen=True)
class EvalPlan:
    """An eval file resolved: everything a run needs, checked, nothing called yet."""

    source: Path | None
    """The eval file; None for a run given as options."""
    file_hash: str | None
    """sha256 of the eval file's bytes."""
    dataset_path: Path
    """The dataset file, resolved."""
    output_field: str
    """Where precomputed outputs sit."""
    system: dict[str, Any]
    """The system's stored description (no secrets)."""
    headers: dict[str, str]
    """Header values, read from the environment."""
    config: RunConfig
    """Run options (without scorers: they come from ``scorers``)."""
    scorers: list[ScorerSpec]
    """The scorers' specs, checked against the registry."""
    name: str | None
    """The run's name."""
    tags: dict[str, str]
    """The run's tags."""
    floors: GateFloors | None
    """The gate, when the file has one."""
    baseline: str | None
    """The gate's baseline run, if any."""
    engine: EngineChoice = field(default_factory=EngineChoice)
    """Where the pairs run."""


def load_eval_file(
    path: str | os.PathLike[str],
    *,
    registry: ScorerRegistry,
    timeout: float,
    concurrency: int,
    retries: int,
    environ: dict[str, str] | None = None,
    systems: SystemRegistry | None = None,
) -> EvalPlan:
    """Read, validate and resolve an eval file; nothing is called or written.

    Args:
        path: The eval file (TOML).
        registry: Where scorer names are looked up.
        timeout: Seconds per call when the file sets none.
        concurrency: Calls in flight when the file sets none.
        retries: Retries when the file sets none.
        environ: Where ``env:`` header values are read (default: the process's).
        systems: Where system kinds are looked up; None: the built-ins and installed
            plugins.

    Raises:
        InputError: ``file:line: key: why`` for the first problem found.
    """
    document = read_toml_file(path, what="eval file")
    try:
        spec = EvalFile.model_validate(document.data)
    except ValidationError as exc:
        location = exc.errors(include_url=False)[0]["loc"]
        reason = describe_validation_error(exc, EvalFile)
        raise InputError(f"{document.where(location)}: {reason}") from None
    base = document.path.parent
    environ = dict(os.environ if environ is None else environ)
    dataset_path = _relative(base, spec.dataset.path)
    system = _system(spec.system, base, document, timeout, systems or SystemRegistry.default())
    headers = _headers(spec.system.headers, document, environ)
    label_map = BINARY_LABEL_MAP if spec.run.label_map == "binary" else spec.run.label_map
    gate = spec.gate
    config = RunConfig(
        k=spec.run.k,
        concurrency=spec.run.concurrency or concurrency,
        timeout=system.get("timeout", timeout),
        retries=retries if spec.run.retries is None else spec.run.retries,
        label_map=dict(label_map) if label_map else None,
        limit=spec.dataset.limit,
        seed=spec.run.seed,
        cache=spec.run.cache,
        eval_file_hash=hashlib.sha256(document.path.read_bytes()).hexdigest(),
        gate=RunGate.model_validate(gate.model_dump()) if gate is not None else None,
    )
    scorers = _scorers(spec, document, registry, config.label_map, base)
    floors = GateFloors.of(config.gate) if config.gate is not None else None
    if spec.run.ray_address is not None and spec.run.engine != "ray":
        where = document.where(("run", "ray_address"))
        raise InputError(f'{where}: run.ray_address: it is for engine = "ray"')
    given = spec.run.rate_limit
    rate_limits = parse_rate_limits(
        [given] if isinstance(given, str) else given,
        where=f"{document.where(('run', 'rate_limit'))}: run.rate_limit",
    )
    return EvalPlan(
        source=document.path,
        file_hash=config.eval_file_hash,
        dataset_path=dataset_path,
        output_field=spec.dataset.output_field,
        system=system,
        headers=headers,
        config=config,
        scorers=scorers,
        name=spec.name,
        tags=dict(spec.tags),
        floors=floors,
        baseline=gate.baseline if gate is not None else None,
        engine=EngineChoice(
            spec.run.engine, spec.run.ray_address or "auto", tuple(rate_limits.items())
        ),
    )


def _relative(base: Path, value: str) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else base / path


def _system(
    section: SystemSection,
    base: Path,
    document: TomlDocument,
    timeout: float,
    systems: SystemRegistry,
) -> dict[str, Any]:
    try:
        systems.kind(section.kind)
    except InputError as exc:
        raise InputError(f"{document.where(('system', 'kind'))}: system.kind: {exc}") from None
    target = section.target
    if section.kind == "python" and target and ".py:" in target:
        module, _, function = target.rpartition(":")
        target = f"{_relative(base, module)}:{function}"
    try:
        return system_description(
            section.kind,
            target,
            method=section.method,
            body_template=section.body_template,
            label_path=section.label_path,
            confidence_path=section.confidence_path,
            id_path=section.id_path,
            header_names=sorted(section.headers),
            tool=section.tool,
            fixed_arguments=section.arguments,
            timeout=section.timeout or timeout,
            systems=systems,
        )
    except InputError as exc:
        message = str(exc).replace("--target", "target").replace("--tool", "tool")
        message = message.replace("--system ", "kind = ")
        raise InputError(f"{document.where(('system',))}: system: {message}") from None


def _headers(
    headers: dict[str, str], document: TomlDocument, environ: dict[str, str]
) -> dict[str, str]:
    values = {}
    for name, value in headers.items():
        where = document.where(("system", "headers", name))
        variable = value.removeprefix("env:")
        if not value.startswith("env:") or not variable:
            raise InputError(
                f"{where}: system.headers.{name}: write 'env:VARIABLE' (the value is read "
                "from the environment; secrets never go in the file)"
            )
        if variable not in environ:
            raise InputError(f"{where}: system.headers.{name}: {variable} is not set")
        values[name] = environ[variable]
    return values


def _scorers(
    spec: EvalFile,
    document: TomlDocument,
    registry: ScorerRegistry,
    label_map: dict[str, str] | None,
    base: Path,
) -> list[ScorerSpec]:
    entries = spec.scorers or [ScorerEntry(name="label")]
    specs: list[ScorerSpec] = []
    seen: dict[str, int] = {}
    for index, entry in enumerate(entries):
        where = document.where(("scorers", index) if spec.scorers else ())
        args = dict(entry.args)
        if entry.name == "label" and label_map and "label_map" not in args:
            args["label_map"] = label_map
        try:
            factory = registry.factory_of(entry.name)
        except InputError as exc:
            location = ("scorers", index, "name") if spec.scorers else ()
            raise InputError(f"{document.where(location)}: scorers[{index}]: {exc}") from None
        for name in file_arguments(factory):
            if isinstance(args.get(name), str):  # a path; not a value stored or given inline
                args[name] = str(_relative(base, args[name]))
        try:
            built = factory(**args)
        except InputError as exc:
            location = ("scorers", index, "args") if spec.scorers else ()
            raise InputError(f"{document.where(location)}: scorers[{index}]: {exc}") from None
        built = built.with_alias(entry.alias)
        made = (built if entry.gate is None else built.gating(entry.gate)).spec
        if made.label in seen:
            raise InputError(
                f"{where}: scorers[{index}]: a second scorer named {made.label!r} (the first is "
                f'scorers[{seen[made.label]}]); tell them apart with as = "NAME"'
            )
        seen[made.label] = index
        specs.append(made)
    if not any(s.gating for s in specs):
        raise InputError(
            f"{document.path}: no scorer gates (every one has gate = false): nothing would "
            "decide pass or fail"
        )
    return specs
