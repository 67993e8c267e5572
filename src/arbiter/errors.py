"""One exception tree for the whole package.

::

    ArbiterError
    ├── InputError                  bad dataset / case file / config (exit 3)
    │   └── InvalidParameter        a function was called with a bad argument (also a ValueError)
    ├── SystemUnderTestError        a system under test failed on one input (exit 1)
    │   ├── SystemUnreachable       connection refused, DNS, reset           (retryable)
    │   ├── SystemTimeout           no answer within the per-request timeout (retryable)
    │   ├── SystemHTTPError         HTTP 4xx / 5xx                 (retryable: 429, 5xx)
    │   ├── InvalidSystemResponse   the answer is not JSON / not the expected shape
    │   ├── MissingField            a mapped field is absent from the answer
    │   ├── ToolError               an MCP tool reported an error
    │   └── SystemCrashed           a Python system raised
    ├── ProviderError               an LLM provider failed
    │   ├── ProviderAuthError       401 / 403: a missing or refused key
    │   ├── RateLimited             429, quota                              (retryable)
    │   ├── ProviderUnavailable     5xx, connection refused                 (retryable)
    │   ├── ProviderTimeout         no answer in time                       (retryable)
    │   └── InvalidResponse         not JSON / not the requested schema
    ├── StoreError                  the run store cannot answer (unknown run id, ...)  (exit 3)
    │   ├── StoreUnavailable        the store cannot be reached, created or written    (exit 1)
    │   └── RunBusy                 another process is executing the run               (exit 1)
    ├── GateFailed                  a release gate was missed (exit 1)
    ├── EngineError                 the engine (a Ray cluster) is unreachable or lost work (exit 1)
    └── Interrupted                 the user stopped a command (Ctrl-C)       (exit 130)

Third-party exceptions are converted into these at the seam where they occur, so
callers only ever catch ``ArbiterError`` subclasses.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ArbiterError",
    "EngineError",
    "GateFailed",
    "InputError",
    "Interrupted",
    "InvalidParameter",
    "InvalidResponse",
    "InvalidSystemResponse",
    "MissingField",
    "ProviderAuthError",
    "ProviderError",
    "ProviderTimeout",
    "ProviderUnavailable",
    "RateLimited",
    "RunBusy",
    "StoreError",
    "StoreUnavailable",
    "SystemCrashed",
    "SystemHTTPError",
    "SystemTimeout",
    "SystemUnderTestError",
    "SystemUnreachable",
    "ToolError",
]


class ArbiterError(Exception):
    """Base of every error Arbiter raises on purpose.

    The message is always one line, written for the person at the terminal.
    """

    exit_code: int = 1


class InputError(ArbiterError):
    """Invalid input data: a dataset, case file or configuration (exit code 3)."""

    exit_code = 3


class InvalidParameter(InputError, ValueError):
    """A function of Arbiter's was called with an argument outside its contract.

    It is a ``ValueError`` too, as Python code calling a library expects; the message
    always reads "The 'k' parameter of run_eval must be ... Got ... instead."
    """


class StoreError(ArbiterError):
    """The run store cannot do what was asked (for example an unknown run id)."""

    exit_code = 3


class StoreUnavailable(StoreError):
    """The store's database cannot be reached or opened (exit code 1)."""

    exit_code = 1


class RunBusy(StoreError):
    """Another live process is executing the run (for example a second ``--resume``)."""

    exit_code = 1


class EngineError(ArbiterError):
    """The engine cannot run the work: a cluster that cannot be reached or started, a
    batch lost past its retries (exit code 1)."""


class GateFailed(ArbiterError):
    """A release gate was missed (exit code 1)."""

    exit_code = 1


class Interrupted(ArbiterError):
    """The user stopped a command (Ctrl-C); the message says what was kept and how to go on."""

    exit_code = 130


class SystemUnderTestError(ArbiterError):
    """A system under test failed to produce a prediction for one input.

    Attributes:
        retryable: Whether trying the same input again may succeed.
        retry_after: Seconds the system asked us to wait before retrying, if it said.
    """

    retryable: bool = False

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(" ".join(message.split()))
        self.retry_after = retry_after


class SystemUnreachable(SystemUnderTestError):
    """The connection was refused, reset or could not be opened."""

    retryable = True


class SystemTimeout(SystemUnderTestError):
    """The system gave no answer within the per-request timeout."""

    retryable = True


class SystemHTTPError(SystemUnderTestError):
    """The system answered with an HTTP error status.

    Attributes:
        status_code: The HTTP status the service returned.
    """

    def __init__(self, status_code: int, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message, retry_after=retry_after)
        self.status_code = status_code

    @property
    def retryable(self) -> bool:  # type: ignore[override]
        """429 and every 5xx may pass on a later try; other 4xx will not."""
        return self.status_code == 429 or self.status_code >= 500


class InvalidSystemResponse(SystemUnderTestError):
    """The system answered, but not with JSON of the expected shape."""


class MissingField(SystemUnderTestError):
    """A field the response mapping names is absent from the system's answer."""


class ToolError(SystemUnderTestError):
    """An MCP tool call returned an error result."""


class SystemCrashed(SystemUnderTestError):
    """A Python system under test raised an exception."""


class ProviderError(ArbiterError):
    """An LLM provider (or an embedder, a vector store) failed to answer usably.

    Attributes:
        retryable: Whether trying the same request again may succeed.
        retry_after: Seconds the service asked us to wait before retrying, if it said.
    """

    retryable: bool = False

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ProviderAuthError(ProviderError):
    """The provider refused the credentials (HTTP 401 / 403) or none were configured."""


class ProviderUnavailable(ProviderError):
    """The provider could not be reached or failed on its side (5xx)."""

    retryable = True


class RateLimited(ProviderError):
    """The provider refused for rate or quota reasons."""

    retryable = True


class ProviderTimeout(ProviderError):
    """The provider gave no answer in time."""

    retryable = True


class InvalidResponse(ProviderError):
    """The provider answered with something that is not the requested shape.

    Attributes:
        usage: What the unusable answer cost (a ``contract.Usage``), when the provider
            said: an answer cut off at the token limit was still billed.
    """

    usage: Any = None
