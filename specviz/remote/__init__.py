"""Runs on a serving engine over HTTP (vLLM): RunRecords from its speculative-decoding metrics.

Standard library only: the engine lives in its own environment (tests/install_vllm.sh) and is reached over HTTP.
`specviz.remote.vllm` is the client; this module holds what the UI needs without it: the public-mode host check.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from specviz.remote.errors import HostNotAllowed
from specviz.remote.http import BadServerURL, parse_url


def allowed_servers(text: str | None) -> tuple[str, ...]:
    """SPECVIZ_SERVERS ('host', 'host:port' or URLs, comma- or space-separated) -> its entries."""
    return tuple(part for part in (text or "").replace(",", " ").split() if part)


def host_allowed(url: str, allowed: Iterable[str]) -> bool:
    """Whether `url` is one of the allowed servers: same host name (case-insensitive, no DNS lookup) and, where the
    entry names a port, the same port. Pure: the UI calls it before any request is made."""
    try:
        target = parse_url(url)
    except BadServerURL:
        return False
    for entry in allowed:
        text = entry.strip()
        has_port = bool(urlsplit(text if "://" in text else "//" + text).port) if text else False
        try:
            other = parse_url(text)
        except (BadServerURL, ValueError):
            continue
        if other.host.lower() == target.host.lower() and (not has_port or other.port == target.port):
            return True
    return False


def check_host(url: str, public: bool, allowed: Iterable[str]) -> None:
    """In public mode, refuse a server not in SPECVIZ_SERVERS (HostNotAllowed); anything goes otherwise."""
    allowed = tuple(allowed)
    if public and not host_allowed(url, allowed):
        listed = ", ".join(allowed) if allowed else "none"
        raise HostNotAllowed(
            "This public deployment measures only the servers its operator listed in SPECVIZ_SERVERS "
            f"(allowed: {listed}); the URL given is not one of them."
        )
