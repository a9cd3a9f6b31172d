"""The registry of methods: every way of producing tokens that specviz runs, measures or recommends, written once.

A *proposer* is a specviz method that drafts tokens for the in-process engine (its drafter class, in
`specviz.engine.proposers`, names the method it implements); `plain` is the target alone, the baseline; a *Hugging
Face lane* runs transformers' `generate()` with the matching option, as a reference implementation. Settings
validation, the sidebar, the CLI's choices, the race and bench lanes and the workload's methods and deployment advice
all read this table, so adding a proposer is one entry here plus its class. Elsewhere a method is named by the
constants below, never by a literal. This module imports nothing heavy: core code may read it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING

from specviz.errors import SettingsError

if TYPE_CHECKING:
    from specviz.core.settings import RunSettings

SPECVIZ, HF = "specviz", "hf"  # which engine runs the method

# What one draft step costs, the fact the predicted speedup needs (measure/predict.py):
NO_DRAFTS = "none"  # plain decoding: nothing is drafted
DRAFT_MODEL_STEP = "draft model step"  # a forward pass of the draft model per drafted token (c = its measured cost)
HOST_LOOKUP = "host lookup"  # a search on the host over tokens already known (c = 0: next to nothing)
FEATURE_HEAD_STEP = "feature head step"  # a pass of a small head over the target's own features per drafted token
#                                          (c = its measured cost: one decoder layer and the target's LM head)
HEADS_PASS = "medusa heads pass"  # one pass of K parallel heads over one feature drafts all K tokens (Medusa)
#                                   (c = its measured time / K: a residual block and an LM head per token)
MEDUSA_HEADS_PASS = HEADS_PASS  # its former name
EXIT_LAYERS_STEP = "early exit step"  # the target's own first E of L layers, its final norm and LM head, per drafted
#                                        token (c = its measured cost: about E/L of a target step, plus the LM head)
QUANTIZED_STEP = "quantized copy step"  # a pass of the target's own low-bit copy per drafted token (c = its measured
#                                         cost: every layer, at fewer bits, through weight-only kernels)

PLAIN, DRAFT, NGRAM, TREE = "plain", "draft", "ngram", "tree"
EAGLE = "eagle"
EAGLE3 = "eagle3"
MEDUSA = "medusa"
MTP = "mtp"  # one MTP module (DeepSeek-V3 style), post hoc on the frozen target: engine/heads/mtp.py
EARLY_EXIT = "early_exit"  # self-speculation by early exit (LayerSkip): engine/early_exit.py
HF_EARLY_EXIT, HF_ASSISTANT_EARLY_EXIT = "hf_early_exit", "assistant_early_exit"  # its HF lane and generate() option
QUANTIZED = "quantized"  # the target's own weights at fewer bits drafts for it: engine/forward/quantized.py
HF_QUANTIZED = "hf_quantized"  # its HF lane: generate(assistant_model=the same copy, as a transformers model)
SUFFIX = "suffix"  # suffix decoding (ArcticInference): core/suffix_tree.py, engine/proposers/suffix.py
VLLM_SUFFIX = "suffix"  # vLLM's method name for it (needs the arctic-inference package)
HF_ASSISTED, HF_PROMPT_LOOKUP = "hf_assisted", "hf_prompt_lookup"
TLI, SLEM = "tli", "slem"  # drafting across tokenizers (core/crossvocab.py, engine/proposers/crossing.py)
HF_UAG = "hf_uag"  # transformers' universal assisted generation: assistant_model + tokenizer + assistant_tokenizer
HF_ASSISTANT_MODEL, HF_PROMPT_LOOKUP_TOKENS = "assistant_model", "prompt_lookup_num_tokens"  # generate() options
VLLM_DRAFT_MODEL, VLLM_NGRAM, VLLM_EAGLE = "draft_model", "ngram", "eagle"  # vLLM's --speculative-config methods
VLLM_EAGLE3, VLLM_MEDUSA = "eagle3", "medusa"
VLLM_MTP = "mtp"  # vLLM 0.32's one MTP method (mimo_mtp, deepseek_mtp, ... are deprecated aliases of it): the MTP
#                   layers are the served model's own (a MiMoForCausalLM re-export, engine/heads/mimo.py), so no "model"

NEEDS_SHAPE = (
    "Tree speculation needs a tree shape: children per depth, e.g. 3,2,1,1 "
    "(3 children of the root, 2 under each, then single children); 1,1,1,1 is the chain with K = 4; or a dynamic "
    "(EAGLE-2) tree, dynamic:BUDGET,DEPTH,TOPK, e.g. dynamic:16,5,4."
)


@dataclass(frozen=True)
class HeadSpec:
    """A kind of feature head a method drafts with: the directory beside a target where a pair's copy sits, the
    engine module that recognises and loads one (imported only when used), and the words for messages."""

    name: str  # "EAGLE-1": the method in messages
    beside: str  # its directory beside the target (the bundled pair's eagle/, ...)
    needs: str  # "a head": what the method needs
    one: str  # "one": the pronoun for it
    stage: str  # the train-tiny stage that writes one for the bundled target
    holds: str  # what its directory holds, for the refusal of a directory that is none of the kinds
    module: str  # the engine module that reads it
    recogniser: str  # that module's function (directory) -> whether a directory holds this kind (read from its files)
    loader: str  # and its function (directory, target, target_name) -> the head, refusing misfits
    lean: bool = False  # the head has a lean step (engine/heads/lean_heads.py), run where the target's forward is lean
    served_inside: str = ""  # "module:function" (target, head, out) writing the checkpoint vLLM serves this method
    #                          with, where vLLM reads the head from the served model itself ("": it takes the head's
    #                          directory as its speculative "model")

    def recognises(self, directory) -> bool:
        """Whether `directory` holds a head of this kind."""
        return getattr(import_module(self.module), self.recogniser)(directory)

    def load(self, directory, target, target_name: str):
        """The head in `directory`, loaded for `target` (refused when it does not fit)."""
        return getattr(import_module(self.module), self.loader)(directory, target, target_name)


@dataclass(frozen=True)
class Method:
    """One method: its names, what it needs, and how the same idea is configured in vLLM and transformers."""

    name: str  # the key in settings, JSON, CLI lists (--method, --lanes)
    label: str  # what the sidebar and the workload page show
    lane: str  # what the race and the bench show, naming the engine
    engine: str  # SPECVIZ (in-process loop) or HF (transformers generate)
    loads_draft: bool  # runs a second, smaller model (so the pair must load one)
    draft_cost: str  # what drafting one token costs: NO_DRAFTS, DRAFT_MODEL_STEP, HOST_LOOKUP, FEATURE_HEAD_STEP,
    #                  HEADS_PASS or EXIT_LAYERS_STEP
    mirrors: str | None = None  # for an HF lane: the specviz method it is the reference implementation of
    vllm_method: str | None = None  # vLLM's --speculative-config "method"
    hf_option: str | None = None  # the generate() argument that turns it on
    shaped: bool = False  # drafts a tree: runs only with a tree shape (RunSettings.tree, CLI --tree), so the pages'
    #                      method lists, which cannot give one yet, leave it out (PROPOSERS, LANES)
    refuses_tree: str = ""  # why this chain method cannot take a tree shape (the generic reason when empty)
    branches: bool = False  # drafts a chain, or with a tree shape a tree of its top-b tokens per node (the feature
    #                         heads: EAGLE-2-style trees for EAGLE-1 / EAGLE-3, Medusa's Cartesian tree)
    remembers: bool = False  # learns from earlier runs (suffix decoding's global trie): runs take the caller's
    #                          SuffixMemory (per app session, per measurement), so the server's run cache is bypassed
    head: HeadSpec | None = None  # the feature head it drafts with, reading the target's hidden states: found
    #                               beside the target (DIR/../<head.beside>) or given by path (--head, its kind read
    #                               from its config); no draft model
    adaptive: bool = False  # K means a chain drafted token by token, so the K schedules apply (core/schedule.py)
    refuses_schedule: str = ""  # why an adaptive K schedule does not apply (the generic reason when empty)
    exits_early: bool = False  # drafts with the target's own first layers (RunSettings.exit_layer, CLI --exit-layer)
    vllm_note: str = ""  # what else vLLM needs beyond its --speculative-config (shown beside it)
    quantizes: bool = False  # drafts with the target's own weights rounded to fewer bits (RunSettings.quant, CLI
    #                          --bits, --quant-group, --quant-head)
    crosses: bool = False  # drafts with a draft model whose tokenizer differs from the target's (TLI, SLEM, HF UAG):
    #                        only such a pair runs it, and such a pair runs only these of the draft-model methods
    spec_bench: str = ""  # its name on Spec-Bench's leaderboard (measure/spec_bench.py), where it is there
    refuses_dynamic: str = ""  # why it cannot grow a dynamic (EAGLE-2) tree though it drafts trees ("" when it can)
    former_cost_keys: tuple[tuple[str, str], ...] = ()  # (what, key): the keys cost measurements wrote for this
    #   method before they were keyed by method ("step_ms", "drafts", "reference_ms"), so old files still read

    @property
    def loads_head(self) -> bool:
        """Whether it drafts with a feature head (so the pair must find one)."""
        return self.head is not None

    @property
    def speculative(self) -> bool:
        return self.draft_cost != NO_DRAFTS

    @property
    def timed_as(self) -> str | None:
        """The drafter whose measured step is this method's draft step (engine/costs.py): the draft model for every
        method that runs one, the specviz method an HF lane mirrors, else itself; None when no model drafts."""
        if self.draft_cost in (NO_DRAFTS, HOST_LOOKUP):
            return None
        if self.draft_cost == DRAFT_MODEL_STEP:
            return DRAFT
        return self.mirrors or self.name

    @property
    def takes_tree(self) -> bool:
        """Whether a tree shape makes this method draft a tree (it must, or it may)."""
        return self.shaped or self.branches

    def check(self, settings: RunSettings) -> None:
        """Refuse settings this method cannot run: a tree method needs a shape, a chain method takes none (plain
        ignores one: it is the baseline a tree run is measured by)."""
        if self.shaped and not (settings.tree or settings.dynamic):
            raise SettingsError(NEEDS_SHAPE)
        if (settings.tree or settings.dynamic) and not self.takes_tree and self.speculative:
            raise SettingsError(
                self.refuses_tree
                or f"A tree shape is only used by the {TREE} method and the feature heads that draft trees "
                f"({', '.join(n for n, m in REGISTRY.items() if m.branches)}), not by {self.name!r}: drop it, or "
                f"use method {TREE} (with 1,1,1,1 for the chain with K = 4)."
            )

    def vllm_config(
        self, k: int, draft_source: str | None = None, ngram_min: int = 1, ngram_max: int = 3, suffix=None
    ) -> dict | None:
        """The matching vLLM `--speculative-config` (None when vLLM has no such method)."""
        if self.vllm_method is None:
            return None
        config: dict = {"method": self.vllm_method, "num_speculative_tokens": k}
        if self.vllm_method == VLLM_NGRAM:
            config.update(prompt_lookup_max=ngram_max, prompt_lookup_min=ngram_min)
        if self.name == SUFFIX and suffix is not None:  # suffix: a SuffixOptions (core/suffix_tree.py)
            config.update(suffix.vllm_keys())
        if self.loads_draft:
            config["model"] = draft_source or "<draft model>"
        if self.crosses:
            config["use_heterogeneous_vocab"] = True
        if self.head is not None and not self.head.served_inside:
            config["model"] = draft_source or "<head directory>"
        return config

    def hf_generate_call(self, k: int, temperature: float, ngram_max: int = 3) -> str | None:
        """The matching Hugging Face `generate()` call (None when transformers has no such option)."""
        sampling = "do_sample=False" if temperature == 0 else f"do_sample=True, temperature={temperature:g}"
        if self.hf_option == HF_PROMPT_LOOKUP_TOKENS:
            return (
                f"model.generate(**inputs, prompt_lookup_num_tokens={k}, max_matching_ngram_size={ngram_max}, "
                f"{sampling})"
            )
        if self.hf_option == HF_ASSISTANT_EARLY_EXIT:
            return f"model.generate(**inputs, assistant_early_exit=E, num_assistant_tokens={k}, {sampling})"
        if self.hf_option == HF_ASSISTANT_MODEL and self.crosses:
            return (
                f"model.generate(**inputs, assistant_model=draft_model, tokenizer=tokenizer, "
                f"assistant_tokenizer=draft_tokenizer, num_assistant_tokens={k}, "
                f'num_assistant_tokens_schedule="constant", {sampling})'
            )
        if self.hf_option == HF_ASSISTANT_MODEL:
            return (
                f"model.generate(**inputs, assistant_model=draft_model, num_assistant_tokens={k}, "
                f'num_assistant_tokens_schedule="constant", {sampling})'
            )
        return None


REGISTRY: dict[str, Method] = {
    m.name: m
    for m in (
        Method(PLAIN, "plain decoding", "plain decoding (specviz)", SPECVIZ, False, NO_DRAFTS),
        Method(
            DRAFT,
            "draft model",
            "specviz · draft model",
            SPECVIZ,
            loads_draft=True,
            draft_cost=DRAFT_MODEL_STEP,
            vllm_method=VLLM_DRAFT_MODEL,
            hf_option=HF_ASSISTANT_MODEL,
            adaptive=True,
            spec_bench="SpS",  # speculative sampling with a draft model
        ),
        Method(
            NGRAM,
            "n-gram lookup (prompt lookup)",
            "specviz · n-gram lookup",
            SPECVIZ,
            loads_draft=False,
            draft_cost=HOST_LOOKUP,
            vllm_method=VLLM_NGRAM,
            hf_option=HF_PROMPT_LOOKUP_TOKENS,
            refuses_tree=(
                "n-gram lookup proposes one continuation, not a tree: tree speculation needs a draft model "
                f"(method {TREE}), or drop the tree shape to use n-gram lookup."
            ),
            refuses_schedule="proposes whatever continuation it finds, up to K, at next to no cost per token: it "
            "has no confidence of its own to stop on",
            spec_bench="PLD",  # prompt lookup decoding
        ),
        Method(
            SUFFIX,
            "Suffix decoding",
            "specviz · suffix decoding",
            SPECVIZ,
            loads_draft=False,
            draft_cost=HOST_LOOKUP,
            vllm_method=VLLM_SUFFIX,
            remembers=True,
            refuses_schedule="already sizes each draft itself (its match length and path probability, capped at K), "
            "at next to no cost per token: it has no confidence of its own to stop on",
            refuses_tree=(
                "Suffix decoding here proposes one path (the most frequent continuation), not a tree: drop the tree "
                f"shape, or use method {TREE} with the draft model."
            ),
        ),
        Method(
            EAGLE,
            "EAGLE-1 head",
            "specviz · EAGLE-1 head",
            SPECVIZ,
            loads_draft=False,
            draft_cost=FEATURE_HEAD_STEP,
            vllm_method=VLLM_EAGLE,
            head=HeadSpec(
                "EAGLE-1",
                "eagle",
                "a head",
                "one",
                "eagle",
                "an EAGLE-1 head (fc.weight and layers.0.*, vLLM's EAGLE-1 format)",
                "specviz.engine.heads.eagle",
                "is_eagle_head",
                "load_eagle_head",
                lean=True,
            ),
            adaptive=True,
            branches=True,
            former_cost_keys=(("step_ms", "head_step_ms"),),
            spec_bench="EAGLE",
        ),
        Method(
            EAGLE3,
            "EAGLE-3 head",
            "specviz · EAGLE-3 head",
            SPECVIZ,
            loads_draft=False,
            draft_cost=FEATURE_HEAD_STEP,
            vllm_method=VLLM_EAGLE3,
            head=HeadSpec(
                "EAGLE-3",
                "eagle3",
                "an EAGLE-3 head",
                "one",
                "eagle3",
                'an EAGLE-3 head (a config naming "LlamaForCausalLMEagle3"; fc, midlayer.*, norm, lm_head and d2t)',
                "specviz.engine.heads.eagle3",
                "is_eagle3_head",
                "load_head3",
                lean=True,
            ),
            adaptive=True,
            branches=True,
            former_cost_keys=(("step_ms", "head3_step_ms"),),
            spec_bench="EAGLE3",
        ),
        Method(
            MEDUSA,
            "Medusa heads",
            "specviz · Medusa heads",
            SPECVIZ,
            loads_draft=False,
            draft_cost=HEADS_PASS,
            vllm_method=VLLM_MEDUSA,
            head=HeadSpec(
                "Medusa",
                "medusa",
                "heads",
                "them",
                "medusa",
                'Medusa heads (a config naming "MedusaModel"; blocks.* and lm_heads.*)',
                "specviz.engine.heads.medusa",
                "is_medusa_head",
                "load_medusa",
            ),
            branches=True,
            former_cost_keys=(("step_ms", "medusa_pass_ms"), ("drafts", "medusa_heads")),
            refuses_dynamic="Medusa cannot grow a dynamic tree: its heads all read one feature and never see a drafted "
            "token, so expanding a node gives every node of a depth the same children. Use a static Medusa tree (e.g. "
            f"3,2,1), or a dynamic tree with {TREE}, {EAGLE} or {EAGLE3}.",
            spec_bench="Medusa",
        ),
        Method(
            MTP,
            "MTP module",
            "specviz · MTP module",
            SPECVIZ,
            loads_draft=False,
            draft_cost=FEATURE_HEAD_STEP,
            vllm_method=VLLM_MTP,
            head=HeadSpec(
                "MTP",
                "mtp",
                "an MTP module",
                "one",
                "mtp",
                'an MTP module (a config naming "SpecvizMTP"; enorm, hnorm, eh_proj, mtp_block.* and shared_head.norm)',
                "specviz.engine.heads.mtp",
                "is_mtp",
                "load_mtp",
                lean=True,
                served_inside="specviz.engine.heads.mimo:export_mimo",
            ),
            adaptive=True,
            branches=True,
            vllm_note="vLLM reads MTP layers from the served model itself, so serve the target's MiMoForCausalLM "
            "re-export with the MTP module inside it (`python -m specviz serve --method mtp` writes it once, into "
            "~/.cache/specviz/mimo/), not the target's own directory.",
            former_cost_keys=(("step_ms", "mtp_step_ms"),),
        ),
        Method(
            EARLY_EXIT,
            "early exit (self-speculation)",
            "specviz · early exit",
            SPECVIZ,
            loads_draft=False,
            draft_cost=EXIT_LAYERS_STEP,
            hf_option=HF_ASSISTANT_EARLY_EXIT,
            adaptive=True,
            exits_early=True,
            refuses_tree=(
                "Early exit drafts a chain here (one token at a time through the target's first layers): drop the "
                f"tree shape, or use method {TREE} with the draft model."
            ),
            former_cost_keys=(("step_ms", "exit_step_ms"), ("reference_ms", "exit_target_step_ms")),
        ),
        Method(
            QUANTIZED,
            "the target at fewer bits (quantized self-draft)",
            "specviz · quantized self-draft",
            SPECVIZ,
            loads_draft=False,
            draft_cost=QUANTIZED_STEP,
            adaptive=True,
            quantizes=True,
            refuses_tree=(
                "The quantized self-draft drafts a chain here (one token at a time through the target's low-bit "
                f"copy): drop the tree shape, or use method {TREE} with the draft model."
            ),
            vllm_note="vLLM has no method that drafts with a quantized copy of the served model itself; the nearest "
            "is draft_model with a separately quantized checkpoint of the target as the draft.",
        ),
        Method(
            TREE,
            "draft tree",
            "specviz · draft tree",
            SPECVIZ,
            loads_draft=True,
            draft_cost=DRAFT_MODEL_STEP,
            shaped=True,
            refuses_schedule="drafts a tree of a fixed shape, not a chain (its depth is set by the shape)",
        ),
        Method(
            TLI,
            "TLI: a draft with another tokenizer (token intersection)",
            "specviz · TLI (other tokenizer)",
            SPECVIZ,
            loads_draft=True,
            draft_cost=DRAFT_MODEL_STEP,
            vllm_method=VLLM_DRAFT_MODEL,
            hf_option=HF_ASSISTANT_MODEL,
            crosses=True,
            refuses_tree="TLI drafts a chain here: drop the tree shape.",
            refuses_schedule="drafts a chain of K over the shared tokens; the K schedules are not wired for it yet",
            vllm_note="vLLM 0.32 drafts across vocabularies only greedily (use_heterogeneous_vocab with "
            "method draft_model).",
        ),
        Method(
            SLEM,
            "SLEM: a draft with another tokenizer (text re-tokenized)",
            "specviz · SLEM (other tokenizer)",
            SPECVIZ,
            loads_draft=True,
            draft_cost=DRAFT_MODEL_STEP,
            hf_option=HF_ASSISTANT_MODEL,
            crosses=True,
            refuses_tree="SLEM drafts a chain of text here: drop the tree shape.",
            refuses_schedule="drafts K draft tokens of text, which become however many target tokens they spell",
        ),
        Method(
            HF_UAG,
            "HF universal assisted generation",
            "HF generate · assistant_tokenizer",
            HF,
            loads_draft=True,
            draft_cost=DRAFT_MODEL_STEP,
            mirrors=SLEM,
            hf_option=HF_ASSISTANT_MODEL,
            crosses=True,
        ),
        Method(
            HF_ASSISTED,
            "HF assisted generation",
            "HF generate · assistant_model",
            HF,
            loads_draft=True,
            draft_cost=DRAFT_MODEL_STEP,
            mirrors=DRAFT,
            hf_option=HF_ASSISTANT_MODEL,
        ),
        Method(
            HF_PROMPT_LOOKUP,
            "HF prompt lookup",
            "HF generate · prompt lookup",
            HF,
            loads_draft=False,
            draft_cost=HOST_LOOKUP,
            mirrors=NGRAM,
            hf_option=HF_PROMPT_LOOKUP_TOKENS,
        ),
        Method(
            HF_QUANTIZED,
            "HF assisted generation, the target's own copy",
            "HF generate · assistant_model=quantized copy",
            HF,
            loads_draft=False,
            draft_cost=QUANTIZED_STEP,
            mirrors=QUANTIZED,
            hf_option=HF_ASSISTANT_MODEL,
            quantizes=True,
        ),
        Method(
            HF_EARLY_EXIT,
            "HF early exit",
            "HF generate · assistant_early_exit",
            HF,
            loads_draft=False,
            draft_cost=EXIT_LAYERS_STEP,
            mirrors=EARLY_EXIT,
            hf_option=HF_ASSISTANT_EARLY_EXIT,
            exits_early=True,
        ),
    )
}

ENGINE_METHODS = tuple(name for name, m in REGISTRY.items() if m.engine == SPECVIZ)  # what RunSettings.method takes
PROPOSERS = tuple(  # chains over one tokenizer
    n for n, m in REGISTRY.items() if m.engine == SPECVIZ and m.speculative and not m.shaped and not m.crosses
)
LANES = tuple(name for name, m in REGISTRY.items() if not m.shaped and not m.crosses)  # the race and the bench, plain
#                                                                                        first
CROSSING = tuple(n for n, m in REGISTRY.items() if m.engine == SPECVIZ and m.crosses)  # a draft with its own tokenizer
CROSSING_LANES = (PLAIN,) + tuple(n for n, m in REGISTRY.items() if m.crosses)  # bench's lanes for such a pair
SHAPED = tuple(name for name, m in REGISTRY.items() if m.shaped)  # methods that need a tree shape


def runnable_with(
    candidates: tuple[str, ...], has_draft: bool, crosses: bool, crossing: tuple[str, ...] = CROSSING
) -> tuple[str, ...]:
    """The candidates a pair can run: none that loads a draft model where there is none; with a draft that speaks
    another tokenizer (crosses), `crossing` (TLI and SLEM; the race adds HF's UAG lane) instead of the methods that
    compare its token ids with the target's."""
    same_tokens = has_draft and not crosses
    kept = tuple(name for name in candidates if same_tokens or not REGISTRY[name].loads_draft)
    return kept + (crossing if has_draft and crosses else ())


def with_heads(candidates: Sequence[str], heads: Collection[str]) -> tuple[str, ...]:
    """The candidates a target has what they need for: a feature head's method only where its head was found beside
    the target (`heads`, as models.find_heads finds them); the methods that draft with no head all pass. The race's
    lanes and the sidebar's proposers are offered by this one rule."""
    return tuple(name for name in candidates if name in heads or not REGISTRY[name].loads_head)


def first_choice(offered: tuple[str, ...]) -> str:
    """The method a page starts with: the draft model where it runs, else the first offered (TLI across
    tokenizers, n-gram lookup without a draft)."""
    return DRAFT if DRAFT in offered else next((m for m in offered if m in CROSSING), offered[0])


RACE_FIRST = (DRAFT, SUFFIX, EAGLE3, EAGLE, MEDUSA, EARLY_EXIT)  # the lanes a chosen race picks first, in order
BRANCHING = tuple(name for name, m in REGISTRY.items() if m.branches)  # chain methods that also draft trees
GROWS_DYNAMIC = tuple(  # the tree methods that can grow a dynamic (EAGLE-2) tree
    name for name, m in REGISTRY.items() if (m.shaped or m.branches) and not m.refuses_dynamic
)
FROM_VLLM = {
    m.vllm_method: m.name for m in REGISTRY.values() if m.vllm_method and m.engine == SPECVIZ and not m.crosses
}


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


def loads_draft(names) -> bool:
    """Whether any of these methods runs a draft model (so the pair must load one)."""
    return any(get(n).loads_draft for n in names)


def loads_head(names) -> bool:
    """Whether any of these methods drafts with a feature head (so the pair must find one)."""
    return any(get(n).loads_head for n in names)


def heads_words() -> str:
    """Each head method and what it drafts with, for help texts: "eagle = the EAGLE-1 head; ..."."""
    return "; ".join(f"{name} = the {m.label}" for name, m in REGISTRY.items() if m.head is not None)


FAMILY = ("all", "family")  # the --method words (and the workload page's choice) for every runnable proposer


def whole_family(
    draft: bool, heads, exit_refusal: str = "", head_hint: str = "give one with --head DIR"
) -> tuple[list[str], list[str]]:
    """Every chain proposer this pair can run, and "name: why not" for each one left out: the draft model needs a
    draft, a feature head its head beside the target (or given), early exit an exit layer this target has (a K
    schedule is no reason: the methods it does not apply to run with a constant K, as settings.for_method makes them).

    draft: whether the pair has a draft model; heads: the feature-head methods whose head was found; exit_refusal:
    why early exit cannot run here ("" when it can); head_hint: how to get a missing head, where the reader is.
    Tree methods need a shape, so they are never in the family."""
    runnable, left_out = [], []
    for name in PROPOSERS:
        entry = REGISTRY[name]
        if entry.loads_draft and not draft:
            why = "no draft model is loaded"
        elif entry.loads_head and name not in heads:
            why = f"no {entry.label} found beside the target ({head_hint})"
        elif entry.exits_early and exit_refusal:
            why = exit_refusal
        else:
            runnable.append(name)
            continue
        left_out.append(f"{name}: {why}")
    return runnable, left_out
