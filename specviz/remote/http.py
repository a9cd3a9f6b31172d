"""A small, careful HTTP client for serving engines, on the standard library only.

Careful means: credentials (the API key, a user:password in the URL) go in headers and nowhere else: never in the
`Endpoint`'s repr, its display URL, an error message or a record; every request has a timeout; answers are read up to
a size cap; redirects are followed only to the same scheme, host and port (a server that sends us elsewhere is
refused, since the API key would go with us); every failure is a ServerError subclass with what to do about it.
"""

from __future__ import annotations

import base64
import http.client
import json
import socket
import ssl
from dataclasses import dataclass, field
from urllib.parse import unquote, urljoin, urlsplit

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

    def __repr__(self) -> str:
        return f"Endpoint({self.url!r})"

    def headers(self) -> dict[str, str]:
        out = {"Accept": "application/json, text/plain;q=0.9", "User-Agent": "specviz"}
        if self.api_key:
            out["Authorization"] = f"Bearer {self.api_key}"
        elif self.basic_auth:
            out["Authorization"] = "Basic " + base64.b64encode(self.basic_auth.encode()).decode()
        return out

    def redact(self, text: str) -> str:
        """The text with every secret replaced (in case a server echoes one back in an error)."""
        for secret in (self.api_key, self.basic_auth, *(self.basic_auth or "").split(":", 1)[1:]):
            if secret and len(secret) >= 3:
                text = text.replace(secret, "***")
        return text


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
    if timeout_s <= 0:
        raise BadServerURL(f"The timeout must be a positive number of seconds; got {timeout_s!r}.")
    basic = None
    if parts.username is not None:
        basic = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
    return Endpoint(
        scheme=parts.scheme,
        host=parts.hostname,
        port=port or (443 if parts.scheme == "https" else 80),
        timeout_s=float(timeout_s),
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
    """One request, following same-origin redirects only; an HTTP error raises ServerHTTPError with the server's
    own message."""
    payload = None if body is None else json.dumps(body).encode()
    headers = endpoint.headers()
    if payload is not None:
        headers["Content-Type"] = "application/json"
    for _ in range(MAX_REDIRECTS + 1):
        status, location, content_type, data = _exchange(endpoint, method, path, payload, headers, timeout_s)
        if status in (301, 302, 303, 307, 308) and location:
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
            path = target.path + (f"?{target.query}" if target.query else "")
            if status == 303:
                method, payload = "GET", None
            continue
        if status >= 400:
            raise ServerHTTPError(_error_message(endpoint, method, path, status, data), status)
        return Response(status, data, content_type)
    raise ServerError(f"{endpoint.url}{path} redirected more than {MAX_REDIRECTS} times; check the URL.")


def _exchange(
    endpoint: Endpoint, method: str, path: str, payload: bytes | None, headers: dict, timeout_s: float | None
):
    timeout = timeout_s or endpoint.timeout_s
    if endpoint.scheme == "https":
        conn = http.client.HTTPSConnection(
            endpoint.host, endpoint.port, timeout=timeout, context=ssl.create_default_context()
        )
    else:
        conn = http.client.HTTPConnection(endpoint.host, endpoint.port, timeout=timeout)
    where = f"{endpoint.url}{path}"
    try:
        conn.request(method, path, body=payload, headers=headers)
        resp = conn.getresponse()
        data = resp.read(endpoint.max_bytes + 1)
        if len(data) > endpoint.max_bytes:
            raise ServerError(
                f"{where} sent more than {endpoint.max_bytes // 1_000_000} MB; specviz stops reading there. "
                "Ask for fewer tokens or check that this is the right server."
            )
        return resp.status, resp.getheader("Location"), resp.getheader("Content-Type", ""), data
    except TimeoutError:
        raise ServerTimeout(
            f"{where} did not answer within {timeout:g} s. The server may be overloaded or still loading; "
            "wait and retry, ask for fewer new tokens, or raise the timeout."
        ) from None
    except ssl.SSLError as exc:
        raise ServerUnreachable(f"TLS with {endpoint.url} failed ({exc.reason or exc}); check https vs http.") from None
    except socket.gaierror:
        raise ServerUnreachable(f"The host {endpoint.host!r} is unknown; check the server URL.") from None
    except ConnectionRefusedError:
        raise ServerUnreachable(
            f"Nothing is listening at {endpoint.url} (connection refused). Start the server (docs/vllm.md shows "
            "how) or check the host and port."
        ) from None
    except (http.client.HTTPException, OSError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise ServerUnreachable(
            f"Talking to {endpoint.url} failed ({reason}): the server may have stopped or restarted. "
            "Check that it runs."
        ) from None
    finally:
        conn.close()


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
