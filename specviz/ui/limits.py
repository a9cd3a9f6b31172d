"""Public mode: the limits a shared deployment runs under, read once from the environment.

SPECVIZ_PUBLIC=1 allows only the catalogue's pairs (no custom hub ids or paths), caps max new tokens, K, prompt
tokens (SPECVIZ_MAX_PROMPT_TOKENS, counted after the chat template), prompts per workload, upload size, the model
runs queued (all sessions: SPECVIZ_MAX_QUEUED), a visitor's runs at once (all its tabs and sessions together:
SPECVIZ_RUNS_PER_CLIENT) and the seconds one run may take (SPECVIZ_MAX_RUN_SECONDS), and never shows a local path.
Each cap has its own variable to adjust it.
SPECVIZ_PAIRS names the catalogue pairs a public deployment offers (comma-separated, e.g. "pystdlib,smollm2"; default:
the pairs that need no download, the bundled toy pair and smollm2). SPECVIZ_TRUSTED_PROXY=1 says the server is reached
only through the operator's proxy: a visitor is then the address that proxy appended to X-Forwarded-For, not the
connection's (the proxy's). SPECVIZ_SERVERS lists the vLLM servers a public deployment may measure (hosts, host:port
or URLs, comma-separated); in public mode any other is refused
(specviz.remote.check_host). Private mode measures any server.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from specviz.core.dyntree import DynamicTree
from specviz.core.settings import MAX_BRANCHING, MAX_K, MAX_TREE_NODES
from specviz.core.trace import Trace
from specviz.core.trace_json import Bounds, check_within
from specviz.core.verify import tree_size
from specviz.errors import SettingsError
from specviz.remote import allowed_servers, check_host, parse_allowlist
from specviz.remote.errors import HostNotAllowed

REPO_ROOT = Path(__file__).resolve().parents[2]


ON, OFF = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")
PUBLIC_CAPS = {  # variable -> (Limits field, public default, the most it may be raised to, unit)
    "SPECVIZ_MAX_NEW_TOKENS": ("max_new_tokens", 64, 4096, 1),
    "SPECVIZ_MAX_PROMPT_TOKENS": ("max_prompt_tokens", 1024, 131_072, 1),
    "SPECVIZ_MAX_K": ("max_k", 8, MAX_K, 1),
    "SPECVIZ_MAX_TREE_NODES": ("max_tree_nodes", 64, MAX_TREE_NODES, 1),
    "SPECVIZ_MAX_PROMPTS": ("max_prompts", 20, 1000, 1),
    "SPECVIZ_MAX_UPLOAD_KB": ("max_upload_bytes", 200, 100_000, 1000),
    "SPECVIZ_MAX_LAB_SAMPLES": ("max_lab_samples", 200, 100_000, 1),
    "SPECVIZ_MAX_LAB_SECONDS": ("max_lab_seconds", 20, 3600, 1),
    "SPECVIZ_MAX_CONCURRENCY": ("max_concurrency", 8, 64, 1),
    "SPECVIZ_MAX_QUEUED": ("max_queued", 40, 1000, 1),
    "SPECVIZ_RUNS_PER_CLIENT": ("runs_per_client", 1, 16, 1),
    "SPECVIZ_MAX_RUN_SECONDS": ("max_run_seconds", 120, 3600, 1),
}
PROXY_ENV = "SPECVIZ_TRUSTED_PROXY"  # on: the server is behind the operator's proxy, which sets X-Forwarded-For
RENAMED = {"SPECVIZ_RUNS_PER_SESSION": "SPECVIZ_RUNS_PER_CLIENT"}  # an old name -> the variable now read for it


@dataclass(frozen=True)
class Limits:
    public: bool = False
    max_new_tokens: int = 256
    max_prompt_tokens: int = 0  # tokens of one prompt as the model reads it (chat template included); 0: no cap here,
    #                             only the model's context (private mode)
    max_k: int = MAX_K
    max_tree_nodes: int = MAX_TREE_NODES  # nodes of one draft tree, all read by one verify pass
    max_prompts: int = 100
    max_upload_bytes: int = 2_000_000  # a workload file or a trace to replay
    max_lab_samples: int = 2000  # the exactness lab's real-pair sampler
    max_lab_seconds: int = 120
    max_concurrency: int = 64  # requests a load sweep keeps in flight against one server
    max_queued: int = 1000  # model runs waiting in the lecture hall's queue (engine/hall.py), all sessions together
    runs_per_client: int = 16  # a visitor's runs queued or running at once, all its tabs (public mode only)
    max_run_seconds: int = 0  # seconds one model run may take before it is stopped; 0: no budget (private mode)
    servers: tuple[str, ...] = ()  # SPECVIZ_SERVERS: the only servers public mode may measure
    pairs: tuple[str, ...] = ()  # SPECVIZ_PAIRS: the catalogue pairs public mode offers (private mode: every one)
    trusted_proxy: bool = False  # SPECVIZ_TRUSTED_PROXY: a visitor is the address the operator's proxy forwards
    problems: tuple[str, ...] = ()  # what the operator's settings got wrong, and what was used instead

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Limits:
        """Private mode only when SPECVIZ_PUBLIC says so plainly: any value it does not know turns public mode on
        (fail closed), and a cap that is not a whole number in its range falls back to its public default."""
        env = dict(os.environ if env is None else env)
        servers = allowed_servers(env.get("SPECVIZ_SERVERS"))
        flag = env.get("SPECVIZ_PUBLIC", "").strip().lower()
        if flag in OFF:
            return cls(servers=servers)
        unknown = (
            f"SPECVIZ_PUBLIC={flag!r} is none of 1/true/yes/on or 0/false/no/off: public mode is on (fail closed)."
        )
        problems = ([] if flag in ON else [unknown]) + _allowlist_problems(servers) + _renamed(env)
        caps = {}
        for name, (field, default, most, unit) in PUBLIC_CAPS.items():
            value, problem = _cap(name, env.get(name), default, most)
            caps[field] = value * unit
            problems += [problem] if problem else []
        pairs, said = public_pairs(env.get("SPECVIZ_PAIRS"))
        proxy = env.get(PROXY_ENV, "").strip().lower()
        if proxy not in ON + OFF:
            said.append(f"{PROXY_ENV}={proxy!r} is none of 1/true/yes/on or 0/false/no/off: no proxy is trusted.")
        return cls(
            public=True,
            servers=servers,
            pairs=pairs,
            trusted_proxy=proxy in ON,
            problems=tuple(problems + said),
            **caps,
        )

    @property
    def offered_pairs(self) -> tuple[str, ...]:
        """The catalogue pairs this deployment offers: every one in private mode; in public mode its list (the pairs
        that need no download when none was given)."""
        from specviz.engine.loading.catalogue import PAIR_NAMES

        if not self.public:
            return PAIR_NAMES
        return self.pairs or public_pairs(None)[0]

    def offers_pair(self, name: str) -> bool:
        """Whether this deployment offers the catalogue pair of this name."""
        return name in self.offered_pairs

    def check_server(self, url: str) -> None:
        """Raise HostNotAllowed for a server public mode may not measure."""
        check_host(url, self.public, self.servers)

    def check_prompt_tokens(self, count: int) -> None:
        """Refuse, before it is queued, a prompt longer than this deployment runs: a run's cost grows with its prompt
        (every lane of a race and every K of a sweep reads it again), and only the model's context bounds it else."""
        if self.public and self.max_prompt_tokens and count > self.max_prompt_tokens:
            raise SettingsError(
                f"The prompt is {count:,} tokens as the model reads it (with its chat template, where it has one); "
                f"this deployment runs prompts of at most {self.max_prompt_tokens:,} tokens. Shorten it."
            )

    def check_trace(self, trace: Trace) -> None:
        """Refuse, in public mode, a trace to replay that holds more than a run here may make: more drafts in a round
        than the K cap, more tree nodes than the node cap, more new tokens (or rounds) than the new-token cap. Its
        player bundle is built in the shared queue, and its cost grows with these counts."""
        if not self.public:
            return
        caps = Bounds(
            positions=self.max_k,
            nodes=self.max_tree_nodes,
            children=MAX_BRANCHING,
            scored=self.max_tree_nodes,
            new_tokens=self.max_new_tokens,
        )
        check_within(trace.settings, trace.rounds, caps, "this deployment replays")

    def check_tree(self, shape) -> None:
        """Refuse a tree (a shape or a dynamic tree) deeper than the K cap or with more nodes than one verify pass
        may read here (a dynamic tree: its budget, and the nodes it scores, which its draft passes read)."""
        if isinstance(shape, DynamicTree):
            if shape.depth > self.max_k or max(shape.budget, shape.candidates) > self.max_tree_nodes:
                raise SettingsError(
                    f"This deployment allows trees up to {self.max_k} deep and {self.max_tree_nodes} nodes; "
                    f"{shape.text} is {shape.depth} deep and scores {shape.candidates} nodes a round. Use a smaller "
                    "depth or top-k."
                )
            return
        if len(shape) > self.max_k:
            raise SettingsError(
                f"This deployment allows trees up to {self.max_k} deep (its K cap); this one is {len(shape)} deep. "
                "Use fewer levels."
            )
        if tree_size(shape) > self.max_tree_nodes:
            raise SettingsError(
                f"This deployment allows trees of up to {self.max_tree_nodes} nodes; {','.join(map(str, shape))} has "
                f"{tree_size(shape)}. Use fewer children per depth."
            )


