"""A small, careful HTTP client for serving engines, on the standard library only.

Careful means: credentials (the API key, a user:password in the URL) go in headers and nowhere else: never in the
`Endpoint`'s repr, its display URL, an error message or a record (a server that echoes one back, raw or in the base64
of a Basic header, has it replaced by ***); every request has one deadline for all of it (connect, headers, body and
redirects: a server that drips its answer a byte at a time is cut off there); answers are read up to a size cap;
redirects are followed only to the same scheme, host and port (a server that sends us elsewhere is refused, since the
API key would go with us); every failure is a ServerError subclass with what to do about it.
"""

from __future__ import annotations

import base64
import email.utils
import http.client
import io
import json
import math
import socket
import ssl
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import unquote, urljoin, urlsplit

from specviz.errors import SettingsError
from specviz.remote.errors import (
    NotOpenAIServer,
    ServerError,
    ServerHTTPError,
    ServerTimeout,
    ServerUnreachable,
)

DEFAULT_TIMEOUT_S = 120.0  # one completion of a few hundred tokens on a CPU server fits well inside
MAX_BYTES = 8_000_000  # a completion with detailed metrics, or a /metrics page, is far below this
MAX_REDIRECTS = 3
MAX_TIMEOUT_S = 3600.0  # an hour: far above any completion worth measuring, and a bound on a held script thread


class BadServerURL(ServerError):
    """The text given is not an http(s) URL of a server."""


@dataclass(frozen=True)
class Endpoint:
    """Where a server is and how to authenticate to it. `url` is safe to show and store; the secrets are not shown."""

    scheme: str
    host: str
    port: int
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_bytes: int = MAX_BYTES
    api_key: str | None = field(default=None, repr=False, compare=False)
    basic_auth: str | None = field(default=None, repr=False, compare=False)  # "user:password" from the URL

    @property
    def url(self) -> str:
        """scheme://host:port: no credentials, no path, no query."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"

    def __post_init__(self):
        """Refuse a timeout that is not a sane number of seconds (check_timeout)."""
        check_timeout(self.timeout_s)

    def __repr__(self) -> str:
        return f"Endpoint({self.url!r})"

    def headers(self) -> dict[str, str]:
        """What every request sends: the Accept and User-Agent headers, and the credentials (Bearer or Basic)."""
        out = {"Accept": "application/json, text/plain;q=0.9", "User-Agent": "specviz"}
        if self.api_key:
            out["Authorization"] = f"Bearer {self.api_key}"
        elif self.basic_auth:
            out["Authorization"] = "Basic " + _b64(self.basic_auth)
        return out

    def secrets(self) -> list[str]:
        """Every form a credential of ours may come back in, longest first: the key, user:password, the password,
        and the base64 of user:password (standard and URL-safe, padding stripped, as a Basic header carries it)."""
        forms = [self.api_key]
        if self.basic_auth:
            user, _, password = self.basic_auth.partition(":")
            forms += [self.basic_auth, password, user, _b64(self.basic_auth).rstrip("=")]
            forms.append(base64.urlsafe_b64encode(self.basic_auth.encode()).decode().rstrip("="))
        return sorted({form for form in forms if form and len(form) >= 3}, key=len, reverse=True)

    def redact(self, text: str) -> str:
        """The text with every secret replaced by *** (in case a server echoes one back in an error)."""
        for secret in self.secrets():
            text = text.replace(secret, "***")
        return text


def _b64(text: str) -> str:
    """The base64 of `text`'s UTF-8 bytes, as a Basic Authorization header carries user:password."""
    return base64.b64encode(text.encode()).decode()


def check_timeout(timeout_s) -> float:
    """A request timeout in seconds: a finite number above 0 and at most MAX_TIMEOUT_S, else a SettingsError."""
    number = timeout_s if isinstance(timeout_s, (int, float)) and not isinstance(timeout_s, bool) else None
    if number is None or not math.isfinite(number) or not 0 < number <= MAX_TIMEOUT_S:
        raise SettingsError(
            f"The timeout must be a number of seconds above 0 and at most {MAX_TIMEOUT_S:g} (an hour); got "
            f"{timeout_s!r}. Give one like --timeout 120."
        )
    return float(number)


