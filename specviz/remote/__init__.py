"""Runs on a serving engine over HTTP (vLLM): RunRecords from its speculative-decoding metrics.

Standard library only: the engine lives in its own environment (tests/install_vllm.sh) and is reached over HTTP.
`specviz.remote.vllm` is the client; this module holds what the UI needs without it: the public-mode host check.

SPECVIZ_SERVERS is read strictly and fails closed: each entry is `host` (any port), `host:port`, `[IPv6]:port` or an
http(s) URL of one of those; a port is 1-65535. One entry that is none of these (`::1`, `host:abc`, `host:0`, `*`)
makes public mode refuse every server, with a message naming the entry, until the operator fixes it.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from specviz.remote.errors import HostNotAllowed
from specviz.remote.http import BadServerURL, parse_url

ENTRY_FORMS = "host, host:port, [IPv6]:port or an http(s) URL of one, e.g. 10.0.0.5:8000, [::1]:8000, http://gpu:8000"
_ENTRY = re.compile(
    r"(?:(?P<scheme>https?)://)?(?P<host>\[[0-9a-f:.]+\]|[a-z0-9_.-]+)(?::(?P<port>[0-9]{1,5}))?(?P<path>/[^?#@]*)?",
    re.IGNORECASE,
)


class BadAllowlist(HostNotAllowed):
    """SPECVIZ_SERVERS holds an entry that is not a server: public mode then allows none (it fails closed)."""


@dataclass(frozen=True)
class AllowedServer:
    """One SPECVIZ_SERVERS entry: a host (canonical: lower case, an IP address in its standard form) and a port, or
    None for any port."""

    host: str
    port: int | None

    def admits(self, host: str, port: int) -> bool:
        """Whether a server at host:port is this entry's."""
        return self.host == _canonical(host) and self.port in (None, port)


def allowed_servers(text: str | None) -> tuple[str, ...]:
    """SPECVIZ_SERVERS (entries comma- or space-separated) -> its entries as written (parse_allowlist checks them)."""
    return tuple(part for part in (text or "").replace(",", " ").split() if part)


@lru_cache(maxsize=64)
def parse_allowlist(entries: tuple[str, ...]) -> tuple[AllowedServer, ...]:
    """The entries as AllowedServers; BadAllowlist naming the first that is not host, host:port, [IPv6]:port or an
    http(s) URL of one (parsed once per distinct list)."""
    return tuple(_entry(entry) for entry in entries)


def _entry(entry: str) -> AllowedServer:
    """One entry -> AllowedServer, or BadAllowlist saying what is wrong with it and the forms that are right."""
    text = entry.strip()
    match = _ENTRY.fullmatch(text)
    host = match and _host(match.group("host"))
    if "@" in text:
        raise _bad_entry(entry, "credentials (user:password@) do not belong in the allowlist")
    if not match and text.count(":") > 1 and "[" not in text:
        raise _bad_entry(entry, "an IPv6 address goes in brackets, as [::1] (any port) or [::1]:8000")
    if not match or host is None:
        raise _bad_entry(entry, "it is not a host name, an IP address or [an IPv6 address] with an optional :port")
    port = match.group("port")
    if port is not None and not 1 <= int(port) <= 65535:
        raise _bad_entry(entry, f"port {int(port)} is not one of 1-65535 (an entry without a port allows any)")
    return AllowedServer(host, None if port is None else int(port))


def _host(text: str) -> str | None:
    """A host name or IP address as written in an entry -> its canonical form; None when it is neither."""
    if text.startswith("["):
        try:
            return str(ipaddress.IPv6Address(text[1:-1]))
        except ValueError:
            return None
    labels = text.rstrip(".").split(".")
    if not all(labels) or any(label.startswith("-") or label.endswith("-") for label in labels):
        return None
    return _canonical(text)


def _canonical(host: str) -> str:
    """A host for comparison: an IP address in its standard form, a name in lower case without a trailing dot."""
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return host.lower().rstrip(".")


def _bad_entry(entry: str, why: str) -> BadAllowlist:
    """The error for a SPECVIZ_SERVERS entry that is not a server (shown without any user:password@ in it)."""
    shown = repr(entry.rsplit("@", 1)[-1][:80])
    return BadAllowlist(
        f"SPECVIZ_SERVERS holds {shown}, which is not a server: {why}. Write each entry as {ENTRY_FORMS}. Until the "
        "operator fixes it, this public deployment measures no server."
    )


def host_allowed(url: str, allowed: Iterable[str]) -> bool:
    """Whether `url` is one of the allowed servers: same host (case-insensitive, no DNS lookup) and, where the entry
    names a port, the same port. False for any URL when an entry is malformed (fail closed). Pure: the UI calls it
    before any request is made."""
    try:
        target = parse_url(url)
        servers = parse_allowlist(tuple(allowed))
    except (BadServerURL, BadAllowlist):
        return False
    return any(server.admits(target.host, target.port) for server in servers)


def check_host(url: str, public: bool, allowed: Iterable[str]) -> None:
    """In public mode, refuse a server not in SPECVIZ_SERVERS (HostNotAllowed), and every server while an entry of
    it is malformed (BadAllowlist, naming the entry); anything goes otherwise."""
    allowed = tuple(allowed)
    if not public:
        return
    parse_allowlist(allowed)
    if not host_allowed(url, allowed):
        listed = ", ".join(allowed) if allowed else "none"
        raise HostNotAllowed(
            "This public deployment measures only the servers its operator listed in SPECVIZ_SERVERS "
            f"(allowed: {listed}); the URL given is not one of them."
        )