def public_pairs(text: str | None) -> tuple[tuple[str, ...], list[str]]:
    """The pairs a public deployment offers, in the catalogue's order, from SPECVIZ_PAIRS (comma-separated names;
    unset or empty: the pairs that need no download), and what the operator got wrong in it. A name that is no
    pair is left out, said; the first pair (the bundled one, which every session starts on, and which SPECVIZ_TARGET /
    SPECVIZ_DRAFT may point elsewhere) is offered whatever the list says, said when the list leaves it out."""
    from specviz.engine.loading.catalogue import CATALOGUE, PAIR_NAMES

    offline = tuple(spec.key for spec in CATALOGUE if spec.offline)
    if text is None or not text.strip():
        return offline, []
    asked = [name.strip().lower() for name in text.split(",") if name.strip()]
    problems = [
        f"SPECVIZ_PAIRS names {name!r}, which is no pair here (the pairs are {', '.join(PAIR_NAMES)}): it is left out."
        for name in asked
        if name not in PAIR_NAMES
    ]
    first = CATALOGUE[0].key
    if first not in asked:
        problems.append(
            f"SPECVIZ_PAIRS leaves out {first!r}, the pair every session starts on (SPECVIZ_TARGET / SPECVIZ_DRAFT "
            "choose its models): it is offered all the same."
        )
    return tuple(name for name in PAIR_NAMES if name in asked or name == first), problems


