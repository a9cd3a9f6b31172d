"""Known model pairs that share a tokenizer, with prompt presets suited to each."""

from __future__ import annotations

from dataclasses import dataclass, field

from specviz.engine.models import BUNDLED_DRAFT, BUNDLED_TARGET

BUNDLED_PRESETS = {
    # No trailing newline: this tokenizer merges a newline with the next line's indentation ("\n        "), so a
    # prompt ending in a bare "\n" sits at a token boundary the models rarely saw, and they start a new def.
    "code": (
        'def read_lines(path):\n    """Return the lines of a text file without trailing newlines."""\n'
        "    with open(path) as f:"
    ),
    "structured": "DEFAULTS = {\n    'name': 'example',\n    'version': 1,\n    'options': {\n        '",
    "prose": "The module provides a simple way to",
}
GENERAL_PRESETS = {
    "code": 'def fibonacci(n):\n    """Return the n-th Fibonacci number."""\n',
    "structured": '{"name": "Ada Lovelace", "born": 1815, "fields": ["mathematics", "',
    "prose": "Speculative decoding makes language models faster because",
}


@dataclass(frozen=True)
class PairSpec:
    """A named target/draft pair and what it is good for."""

    name: str
    target: str
    draft: str
    note: str
    presets: dict[str, str] = field(default_factory=lambda: dict(GENERAL_PRESETS))
    offline: bool = False  # ships with specviz; the others need the hub (or a local copy in the HF cache)


CATALOGUE: tuple[PairSpec, ...] = (
    PairSpec(
        "Bundled: pystdlib (offline)",
        BUNDLED_TARGET,
        BUNDLED_DRAFT,
        "Trained by specviz on Python's standard library and docs; knows Python, not the world.",
        dict(BUNDLED_PRESETS),
        offline=True,
    ),
    PairSpec(
        "SmolLM2-360M ← SmolLM2-135M",
        "HuggingFaceTB/SmolLM2-360M",
        "HuggingFaceTB/SmolLM2-135M",
        "Same family and tokenizer; mean acceptance about 0.73 sampling with top-k 50.",
    ),
    PairSpec(
        "SmolLM2-1.7B ← SmolLM2-135M",
        "HuggingFaceTB/SmolLM2-1.7B",
        "HuggingFaceTB/SmolLM2-135M",
        "A bigger gap between draft and target: cheaper drafts, lower acceptance.",
    ),
    PairSpec(
        "Qwen2.5-1.5B ← Qwen2.5-0.5B",
        "Qwen/Qwen2.5-1.5B",
        "Qwen/Qwen2.5-0.5B",
        "Shared tokenizer with padded embeddings (151,936 rows for 151,665 tokens).",
    ),
    PairSpec("gpt2-medium ← gpt2", "openai-community/gpt2-medium", "openai-community/gpt2", "The classic small pair."),
)


def find_pair(name: str) -> PairSpec:
    return next(spec for spec in CATALOGUE if spec.name == name)


def presets_for(target: str) -> dict[str, str]:
    """Prompt presets for a target: the catalogue's when known, general ones otherwise."""
    return next((dict(spec.presets) for spec in CATALOGUE if spec.target == target), dict(GENERAL_PRESETS))
