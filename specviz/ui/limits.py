"""Public mode: the limits a shared deployment runs under, read once from the environment.

SPECVIZ_PUBLIC=1 allows only the catalogue's pairs (no custom hub ids or paths), caps max new tokens, K, prompts
per workload and upload size, and never shows a local path. Each cap has its own variable to adjust it.
SPECVIZ_SERVERS lists the vLLM servers a public deployment may measure (hosts, host:port or URLs, comma-separated);
in public mode any other is refused (specviz.remote.check_host). Private mode measures any server.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from specviz.core.settings import MAX_K
from specviz.remote import allowed_servers, check_host

REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Limits:
    public: bool = False
    max_new_tokens: int = 256
    max_k: int = MAX_K
    max_prompts: int = 100
    max_upload_bytes: int = 2_000_000
    servers: tuple[str, ...] = ()  # SPECVIZ_SERVERS: the only servers public mode may measure

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Limits:
        env = dict(os.environ if env is None else env)
        servers = allowed_servers(env.get("SPECVIZ_SERVERS"))
        if env.get("SPECVIZ_PUBLIC", "").strip().lower() not in ("1", "true", "yes", "on"):
            return cls(servers=servers)
        number = lambda name, default: int(env.get(name, default))  # noqa: E731
        return cls(
            public=True,
            max_new_tokens=number("SPECVIZ_MAX_NEW_TOKENS", 64),
            max_k=min(MAX_K, number("SPECVIZ_MAX_K", 8)),
            max_prompts=number("SPECVIZ_MAX_PROMPTS", 20),
            max_upload_bytes=number("SPECVIZ_MAX_UPLOAD_KB", 200) * 1000,
            servers=servers,
        )

    def check_server(self, url: str) -> None:
        """Raise HostNotAllowed for a server public mode may not measure."""
        check_host(url, self.public, self.servers)


def display_source(source: str, limits: Limits) -> str:
    """How a model source is shown: in public mode a local path becomes just its last folder name."""
    looks_local = source.startswith((".", "/", "~")) or "\\" in source
    return source.rstrip("/\\").replace("\\", "/").split("/")[-1] if limits.public and looks_local else source


def sidebar_source(source: str, limits: Limits) -> str:
    """The sidebar's name for a model in use: the bundled pair relative to the repository (a projector need not show
    where it was cloned), anything else as display_source shows it."""
    inside = source.startswith(str(REPO_ROOT) + "/")
    return source.removeprefix(str(REPO_ROOT) + "/") if inside else display_source(source, limits)
