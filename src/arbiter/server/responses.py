"""The JSON response class of the API routes: strict JSON, any text survives.

Text from outside (an output under judgement, a dataset's labels) may hold lone
surrogates, which UTF-8 cannot encode; written as ``\\ud800`` escapes (``ensure_ascii``)
the answer is still JSON instead of a failed request. NaN is refused: it is not JSON.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi.responses import JSONResponse

__all__ = ["ApiJSONResponse"]


class ApiJSONResponse(JSONResponse):
    """A JSON answer written with ASCII escapes."""

    def render(self, content: Any) -> bytes:
        """The body: compact JSON, ASCII only."""
        return json.dumps(
            content, ensure_ascii=True, allow_nan=False, separators=(",", ":")
        ).encode()