def _allowlist_problems(servers: tuple[str, ...]) -> list[str]:
    """SPECVIZ_SERVERS read strictly: a bad entry is said at start-up (and then no server may be measured)."""
    try:
        parse_allowlist(servers)
    except HostNotAllowed as exc:
        return [str(exc)]
    return []


def _renamed(env: dict[str, str]) -> list[str]:
    """An old variable's value read under its new name (unless the new one is set too), and said to the operator."""
    said = []
    for old, new in RENAMED.items():
        if old in env:
            what = f"ignored, as {new} is set" if new in env else f"read as {new}"
            env.setdefault(new, env[old])
            said.append(f"{old} is now {new} (a visitor's share, however many tabs it opens): {what}.")
    return said


def _cap(name: str, text: str | None, default: int, most: int) -> tuple[int, str | None]:
    """A public cap from its variable: a whole number from 1 to `most` (above: `most`), else the default, said."""
    if text is None or not text.strip():
        return default, None
    try:
        value = int(text.strip())
    except ValueError:
        value = 0
    if value < 1:
        return default, f"{name}={text!r} is not a whole number of at least 1: using {default}."
    return min(value, most), None if value <= most else f"{name}={text!r} is above the most, {most}: using {most}."


def display_source(source: str, limits: Limits) -> str:
    """How a model source is shown: in public mode a local path becomes just its last folder name."""
    looks_local = source.startswith((".", "/", "~")) or "\\" in source
    return source.rstrip("/\\").replace("\\", "/").split("/")[-1] if limits.public and looks_local else source


def sidebar_source(source: str, limits: Limits) -> str:
    """The sidebar's name for a model in use: the bundled pair relative to the repository (a projector need not show
    where it was cloned), a converted pair's models by name (smollm2, smollm2-draft), anything else as display_source
    shows it."""
    from specviz.engine.loading.models import converted_pair_name

    inside = source.startswith(str(REPO_ROOT) + "/")
    if inside:
        return source.removeprefix(str(REPO_ROOT) + "/")
    return converted_pair_name(source) or display_source(source, limits)


def shown_meta(meta: dict, limits: Limits) -> dict:
    """An export's meta as this deployment may show it: in public mode a model's local path is its last folder."""
    return {
        key: display_source(v, limits) if key in MODEL_KEYS and isinstance(v, str) else v for key, v in meta.items()
    }


MODEL_KEYS = ("target", "draft", "model")  # meta entries that name a model source
