"""Import Inspect AI eval logs: each sample's epoch a run, its scores imported as scores.

``inspect eval`` writes a log as a ``.json`` document (``version``, ``status``, ``eval``,
``plan``, ``results``, ``stats``, ``samples``) or as an ``.eval`` archive (a zip of
``header.json`` and one ``samples/<id>_epoch_<n>.json`` a sample); both read, without
importing inspect_ai. Each sample (``id``, ``epoch``, ``input``, ``target``,
``messages``, ``scores``, ``metadata``, ``model_usage``, ``started_at`` /
``completed_at``, ``error``, ``limit``) is one run: its case is the sample's id and its
repetition the epoch (from 0), so pass^k over a run's runs is over Inspect's epochs.

The messages (``system``, ``user``, ``assistant`` with ``tool_calls`` of ``id``,
``function``, ``arguments``, and ``tool`` results with ``tool_call_id`` and ``error``)
become steps as :mod:`~arbiter.trajectories.openai_messages` reads a conversation; text
a log moved to ``attachments`` (``attachment://<hash>``) is put back. Each score
(``value``, ``answer``, ``explanation``, ``metadata``) is an imported score named
``inspect:<scorer>``, so an Inspect scorer called like one of Arbiter's (``exact``,
``completed``) never shares a name with it in a report: ``C`` (correct) is 1 and
passes, ``I`` (incorrect) and ``N`` (no answer) are 0 and fail, ``P`` (partial) is 0.5
and does not pass, a number or a boolean passes at 1; a value of another kind (a
dictionary of several) abstains, kept in the score's metadata. What a run has no field
for (the sample's metadata, target, usage, timings, the log's task and model, the
messages' reasoning) is kept in ``metadata["inspect"]``. Each model call's tokens come
from the ``model`` event that produced it (its ``output.usage``); the rest of the
events, the store, the attachments and the data of images are not imported, and the
metadata says so.

Repairs are warnings of the run: a sample epoch given twice, a log that did not finish
(``status`` other than ``success``), a score value that is neither a number nor a grade.
A sample that is not one (``messages`` that is not a list, a tool call without a
``function``) is refused, naming ``file: samples[i].field``.
"""

from __future__ import annotations

import io
import math
import os
import struct
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

from pydantic import JsonValue

from arbiter.contract import Score, Trajectory
from arbiter.contract.trajectory import MAX_NAME_CHARS, MAX_TEXT_CHARS
from arbiter.datasets.jsonio import json_type, parse_json, read_text
from arbiter.errors import InputError
from arbiter.trajectories.formats import MATCH, ImportedRun, ImportOptions, TrajectoryFormat
from arbiter.trajectories.openai_messages import messages_document
from arbiter.validation import validate_document

__all__ = [
    "FORMAT",
    "MAX_ARCHIVE_MEMBER_BYTES",
    "SCORE_PREFIX",
    "TRAJECTORY_FORMAT",
    "load_inspect_log",
]

FORMAT = "inspect"
"""The ``source.format`` of the trajectories this importer makes."""

MAX_ARCHIVE_MEMBER_BYTES = 256 * 1024 * 1024
"""Largest member of an ``.eval`` archive read (uncompressed): past it, the archive is
refused rather than inflated (a small zip can claim a huge member)."""

_ZIP_ZSTANDARD = 93  # the zip compression method number of zstd
_LOCAL_HEADER = struct.Struct("<4s5H3I2H")
_LOCAL_SIGNATURE = b"PK\x03\x04"
_GRADES = {"C": 1.0, "I": 0.0, "N": 0.0, "P": 0.5}
_GRADE_NAMES = {"C": "correct", "I": "incorrect", "N": "no answer", "P": "partial"}
_TOLERANCE = 1e-6
_EXPLANATION_CHARS = 10_000
_ATTACHMENT = "attachment://"
SCORE_PREFIX = "inspect:"
"""What the name of an imported Inspect score starts with, before its scorer's name."""
_NOT_IMPORTED = ("events", "store", "attachments", "output", "events_data", "timelines")
_KEPT_SAMPLE_KEYS = (
    "target",
    "choices",
    "metadata",
    "model_usage",
    "role_usage",
    "total_time",
    "working_time",
    "uuid",
    "limit",
    "retries",
    "turn_count",
    "sandbox",
    "files",
    "setup",
    "error_retries",
)
_KEPT_EVAL_KEYS = ("task", "task_id", "task_version", "run_id", "eval_id", "created", "model")