def parse_url(url: str, api_key: str | None = None, timeout_s: float = DEFAULT_TIMEOUT_S) -> Endpoint:
    """'http://host:8000', 'host:8000', 'https://user:pw@host/v1' -> an Endpoint (any path, such as /v1, is dropped:
    specviz calls /v1/..., /metrics and /version itself)."""
    text = str(url or "").strip()
    if not text:
        raise BadServerURL("No server URL given: pass one like http://127.0.0.1:8000.")
    if "://" not in text:
        text = "http://" + text
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise BadServerURL(
            f"{_shown(text)} is not a server URL ({exc}); write it like http://127.0.0.1:8000."
        ) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BadServerURL(f"{_shown(text)} is not an http(s) server URL; write it like http://127.0.0.1:8000.")
    timeout_s = check_timeout(timeout_s)
    basic = None
    if parts.username is not None:
        basic = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
    return Endpoint(
        scheme=parts.scheme,
        host=parts.hostname,
        port=port or (443 if parts.scheme == "https" else 80),
        timeout_s=timeout_s,
        api_key=api_key or None,
        basic_auth=basic,
    )


def _shown(text: str) -> str:
    """A URL as it may appear in a message: without user:password@ and query."""
    try:
        parts = urlsplit(text)
        netloc = parts.netloc.rsplit("@", 1)[-1]
        return repr(f"{parts.scheme}://{netloc}{parts.path}" if parts.scheme else netloc)
    except ValueError:
        return "the URL given"


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes
    content_type: str

    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")

    def json(self, endpoint: Endpoint, path: str):
        try:
            return json.loads(self.body)
        except ValueError:
            raise NotOpenAIServer(
                f"{endpoint.url}{path} did not answer with JSON (it sent {self.content_type or 'no content type'}): "
                "is this the URL of a vLLM (OpenAI-compatible) server?"
            ) from None


def request(
    endpoint: Endpoint, method: str, path: str, body: dict | None = None, timeout_s: float | None = None
) -> Response:
    """One request, following same-origin redirects only, all of it within one deadline (`timeout_s`, else the
    endpoint's); an HTTP error raises ServerHTTPError with the server's own message."""
    timeout = check_timeout(endpoint.timeout_s if timeout_s is None else timeout_s)
    deadline = time.monotonic() + timeout
    payload = None if body is None else json.dumps(body).encode()
    headers = endpoint.headers()
    if payload is not None:
        headers["Content-Type"] = "application/json"
    for _ in range(MAX_REDIRECTS + 1):
        status, location, content_type, data = _exchange(endpoint, method, path, payload, headers, deadline, timeout)
        if status in (301, 302, 303, 307, 308) and location:
            path = _same_origin(endpoint, path, location)
            if status == 303:
                method, payload = "GET", None
            continue
        if status >= 400:
            raise ServerHTTPError(_error_message(endpoint, method, path, status, data), status)
        return Response(status, data, content_type)
    raise ServerError(f"{endpoint.url}{path} redirected more than {MAX_REDIRECTS} times; check the URL.")


def _same_origin(endpoint: Endpoint, path: str, location: str) -> str:
    """The path a redirect points to, if it stays on the endpoint's scheme, host and port; else a ServerError."""
    target = urlsplit(urljoin(f"{endpoint.url}{path}", location))
    if (target.scheme, target.hostname, target.port or (443 if target.scheme == "https" else 80)) != (
        endpoint.scheme,
        endpoint.host,
        endpoint.port,
    ):
        raise ServerError(
            f"{endpoint.url}{path} redirects to another host ({target.scheme}://{target.hostname}); specviz "
            "does not follow it (your API key would go along). Give that server's URL directly if you trust it."
        )
    return target.path + (f"?{target.query}" if target.query else "")


class _DeadlineReader(io.RawIOBase):
    """A socket's bytes, each read given only the time left before the deadline (TimeoutError once it passed)."""

    def __init__(self, sock: socket.socket, deadline: float):
        super().__init__()
        self._sock, self._raw, self._deadline = sock, sock.makefile("rb", buffering=0), deadline

    def readable(self) -> bool:
        """Always: this reader only reads."""
        return True

    def readinto(self, buffer) -> int:
        """Read what has arrived, waiting at most until the deadline."""
        self._sock.settimeout(_left(self._deadline))
        return self._raw.readinto(buffer)

    def close(self) -> None:
        """Close the socket's file (the connection closes the socket itself)."""
        self._raw.close()
        super().close()


