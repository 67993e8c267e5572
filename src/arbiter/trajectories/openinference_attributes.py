"""Read one OpenInference span's attributes: flattened lists, messages, typed values.

OpenInference flattens lists into indexed keys (``llm.input_messages.0.message.role``,
``...message.tool_calls.1.tool_call.function.name``); :meth:`SpanReader.indexed` gathers
them back in one pass over the keys. Every value is checked for the type the conventions
give it, and a wrong one is an :class:`~arbiter.errors.InputError` naming the file, the
span id and the attribute.
"""

from __future__ import annotations

from typing import Any, NoReturn

from arbiter.datasets.jsonio import JsonInputError, json_type, parse_json
from arbiter.errors import InputError
from arbiter.trajectories.spans import Span

__all__ = ["Messages", "SpanReader", "decoded", "span_where"]

_JSON_MIME = "application/json"


def span_where(file: str | None, span: Span) -> str:
    """``file: span <id>``, the location of a span in messages."""
    return f"{file}: span {span.span_id}" if file else f"span {span.span_id}"


def decoded(value: Any, mime_type: Any) -> Any:
    """A value decoded from JSON when it is declared JSON, or, undeclared, looks like it.

    Text that claims to be JSON and is not is kept as the text it is.
    """
    if not isinstance(value, str):
        return value
    declared_json = isinstance(mime_type, str) and mime_type.split(";")[0].strip() == _JSON_MIME
    if declared_json or (mime_type is None and value.lstrip()[:1] in ("{", "[")):
        try:
            return parse_json(value, source="value", unique_keys=False)  # an exporter's text
        except JsonInputError:
            return value
    return value


class Messages:
    """Chat messages of a span, the tool calls they ask for and the results they carry.

    Attributes:
        messages: ``{"role", "content", "name"?}`` documents, in order.
        tool_calls: ``tool_call`` step documents (no span of their own), in order.
        results: ``tool_call_id`` -> the content of the ``tool`` message answering it.
    """

    __slots__ = ("messages", "results", "tool_calls")

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.tool_calls: list[dict[str, Any]] = []
        self.results: dict[str, str | None] = {}


class SpanReader:
    """Typed access to one span's attributes, failing with the span's location."""

    def __init__(self, span: Span, file: str | None) -> None:
        self.span, self.file = span, file
        self.attributes = span.attributes

    def fail(self, why: str) -> NoReturn:
        raise InputError(f"{span_where(self.file, self.span)}: {why}")

    def text(self, key: str) -> str | None:
        """A value shown as text (an id written as a number reads as its digits)."""
        value = self.attributes.get(key)
        if value is None or isinstance(value, str):
            return value
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        self.fail(f"{key}: must be a string, got {json_type(value)}")

    def string(self, at: str, value: Any) -> str | None:
        """``value`` (read at ``at``) when it is a string or absent."""
        if value is None or isinstance(value, str):
            return value
        self.fail(f"{at}: must be a string, got {json_type(value)}")

    def count(self, key: str) -> int | None:
        """A non-negative integer attribute (a whole double reads as its integer)."""
        value = self.attributes.get(key)
        if value is None:
            return None
        if isinstance(value, float) and value.is_integer():
            value = int(value)  # JavaScript SDKs may write whole numbers as doubles
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            self.fail(f"{key}: must be a non-negative integer, got {str(value)[:40]!r}")
        return value

    def number(self, key: str) -> float | None:
        """A non-negative number attribute."""
        value = self.attributes.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            self.fail(f"{key}: must be a non-negative number, got {str(value)[:40]!r}")
        return float(value)

    def io(self, which: str) -> Any:
        """``input.value`` or ``output.value``, decoded when it is JSON text."""
        return decoded(
            self.attributes.get(f"{which}.value"), self.attributes.get(f"{which}.mime_type")
        )

    def indexed(
        self, key: str, flat: dict[str, Any] | None = None, *, at: str | None = None
    ) -> list[dict[str, Any]]:
        """The entries of the flattened list ``key``: per index, in order, ``rest -> value``.

        Args:
            key: The list's key (``llm.input_messages``).
            flat: Where to look: an entry of an outer list; the span's attributes by default.
            at: The outer entry's location, for messages.
        """
        prefix = key + "."
        items: dict[int, dict[str, Any]] = {}
        for name, value in (self.attributes if flat is None else flat).items():
            if not name.startswith(prefix):
                continue
            index, _, rest = name[len(prefix) :].partition(".")
            if not (index.isascii() and index.isdigit() and rest):
                shown = f"{at}.{name.split('.', 1)[-1]}" if at else name
                self.fail(f"{shown[:200]}: expected {key}.<index>.<field>")
            items.setdefault(int(index), {})[rest] = value
        return [items[index] for index in sorted(items)]

    def messages(self, key: str) -> Messages:
        """The chat messages of ``key`` (``llm.input_messages`` / ``llm.output_messages``)."""
        found = Messages()
        for index, flat in enumerate(self.indexed(key)):
            at = f"{key}.{index}.message"
            role = self.string(f"{at}.role", flat.get("message.role"))
            if role is None:
                self.fail(f"{at}.role: missing")
            content = self.string(f"{at}.content", flat.get("message.content"))
            if content is None:
                content = self._content_parts(flat, at)
            message: dict[str, Any] = {"role": role, "content": content}
            name = self.string(f"{at}.name", flat.get("message.name"))
            if name is not None:
                message["name"] = name
            found.messages.append(message)
            found.tool_calls.extend(self._asked_calls(flat, at))
            call_id = self.string(f"{at}.tool_call_id", flat.get("message.tool_call_id"))
            if role == "tool" and call_id is not None:
                found.results.setdefault(call_id, content)
        return found

    def _content_parts(self, flat: dict[str, Any], at: str) -> str | None:
        """The text parts of ``message.contents`` joined; None when there are none."""
        texts = [
            self.string(f"{at}.contents.{i}.message_content.text", part.get("message_content.text"))
            for i, part in enumerate(self.indexed("message.contents", flat, at=at))
            if part.get("message_content.type", "text") == "text"
        ]
        return "".join(t for t in texts if t) or None

    def _asked_calls(self, flat: dict[str, Any], at: str) -> list[dict[str, Any]]:
        raw: list[tuple[str, Any, Any, Any]] = [
            (
                f"{at}.tool_calls.{i}.tool_call",
                call.get("tool_call.id"),
                call.get("tool_call.function.name"),
                call.get("tool_call.function.arguments"),
            )
            for i, call in enumerate(self.indexed("message.tool_calls", flat, at=at))
        ]
        if "message.function_call_name" in flat:  # the legacy single function call
            raw.append(
                (
                    f"{at}.function_call",
                    None,
                    flat["message.function_call_name"],
                    flat.get("message.function_call_arguments_json"),
                )
            )
        return [self._asked_call(*call) for call in raw]

    def _asked_call(self, at: str, call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
        name = self.string(f"{at}.function.name", name)
        if name is None:
            self.fail(f"{at}.function.name: missing")
        call: dict[str, Any] = {
            "kind": "tool_call",
            "name": name,
            "call_id": self.string(f"{at}.id", call_id),
        }
        if isinstance(arguments, str):
            try:
                call["arguments"] = parse_json(arguments, source="arguments") if arguments else {}
            except JsonInputError as exc:
                # A model writing broken arguments is a finding, not bad input.
                call["arguments"] = arguments
                call["error"] = f"the arguments are not valid JSON ({exc.reason})"
        else:
            call["arguments"] = arguments
        return call