def load_inspect_log(path: str | os.PathLike[str]) -> Iterator[ImportedRun]:
    """The runs of an Inspect AI log (``.json`` or ``.eval``), sample by sample.

    Raises:
        InputError: The file cannot be read, is not an Inspect log, or a sample is
            malformed (``file: samples[i].field: why``).
    """
    file = Path(path)
    if file.suffix.lower() == ".eval":
        return _archive_runs(file)
    document = parse_json(read_text(file, what="Inspect log"), source=str(file))
    return _log_runs(document, source=str(file))


def _log_runs(document: Any, *, source: str) -> Iterator[ImportedRun]:
    if not isinstance(document, dict):
        raise InputError(f"{source}: expected an Inspect log object, got {json_type(document)}")
    header = _header(document, source)
    samples = document.get("samples")
    if samples is None:
        raise InputError(
            f"{source}: samples: the log holds no samples (was it written with "
            "--no-log-samples?); there is nothing to import"
        )
    if not isinstance(samples, list):
        raise InputError(f"{source}: samples: must be a list, got {json_type(samples)}")
    located = ((f"samples[{i}]", sample) for i, sample in enumerate(samples))
    return _runs(header, located, source=source)


def _archive_runs(file: Path) -> Iterator[ImportedRun]:
    source = str(file)
    try:
        archive = zipfile.ZipFile(file)
    except FileNotFoundError:
        raise InputError(f"{file}: no such file") from None
    except (zipfile.BadZipFile, OSError) as exc:
        raise InputError(f"{file}: not an Inspect .eval archive ({exc})") from None
    with archive:
        names = archive.namelist()
        if "header.json" not in names:
            raise InputError(f"{file}: header.json: the archive has none; not an Inspect log")
        header = _header(_member(archive, "header.json", source), source)
        samples = sorted(n for n in names if n.startswith("samples/") and n.endswith(".json"))
        if not samples:
            raise InputError(f"{file}: samples/: the archive holds no samples; nothing to import")
        located = ((name, _member(archive, name, source)) for name in samples)
        yield from _runs(header, located, source=source)


def _member(archive: zipfile.ZipFile, name: str, source: str) -> Any:
    info = archive.getinfo(name)
    if info.file_size > MAX_ARCHIVE_MEMBER_BYTES:
        raise InputError(
            f"{source}: {name}: {info.file_size} bytes uncompressed; at most "
            f"{MAX_ARCHIVE_MEMBER_BYTES} are read"
        )
    try:
        if info.compress_type == _ZIP_ZSTANDARD:
            data = _zstd_member(archive, info, f"{source}: {name}")
        else:
            with archive.open(info) as stream:
                data = stream.read(MAX_ARCHIVE_MEMBER_BYTES + 1)
    except (zipfile.BadZipFile, OSError, RuntimeError, ValueError, struct.error) as exc:
        raise InputError(f"{source}: {name}: cannot be read from the archive ({exc})") from None
    if len(data) > MAX_ARCHIVE_MEMBER_BYTES:
        raise InputError(f"{source}: {name}: larger than {MAX_ARCHIVE_MEMBER_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{source}: {name}: not UTF-8 text") from None
    return parse_json(text, source=f"{source}: {name}")


