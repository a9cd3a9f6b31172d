"""The registry of methods: every way of producing tokens that specviz runs, measures or recommends, written once.

A *proposer* is a specviz method that drafts tokens for the in-process engine (its class lives in
`specviz.engine.proposers`); `plain` is the target alone, the baseline; a *Hugging Face lane* runs transformers'
`generate()` with the matching option, as a reference implementation. Settings validation, the sidebar, the CLI's
choices, the race and bench lanes and the workload's methods and deployment advice all read this table, so adding a
proposer is one entry here plus its class. This module imports nothing heavy: core code may read it.
"""

from __future__ import annotations

from dataclasses import dataclass

from specviz.errors import SettingsError

SPECVIZ, HF = "specviz", "hf"  # which engine runs the method


@dataclass(frozen=True)
class Method:
    """One method: its names, what it needs, and how the same idea is configured in vLLM and transformers."""

    name: str  # the key in settings, JSON, CLI lists (--method, --lanes)
    label: str  # what the sidebar and the workload page show
    lane: str  # what the race and the bench show, naming the engine
    engine: str  # SPECVIZ (in-process loop) or HF (transformers generate)
    needs_draft: bool  # runs a draft model
    proposer: str | None = None  # class name in specviz.engine.proposers; None for plain and HF lanes
    mirrors: str | None = None  # for an HF lane: the specviz method it is the reference implementation of
    vllm_method: str | None = None  # vLLM's --speculative-config "method"
    hf_option: str | None = None  # the generate() argument that turns it on
    shaped: bool = False  # drafts a tree: runs only with a tree shape (RunSettings.tree, CLI --tree), so the pages'
    #                      method lists, which cannot give one yet, leave it out (PROPOSERS, LANES)

    @property
    def speculative(self) -> bool:
        return self.name != PLAIN

    def vllm_config(
        self, k: int, draft_source: str | None = None, ngram_min: int = 1, ngram_max: int = 3
    ) -> dict | None:
        """The matching vLLM `--speculative-config` (None when vLLM has no such method)."""
        if self.vllm_method is None:
            return None
        config: dict = {"method": self.vllm_method, "num_speculative_tokens": k}
        if self.vllm_method == "ngram":
            config.update(prompt_lookup_max=ngram_max, prompt_lookup_min=ngram_min)
        if self.needs_draft:
            config["model"] = draft_source or "<draft model>"
        return config

    def hf_generate_call(self, k: int, temperature: float, ngram_max: int = 3) -> str | None:
        """The matching Hugging Face `generate()` call (None when transformers has no such option)."""
        sampling = "do_sample=False" if temperature == 0 else f"do_sample=True, temperature={temperature:g}"
        if self.hf_option == "prompt_lookup_num_tokens":
            return (
                f"model.generate(**inputs, prompt_lookup_num_tokens={k}, max_matching_ngram_size={ngram_max}, "
                f"{sampling})"
            )
        if self.hf_option == "assistant_model":
            return (
                f"model.generate(**inputs, assistant_model=draft_model, num_assistant_tokens={k}, "
                f'num_assistant_tokens_schedule="constant", {sampling})'
            )
        return None


PLAIN = "plain"
TREE = "tree"  # several drafts per position, verified in one target pass (specviz.engine.tree)
REGISTRY: dict[str, Method] = {
    m.name: m
    for m in (
        Method(PLAIN, "plain decoding", "plain decoding (specviz)", SPECVIZ, needs_draft=False),
        Method(
            "draft",
            "draft model",
            "specviz · draft model",
            SPECVIZ,
            needs_draft=True,
            proposer="DraftModelProposer",
            vllm_method="draft_model",
            hf_option="assistant_model",
        ),
        Method(
            "ngram",
            "n-gram lookup (prompt lookup)",
            "specviz · n-gram lookup",
            SPECVIZ,
            needs_draft=False,
            proposer="NgramProposer",
            vllm_method="ngram",
            hf_option="prompt_lookup_num_tokens",
        ),
        Method(
            TREE,
            "draft tree",
            "specviz · draft tree",
            SPECVIZ,
            needs_draft=True,
            proposer="TreeProposer",
            shaped=True,
        ),
        Method(
            "hf_assisted",
            "HF assisted generation",
            "HF generate · assistant_model",
            HF,
            needs_draft=True,
            mirrors="draft",
        ),
        Method(
            "hf_prompt_lookup",
            "HF prompt lookup",
            "HF generate · prompt lookup",
            HF,
            needs_draft=False,
            mirrors="ngram",
        ),
    )
}

ENGINE_METHODS = tuple(name for name, m in REGISTRY.items() if m.engine == SPECVIZ)  # what RunSettings.method takes
PROPOSERS = tuple(name for name, m in REGISTRY.items() if m.proposer and not m.shaped)  # the engine's chain methods
LANES = tuple(name for name, m in REGISTRY.items() if not m.shaped)  # what the race and the bench run, plain first
SHAPED = tuple(name for name, m in REGISTRY.items() if m.shaped)  # methods that need a tree shape


def get(name: str) -> Method:
    """The method called `name`, or a SettingsError that lists the choices."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise SettingsError(f"unknown method {name!r}; choose one of {', '.join(REGISTRY)}.") from None


def label(name: str) -> str:
    return get(name).label


def lane_label(name: str) -> str:
    return get(name).lane


def parse_list(text: str, option: str, allowed: tuple[str, ...]) -> list[str]:
    """'draft, ngram' -> ['draft', 'ngram'], each checked against `allowed`, with a message naming the option."""
    names = [part.strip() for part in str(text).split(",") if part.strip()]
    unknown = [n for n in names if n not in allowed]
    if unknown or not names:
        raise SettingsError(f"{option} takes any of {', '.join(allowed)} (comma-separated); got {text!r}.")
    return names


def needs_draft(names) -> bool:
    """Whether any of these methods runs a draft model (so the pair must load one)."""
    return any(get(n).needs_draft for n in names)
