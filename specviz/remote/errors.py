"""What can go wrong talking to a serving engine: each fault one SpecvizError subclass whose message says what to do."""

from __future__ import annotations

from specviz.errors import SpecvizError


class ServerError(SpecvizError):
    """A serving engine that cannot be used for measuring (the message names the server without credentials)."""


class ServerUnreachable(ServerError):
    """Nothing answers at the URL (refused, unknown host, TLS failure)."""


class ServerTimeout(ServerError):
    """The server accepted the connection but did not answer in time."""


class NotOpenAIServer(ServerError):
    """Something answers, but not an OpenAI-compatible API (no /v1/models, or answers that are not its JSON)."""


class MalformedAnswer(NotOpenAIServer):
    """An answer in roughly the API's shape with a field no vLLM server sends (a string for a count, a list for an
    object, a count beyond what was asked for); the message names the field and what came."""


class UnknownModel(ServerError):
    """The model asked for is not among the served ones (the message lists them)."""


class SpeculationOff(ServerError):
    """The server decodes without speculation, or with a method specviz does not measure."""


class UnsupportedMethod(ServerError):
    """The server speculates with a method specviz's registry has no entry for (one vLLM has and specviz does not)."""


class StatisticsOff(ServerError):
    """Neither per-request speculative metrics nor the Prometheus counters are available."""


class ServerRestarted(ServerError):
    """The server's counters went back or were recreated: it restarted (or was killed) during the measurement."""


class ServerHTTPError(ServerError):
    """The server answered a request with an HTTP error; the message carries the server's own explanation.
    retry_after_s: the seconds its Retry-After header asked to wait (a 429 or 503 may send one), else None."""

    def __init__(self, message: str, status: int, retry_after_s: float | None = None):
        super().__init__(message)
        self.status, self.retry_after_s = status, retry_after_s


class HostNotAllowed(ServerError):
    """Public mode: the host is not in SPECVIZ_SERVERS."""


class ConcurrencyUnsupported(ServerError):
    """Concurrent requests asked for where only global counters are available (they cannot be attributed)."""