def _zstd_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, where: str) -> bytes:
    """A zstd-compressed member (what inspect_ai writes), read where the zipfile module
    cannot (before Python 3.14), and never inflated past the member bound."""
    try:
        import zstandard
    except ImportError:
        raise InputError(
            f"{where}: reading a zstd-compressed .eval archive needs the inspect extra: "
            "pip install 'arbiter[inspect]'"
        ) from None
    stream = archive.fp
    if stream is None:
        raise InputError(f"{where}: the archive is closed")
    stream.seek(info.header_offset)
    local = stream.read(_LOCAL_HEADER.size)
    signature, *_, name_length, extra_length = _LOCAL_HEADER.unpack(local)
    if signature != _LOCAL_SIGNATURE:
        raise InputError(f"{where}: a broken archive entry (no local file header)")
    stream.seek(info.header_offset + _LOCAL_HEADER.size + name_length + extra_length)
    compressed = stream.read(info.compress_size)
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(compressed))
    chunks: list[bytes] = []
    size = 0
    try:
        while size <= MAX_ARCHIVE_MEMBER_BYTES:
            chunk = reader.read(1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except zstandard.ZstdError as exc:
        raise InputError(f"{where}: not valid zstd data ({exc})") from None
    return b"".join(chunks)


def _header(document: Any, source: str) -> dict[str, Any]:
    """What every run of the log shares: the eval's task and model, the log's status."""
    if not isinstance(document, dict):
        raise InputError(f"{source}: expected an Inspect log object, got {json_type(document)}")
    evaluation = document.get("eval")
    if not isinstance(evaluation, dict):
        raise InputError(f"{source}: eval: must be an object, got {json_type(evaluation)}")
    kept: dict[str, JsonValue] = {
        k: evaluation[k] for k in _KEPT_EVAL_KEYS if evaluation.get(k) is not None
    }
    status = document.get("status")
    if isinstance(status, str):
        kept["log_status"] = status
    if isinstance(document.get("version"), int):
        kept["log_version"] = document["version"]
    model = evaluation.get("model")
    task = evaluation.get("task")
    return {
        "kept": kept,
        "model": model[:MAX_NAME_CHARS] if isinstance(model, str) else None,
        "task": task[:MAX_NAME_CHARS] if isinstance(task, str) else None,
        "status": status if isinstance(status, str) else None,
    }


def _runs(
    header: dict[str, Any], located: Iterator[tuple[str, Any]], *, source: str
) -> Iterator[ImportedRun]:
    seen: dict[str, set[int]] = {}
    unfinished = header["status"] not in (None, "success")
    for at, sample in located:
        warnings: list[str] = []
        if unfinished:
            warnings.append(
                f"{source}: status: the log is {header['status']!r}, not 'success': "
                "samples may be missing"
            )
        yield _run(sample, header, at=at, source=source, seen=seen, warnings=warnings)


def _run(
    sample: Any,
    header: dict[str, Any],
    *,
    at: str,
    source: str,
    seen: dict[str, set[int]],
    warnings: list[str],
) -> ImportedRun:
    def fail(field: str, why: str) -> NoReturn:
        raise InputError(f"{source}: {at}{field}: {why}")

    if not isinstance(sample, dict):
        fail("", f"a sample must be an object, got {json_type(sample)}")
    sample_id = sample.get("id")
    if isinstance(sample_id, bool) or not isinstance(sample_id, str | int):
        fail(".id", f"must be a string or a whole number, got {json_type(sample_id)}")
    case_id = str(sample_id)[:MAX_NAME_CHARS]
    epoch = sample.get("epoch", 1)
    if isinstance(epoch, bool) or not isinstance(epoch, int) or not 1 <= epoch <= 10**6:
        fail(".epoch", f"must be a whole number from 1, got {_shown(epoch)}")
    epochs = seen.setdefault(case_id, set())
    repetition = epoch - 1
    if repetition in epochs:
        repetition = max(epochs) + 1
        warnings.append(
            f"{source}: {at}.epoch: sample {case_id[:80]!r} epoch {epoch} is given again; "
            f"read as repetition {repetition}"
        )
    epochs.add(repetition)
    attachments = sample.get("attachments")
    attachments = attachments if isinstance(attachments, dict) else {}
    messages = sample.get("messages", [])
    if not isinstance(messages, list):
        fail(".messages", f"must be a list, got {json_type(messages)}")
    parts: list[JsonValue] = []  # what messages hold besides their text
    converted = [
        _message(m, f"{at}.messages[{i}]", source, attachments, parts)
        for i, m in enumerate(messages)
    ]
    document = messages_document(
        converted, where=f"{source}: {at}", key="messages", model=header["model"], warnings=warnings
    )
    _add_call_tokens(document["steps"], sample.get("events"), f"{source}: {at}", warnings)
    error = sample.get("error")
    if isinstance(error, dict):
        message = error.get("message")
        document["status"] = "error"
        document["error"] = (message if isinstance(message, str) else "the sample raised")[
            :MAX_TEXT_CHARS
        ]
    elif sample.get("limit") is not None:
        document["status"] = "incomplete"
    metadata: dict[str, JsonValue] = {
        "case_id": case_id,
        "epoch": epoch,
        **header["kept"],
        **{k: sample[k] for k in _KEPT_SAMPLE_KEYS if sample.get(k) is not None},
    }
    raw_input = sample.get("input")
    if isinstance(raw_input, str):
        metadata["input"] = _resolved(raw_input, attachments)[:MAX_TEXT_CHARS]
    if parts:
        metadata["content_parts"] = parts
    left: list[JsonValue] = [k for k in _NOT_IMPORTED if sample.get(k)]
    if left:
        metadata["not_imported"] = left
    trajectory = validate_document(
        Trajectory,
        {
            "id": f"{case_id}/epoch-{epoch}",
            "agent": {"name": header["task"], "agent_class": "conversation_with_tools"},
            **document,
            "started_at": sample.get("started_at"),
            "ended_at": sample.get("completed_at"),
            "source": {"format": FORMAT, "file": source[:MAX_NAME_CHARS]},
            "metadata": {"inspect": metadata},
        },
        where=f"{source}: {at}",
    )
    scores = _scores(sample.get("scores"), f"{source}: {at}.scores", warnings)
    return ImportedRun(
        trajectory=trajectory,
        flow=None,
        case_id=case_id,
        repetition=repetition,
        scores=scores,
        source_format=FORMAT,
        warnings=warnings,
    )


def _add_call_tokens(steps: list[Any], events: Any, where: str, warnings: list[str]) -> None:
    """Each model call's tokens, from the ``model`` events' ``output.usage``: one event per
    generation, in the order of the assistant messages they produced. When the events do
    not pair one to one with the calls, no call is given another's count."""
    if not isinstance(events, list):
        return
    usages = [
        event["output"].get("usage")
        for event in events
        if isinstance(event, dict)
        and event.get("event") == "model"
        and isinstance(event.get("output"), dict)
    ]
    calls = [s for s in steps if isinstance(s, dict) and s.get("kind") == "llm_call"]
    if not usages:
        return
    if len(usages) != len(calls):
        warnings.append(
            f"{where}.events: {len(usages)} model events for {len(calls)} model calls; "
            "the calls' token counts are not read"
        )
        return
    for call, usage in zip(calls, usages, strict=True):
        if not isinstance(usage, dict):
            continue
        for key in ("input_tokens", "output_tokens"):
            count = usage.get(key)
            if isinstance(count, int) and not isinstance(count, bool) and count >= 0:
                call[key] = count


def _message(
    message: Any, at: str, source: str, attachments: dict[str, Any], parts: list[JsonValue]
) -> Any:
    """An Inspect chat message in the shape :func:`messages_document` reads."""
    if not isinstance(message, dict):
        return message  # the reader refuses it, naming where
    converted: dict[str, Any] = {"role": message.get("role")}
    converted["content"] = _content(
        message.get("content"), f"{at}.content", source, attachments, parts
    )
    role = message.get("role")
    if role == "assistant" and message.get("tool_calls") is not None:
        calls = message["tool_calls"]
        if not isinstance(calls, list):
            raise InputError(f"{source}: {at}.tool_calls: must be a list, got {json_type(calls)}")
        converted["tool_calls"] = [
            _tool_call(call, f"{at}.tool_calls[{i}]", source, attachments)
            for i, call in enumerate(calls)
        ]
    if role == "tool":
        converted["tool_call_id"] = message.get("tool_call_id")
        converted["name"] = message.get("function")
        error = message.get("error")
        if isinstance(error, dict):
            text = error.get("message")
            kind = error.get("type")
            converted["error"] = (
                f"{kind}: {text}" if isinstance(kind, str) and isinstance(text, str) else "error"
            )[:MAX_TEXT_CHARS]
    return converted


def _tool_call(call: Any, at: str, source: str, attachments: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(call, dict):
        raise InputError(f"{source}: {at}: a tool call must be an object, got {json_type(call)}")
    function = call.get("function")
    if not isinstance(function, str) or not function:
        raise InputError(
            f"{source}: {at}.function: must be a non-empty string, got {_shown(function)}"
        )
    arguments = call.get("arguments", {})
    converted: dict[str, Any] = {
        "id": call.get("id"),
        "type": "function",
        "function": {
            "name": function[:MAX_NAME_CHARS],
            "arguments": _resolved(arguments, attachments),
        },
    }
    return converted


def _content(
    value: Any, at: str, source: str, attachments: dict[str, Any], kept: list[JsonValue]
) -> Any:
    """A message's content: its text, with attachments put back. Reasoning parts are not
    its text: they go to ``kept``; other parts (images, audio) are named there, their
    data left out."""
    if value is None or isinstance(value, str):
        return _resolved(value, attachments)
    if not isinstance(value, list):
        raise InputError(
            f"{source}: {at}: must be a string or a list of parts, got {json_type(value)}"
        )
    parts = []
    for index, part in enumerate(value):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            parts.append({"type": "text", "text": _resolved(part.get("text"), attachments)})
        elif kind == "reasoning" and isinstance(part.get("reasoning"), str):
            reasoning = _resolved(part["reasoning"], attachments)
            kept.append({"at": f"{at}[{index}]", "reasoning": reasoning[:MAX_TEXT_CHARS]})
        else:
            named = kind[:MAX_NAME_CHARS] if isinstance(kind, str) else json_type(part)
            kept.append({"at": f"{at}[{index}]", "type": named, "not_imported": True})
    return parts


def _resolved(value: Any, attachments: dict[str, Any]) -> Any:
    """Text a log moved to its attachments, put back (one level: what a log writes)."""
    if isinstance(value, str):
        if value.startswith(_ATTACHMENT):
            found = attachments.get(value[len(_ATTACHMENT) :])
            return found if isinstance(found, str) else value
        return value
    if isinstance(value, dict):
        return {k: _resolved(v, attachments) if isinstance(v, str) else v for k, v in value.items()}
    return value


def _scores(value: Any, at: str, warnings: list[str]) -> list[Score]:
    if value is None:
        return []
    if not isinstance(value, dict):
        raise InputError(f"{at}: must be an object of scores by scorer, got {json_type(value)}")
    return [_score(name, score, f"{at}.{name[:80]}", warnings) for name, score in value.items()]


def _score(name: str, score: Any, at: str, warnings: list[str]) -> Score:
    if not isinstance(score, dict):
        raise InputError(f"{at}: a score must be an object, got {json_type(score)}")
    raw = score.get("value")
    explanation = score.get("explanation")
    told = explanation[:_EXPLANATION_CHARS] if isinstance(explanation, str) else ""
    metadata: dict[str, JsonValue] = {}
    for key in ("answer", "metadata", "history"):
        if score.get(key) is not None:
            metadata[key] = score[key]
    value, passed, why = _graded(raw)
    if why is None:
        metadata["value"] = raw
        warnings.append(
            f"{at}.value: {_shown(raw)} is neither a number nor a grade; the score abstains"
        )
        why = "the value is not one verdict"
    if isinstance(raw, int | float) and not isinstance(raw, bool) and not math.isfinite(float(raw)):
        raise InputError(f"{at}.value: must be finite, got {_shown(raw)}")
    return Score(
        name=(SCORE_PREFIX + name)[:MAX_NAME_CHARS],
        value=value,
        passed=passed,
        explanation=f"Inspect score {why}" + (f": {told}" if told else ""),
        metadata=metadata,
    )


def _graded(raw: Any) -> tuple[float | None, bool | None, str | None]:
    """``(value, passed, what it was)``; ``what`` is None when it is no verdict."""
    if isinstance(raw, str) and raw in _GRADES:
        grade = _GRADES[raw]
        return grade, grade == 1.0, f"{raw} ({_GRADE_NAMES[raw]})"
    if isinstance(raw, bool):
        return float(raw), raw, str(raw).lower()
    if isinstance(raw, int | float) and math.isfinite(float(raw)):
        number = float(raw)
        return number, abs(number - 1.0) <= _TOLERANCE, f"{number:g}"
    if isinstance(raw, str):
        try:
            number = float(raw)
        except ValueError:
            return None, None, None
        if math.isfinite(number):
            return number, abs(number - 1.0) <= _TOLERANCE, f"{number:g}"
    return None, None, None


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:37]}..."


def _read_file(file: Path, options: ImportOptions) -> Iterator[ImportedRun]:
    return load_inspect_log(file)


def _read_record(record: Any, options: ImportOptions) -> list[ImportedRun]:
    return list(_log_runs(record, source=options.source))


def _resemblance(record: Any) -> float:
    """A log: an ``eval`` naming its ``task`` beside ``samples`` or ``results``; partly:
    an ``eval`` object with a ``task`` alone."""
    if not isinstance(record, dict):
        return 0.0
    evaluation = record.get("eval")
    if not isinstance(evaluation, dict) or "task" not in evaluation:
        return 0.0
    if isinstance(record.get("samples"), list) or "results" in record or "status" in record:
        return MATCH + 0.25
    return 0.5


TRAJECTORY_FORMAT = TrajectoryFormat(
    name=FORMAT,
    summary="Inspect AI eval logs (`.json` with `eval` and `samples`, or `.eval` archives): "
    "each sample's epoch a run, its scores imported",
    read_file=_read_file,
    read_record=_read_record,
    resemblance=_resemblance,
    suffixes=frozenset({".eval"}),
)
"""The ``inspect`` trajectory format."""
