"""Turn a provider's answer text into a validated Pydantic model."""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from arbiter.errors import InvalidResponse
from arbiter.validation import describe_validation_error

__all__ = ["json_document", "parse_structured"]

T = TypeVar("T", bound=BaseModel)

# Models asked for JSON without constrained decoding like to wrap it in a Markdown fence.
_FENCE = re.compile(r"```(?:json|JSON)?[ \t]*\n(.*?)\n?[ \t]*```", re.DOTALL)
_SNIPPET = 120


def json_document(text: str) -> Any:
    """The JSON document an answer text holds, bare or in a fenced block.

    Raises:
        InvalidResponse: The text is not JSON ("not JSON: ...").

    Examples:
        >>> json_document('Here:\\n```json\\n{"ok": true}\\n```')
        {'ok': True}
    """
    body = text.strip()
    fenced = _FENCE.search(body)
    if fenced and not body.startswith(("{", "[")):
        body = fenced.group(1).strip()
    try:
        # strict=False: models (llama.cpp's SmolLM2 here) put raw newlines and tabs inside
        # JSON strings; the meaning is unambiguous, so accept them.
        return json.loads(body, strict=False)
    except ValueError as exc:
        snippet = " ".join(text.split())[:_SNIPPET]
        raise InvalidResponse(f"not JSON: {exc}: {snippet!r}") from None


def parse_structured(text: str, model: type[T]) -> T:
    """Parse JSON text (bare or in a fenced block) and validate it as ``model``.

    Args:
        text: The answer text, e.g. ``CompletionResponse.text``.
        model: The Pydantic model the answer must follow.

    Returns:
        The validated model instance.

    Raises:
        InvalidResponse: The text is not JSON ("not JSON: ..."), or the JSON breaks
            the schema (the message names the first bad field).

    Examples:
        >>> from arbiter.contract import Usage
        >>> parse_structured('```json\\n{"input_tokens": 3}\\n```', Usage).input_tokens
        3
    """
    document = json_document(text)
    try:
        return model.model_validate(document)
    except ValidationError as exc:
        reason = describe_validation_error(exc, model)
        raise InvalidResponse(f"answer does not match {model.__name__}: {reason}") from None