class _DeadlineSocket:
    """What http.client's response reads from: the socket, through a _DeadlineReader."""

    def __init__(self, sock: socket.socket, deadline: float):
        self._sock, self._deadline = sock, deadline

    def makefile(self, mode: str = "rb", *args, **kwargs):
        """A buffered reader whose every read on the socket respects the deadline."""
        return io.BufferedReader(_DeadlineReader(self._sock, self._deadline))


def _left(deadline: float) -> float:
    """Seconds left before `deadline` (time.monotonic()); TimeoutError when none are."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("the request's deadline passed")
    return left


def _connection(endpoint: Endpoint, deadline: float) -> http.client.HTTPConnection:
    """A connection whose connect (and TLS handshake) gets the time left, and whose response reads keep to the
    deadline."""
    if endpoint.scheme == "https":
        conn = http.client.HTTPSConnection(
            endpoint.host, endpoint.port, timeout=_left(deadline), context=ssl.create_default_context()
        )
    else:
        conn = http.client.HTTPConnection(endpoint.host, endpoint.port, timeout=_left(deadline))
    conn.response_class = lambda sock, *args, **kwargs: http.client.HTTPResponse(
        _DeadlineSocket(sock, deadline), *args, **kwargs
    )
    return conn


def _exchange(
    endpoint: Endpoint, method: str, path: str, payload: bytes | None, headers: dict, deadline: float, timeout: float
):
    """One HTTP exchange within the deadline -> (status, Location, Content-Type, body up to the size cap)."""
    where = f"{endpoint.url}{path}"
    conn = None
    try:
        conn = _connection(endpoint, deadline)
        conn.connect()
        conn.sock.settimeout(_left(deadline))  # sendall keeps to one timeout for all it sends
        conn.request(method, path, body=payload, headers=headers)
        resp = conn.getresponse()
        data = resp.read(endpoint.max_bytes + 1)
        if len(data) > endpoint.max_bytes:
            raise ServerError(
                f"{where} sent more than {endpoint.max_bytes // 1_000_000} MB; specviz stops reading there. "
                "Ask for fewer tokens or check that this is the right server."
            )
        return resp.status, resp.getheader("Location"), resp.getheader("Content-Type", ""), data
    except (http.client.HTTPException, OSError) as exc:  # timeouts, TLS, DNS, refusals are OSErrors
        raise _failure(endpoint, where, timeout, exc) from None
    finally:
        if conn is not None:
            conn.close()


def _failure(endpoint: Endpoint, where: str, timeout: float, exc: BaseException) -> ServerError:
    """The ServerError for a transport failure: a timeout, TLS, an unknown host, nothing listening, a dropped line."""
    if isinstance(exc, TimeoutError):
        return ServerTimeout(
            f"{where} did not answer within {timeout:g} s (the whole answer, not just its first byte). The server "
            "may be overloaded or still loading, or sending slowly; wait and retry, ask for fewer new tokens, or "
            "raise the timeout."
        )
    if isinstance(exc, ssl.SSLError):
        return ServerUnreachable(f"TLS with {endpoint.url} failed ({exc.reason or exc}); check https vs http.")
    if isinstance(exc, socket.gaierror):
        return ServerUnreachable(f"The host {endpoint.host!r} is unknown; check the server URL.")
    if isinstance(exc, ConnectionRefusedError):
        return ServerUnreachable(
            f"Nothing is listening at {endpoint.url} (connection refused). Start the server (docs/vllm.md shows "
            "how) or check the host and port."
        )
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
    return ServerUnreachable(
        f"Talking to {endpoint.url} failed ({reason}): the server may have stopped or restarted. Check that it runs."
    )


def stream(endpoint: Endpoint, path: str, body: dict, timeout_s: float | None = None) -> Iterator[tuple[float, dict]]:
    """POST `body` with "stream": true and yield (time.perf_counter() on arrival, event) for each server-sent event's
    JSON, until `data: [DONE]`. The same care as request(): one deadline for all of it (a stream that stalls is cut
    off there), at most max_bytes read, the server's HTTP errors with its own message (redacted); no redirects (a
    stream is not replayed). A stream that ends before [DONE] (the server stopped) is ServerUnreachable; an error
    event vLLM sends mid-stream is ServerError with its message."""
    timeout = check_timeout(endpoint.timeout_s if timeout_s is None else timeout_s)
    deadline = time.monotonic() + timeout
    headers = {**endpoint.headers(), "Content-Type": "application/json", "Accept": "text/event-stream"}
    where, conn, read = f"{endpoint.url}{path}", None, 0
    try:
        conn = _connection(endpoint, deadline)
        conn.connect()
        conn.sock.settimeout(_left(deadline))
        conn.request("POST", path, body=json.dumps(body).encode(), headers=headers)
        resp = conn.getresponse()
        if resp.status >= 300:
            data = resp.read(endpoint.max_bytes)
            if resp.status < 400:
                raise ServerError(f"{where} redirects (HTTP {resp.status}); give the server's own URL.")
            message = _error_message(endpoint, "POST", path, resp.status, data)
            raise ServerHTTPError(message, resp.status, retry_after_s(resp.getheader("Retry-After")))
        while True:
            line = resp.readline(endpoint.max_bytes + 1)
            read += len(line)
            if read > endpoint.max_bytes:
                raise ServerError(f"{where} streamed more than {endpoint.max_bytes // 1_000_000} MB; specviz stops.")
            if not line:
                raise ServerUnreachable(
                    f"{where} ended its stream before [DONE]: the server may have stopped or restarted. Check that "
                    "it runs."
                )
            line = line.strip()
            if not line.startswith(b"data:"):
                continue  # blank lines between events, comments, event: and id: fields
            data = line[5:].strip()
            if data == b"[DONE]":
                return
            arrived = time.perf_counter()
            try:
                event = json.loads(data)
            except ValueError:
                raise NotOpenAIServer(f"{where} streamed an event that is not JSON; is this a vLLM server?") from None
            if isinstance(event, dict) and event.get("error") is not None:
                raise ServerError(f"{where} stopped the stream with an error: {_event_error(endpoint, event)}.")
            yield arrived, event
    except (http.client.HTTPException, OSError) as exc:  # timeouts, TLS, DNS, refusals are OSErrors
        raise _failure(endpoint, where, timeout, exc) from None
    finally:
        if conn is not None:
            conn.close()


def retry_after_s(value: str | None, now: float | None = None) -> float | None:
    """A Retry-After header -> seconds to wait (its delta-seconds, or its HTTP date less `now`, time.time() when not
    given; at least 0); None when absent or not either form."""
    text = (value or "").strip()
    if text.isdigit():
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text).timestamp() if text else None
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return None if when is None else max(0.0, when - (time.time() if now is None else now))


def _event_error(endpoint: Endpoint, event: dict) -> str:
    error = event["error"]
    message = error.get("message") if isinstance(error, dict) else error
    return " ".join(endpoint.redact(str(message)).split())[:500] or "(no message)"


def _error_message(endpoint: Endpoint, method: str, path: str, status: int, data: bytes) -> str:
    """'POST /v1/completions: HTTP 400 from the server: <its message>' plus a hint for the common statuses."""
    text = data.decode("utf-8", errors="replace")
    try:
        doc = json.loads(text)
        error = doc.get("error", doc) if isinstance(doc, dict) else doc
        message = error.get("message") or error.get("detail") if isinstance(error, dict) else None
        text = str(message if message is not None else doc)
    except ValueError:
        pass
    text = " ".join(endpoint.redact(text).split())[:500] or "(no message)"
    hint = {
        401: " The server wants an API key: put it in an environment variable and name it with --api-key-env.",
        403: " The server refused this API key.",
        404: " Is this the URL of a vLLM (OpenAI-compatible) server?",
    }.get(status, "")
    return f"{method} {endpoint.url}{path}: HTTP {status} from the server: {text}.{hint}"
