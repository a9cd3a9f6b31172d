"""The shared sidebar: model pair, proposer, K, sampling, seed, length, device, lecture mode; and the prompt box.

Widget values survive page switches (kept in session state under a second key), and a pair that fails to load
leaves the previous pair in use.
"""

from __future__ import annotations

import json
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, replace
from pathlib import Path

import streamlit as st

from specviz import methods
from specviz.core import schedule
from specviz.core.dyntree import DynamicTree
from specviz.core.quantize import BITS, DEFAULT_BITS, QuantOptions
from specviz.core.sampling import SamplingSettings
from specviz.core.settings import (
    FORWARD_AUTO,
    FORWARD_HF,
    FORWARD_LEAN,
    FORWARDS,
    RunSettings,
    TreeSpec,
    parse_tree_spec,
    tree_fields,
)
from specviz.core.verify import BLOCK as BLOCK_VERIFIER
from specviz.core.verify import TOKEN as TOKEN_VERIFIER
from specviz.core.verify import VERIFIERS, tree_size
from specviz.engine.loading import models
from specviz.engine.loading.catalogue import (
    CATALOGUE,
    exit_layer_for,
    find_pair,
    pair_of_sources,
    presets_for,
    uses_chat,
)
from specviz.engine.loading.models import BUNDLED_DRAFT, BUNDLED_TARGET, DTYPES, ModelPair
from specviz.engine.loading.vocab import load_counts
from specviz.errors import SpecvizError
from specviz.measure import race_lanes
from specviz.measure.precision import time_precisions, verdict
from specviz.ui.limits import Limits, sidebar_source
from specviz.ui.loaders import cached_pair, default_sources, draft_crosses
from specviz.viz.explain import BF16_GREEDY_NOTE
from specviz.viz.text import literal

CUSTOM = "Custom: any two hub ids or local paths"
DTYPE_HELP = (
    "auto: float32 on CPU, bfloat16 on a GPU. Which is faster depends on the CPU (bfloat16 is native on AVX-512 BF16 "
    "and AMX, emulated elsewhere): the button below times both here. In bfloat16, " + BF16_GREEDY_NOTE
)


@dataclass(frozen=True)
class Controls:
    target: str
    draft: str
    device: str
    dtype: str
    settings: RunSettings | None  # None when the sidebar holds an invalid combination (an error is shown)
    lecture: bool


FIRST_RUN = {  # the run a newcomer sees first (home and round page), with the code preset prompt: chosen by running
    # the bundled pair over prompts, temperatures 0.5-0.8, top-p and seeds (tests/engine/test_first_run.py): at 0.6
    # with seed 3 the text reads like code (no line repeated) and 11 of 16 rounds end in a rejection and a residual
    # draw; at temperature 1 the text falls apart, greedy repeats one line three times
    "temperature": 0.6,
    "top_p": 1.0,
    "k": 4,
    "seed": 3,
    "max_new_tokens": 48,
}
FIRST_RUN_WORDS = (
    "The first run: the code preset prompt, sampled at temperature 0.6 (top-p off), K = 4, 48 new tokens, seed 3: "
)
FIRST_RUN_NOTE = FIRST_RUN_WORDS + CATALOGUE[0].first_run  # on the bundled toy pair, where it was chosen
FIRST_RUN_ELSEWHERE = (
    "the bundled toy pair's settings, chosen there so that rejections and residual draws show and the text still "
    "reads like code; how this pair's text reads at them was not looked at."
)
PAGE_DEFAULTS = {  # each page starts where its lesson is clearest; a value the user set is kept across pages
    "rounds": dict(FIRST_RUN),  # sampling: rejections, residuals and corrections happen, and the text reads well
    "race": {"temperature": 0.0, "top_p": 1.0, "k": 4, "seed": 0},  # greedy: every lane prints the same text
    "workload": {"temperature": 1.0, "top_p": 1.0, "k": 4, "seed": 0},  # sampled, as served, whichever page came before
}
ROUNDS_GREEDY = " For greedy rounds pick a bundled trace or set the temperature to 0."
PAGE_DEFAULT_NOTES = {  # the rounds page's depends on the pair: first_run_note(target) + ROUNDS_GREEDY
    "race": "Starts greedy (temperature 0): every lane must print the same text, so the identical-text check means "
    "something and the text reads well; raise the temperature to see sampled lanes differ.",
    "workload": "Starts sampling at temperature 1 (top-p off), as most deployments serve, whichever page you came "
    "from; set the temperature to 0 to measure greedy decoding.",
}


def first_run_note(target: str, draft: str) -> str:
    """What the first run is on this pair, and what it shows there (the toy's words only on the toy)."""
    spec = pair_of_sources(target, draft)
    return FIRST_RUN_WORDS + (spec.first_run if spec and spec.first_run else FIRST_RUN_ELSEWHERE)


def page_default_note(page: str, target: str, draft: str) -> str:
    """What a page starts with, and why, said for the pair in use ("" for a page without its own starting values)."""
    if page == "rounds":
        return first_run_note(target, draft) + ROUNDS_GREEDY
    return PAGE_DEFAULT_NOTES.get(page, "")


def first_run_settings(draft_vocab: int = 0) -> RunSettings:
    """The first run's settings (FIRST_RUN) for the draft model, with the draft vocabulary the pair recommends."""
    run = FIRST_RUN
    return RunSettings(
        method=methods.DRAFT,
        k=run["k"],
        sampling=SamplingSettings(run["temperature"], 0, run["top_p"]),
        max_new_tokens=run["max_new_tokens"],
        seed=run["seed"],
        draft_vocab=draft_vocab,
    )


def drafted_as_the_pair_can(settings: RunSettings, sources: tuple[str, str, str, str]) -> RunSettings:
    """The draft model's settings, drafting as the pair in use can instead: by n-gram lookup where it has no draft
    model, by TLI where its draft speaks another tokenizer."""
    has_draft, crosses = pair_drafts(sources)
    if not methods.get(settings.method).loads_draft or (has_draft and not crosses):
        return settings
    return replace(settings, method=methods.TLI if crosses else methods.NGRAM, draft_vocab=0)


def is_first_run(settings: RunSettings, prompt: str, target: str) -> bool:
    """Whether a run is the first run (FIRST_RUN with the code preset, drafted by the pair's draft model: its own
    method, or TLI across tokenizers), whatever draft vocabulary it used."""
    if settings.method not in (methods.DRAFT, *methods.CROSSING):
        return False
    first = replace(first_run_settings(settings.draft_vocab), method=settings.method)
    return settings == first and prompt == presets_for(target)["code"]


TREE_PRESETS = ("2,2,1,1", "3,2,1,1", "4,2,2,1", "dynamic:16,5,4")  # children per depth, or a dynamic (EAGLE-2)
#                                                                   tree; the rounds page offers the tree method
TREE_CUSTOM = "Custom shape…"
HEAD_TREE = "head_tree"  # the sidebar's toggle: a feature head drafts a tree (the shape picker's shape)
TREE_PAGES = ("rounds",)  # pages whose runs can be trees (the race and workload lanes are chains)


def apply_page_defaults(page: str) -> None:
    """Set this page's starting values for the settings the user has not touched (call before the widgets)."""
    for key, value in PAGE_DEFAULTS.get(page, {}).items():
        if not st.session_state.get("_touched_" + key):
            st.session_state[key] = st.session_state["_kept_" + key] = value


def sidebar_ranges(limits: Limits) -> dict[str, tuple[float, float]]:
    """Each numeric sidebar setting's allowed range, as its widget offers it (public mode's caps included)."""
    return {
        "k": (1, limits.max_k),
        "temperature": (0.0, 2.0),
        "top_k": (0, 1000),
        "top_p": (0.05, 1.0),
        "seed": (0, 2**31 - 1),
        "max_new_tokens": (1, limits.max_new_tokens),
        "draft_vocab": (0, 1_000_000),
        "exit_layer": (1, MAX_SIDEBAR_EXIT_LAYER),
    }


def in_range(key: str, value, limits: Limits):
    """value, or the nearest value the sidebar's widget takes (a number of the wrong kind: None); settings without a
    range pass through."""
    if key not in sidebar_ranges(limits):
        return value
    low, high = sidebar_ranges(limits)[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:  # value != value: NaN
        return None
    return type(low)(min(max(value, low), high))


SETTING_WORDS = {  # a sidebar setting as a sentence names it
    "k": "K",
    "temperature": "the temperature",
    "top_k": "top-k",
    "top_p": "top-p",
    "seed": "the seed",
    "max_new_tokens": "max new tokens",
    "draft_vocab": "the draft vocabulary",
    "exit_layer": "the exit layer E",
}


def shown_number(value) -> str:
    """A number as a visitor typed it: a whole number in full (99999999999, never 1e+11), others as short as they
    read (0.05, 5)."""
    return str(value) if isinstance(value, int) else f"{value:g}"


def set_setting(key: str, value, name: str | None = None, most: int | None = None, why: str = "") -> str | None:
    """Set a sidebar setting as if the user had chosen it (a shared URL's settings), within the widget's range (and
    at most `most`, for a bound the widget does not know: `why` says where it comes from); returns what was changed to
    fit, for the page to say (None when the value was taken as it is). name: what the visitor gave it as (a link's
    parameter), said with the setting's own words, the value given and the range allowed."""
    known = methods.PROPOSERS + methods.SHAPED + methods.CROSSING
    if key == "method" and value not in known:
        return f"method = {value!r} is none of {', '.join(known)}; the sidebar keeps its own."
    if key == "verifier" and value not in VERIFIERS:
        return f"{name or key} = {value!r} is none of {', '.join(VERIFIERS)}; the sidebar keeps its own verifier."
    limits = Limits.from_env()
    fitted = in_range(key, value, limits)
    if fitted is None:
        return f"{name or key} = {value!r} is not a number here; the sidebar keeps its value."
    if most is not None and fitted > most:
        fitted = type(fitted)(most)
    st.session_state[key] = st.session_state["_kept_" + key] = fitted
    st.session_state["_touched_" + key] = True
    if fitted == value:
        return None
    low, high = sidebar_ranges(limits)[key]
    high = min(high, most) if most is not None else high
    named = f"{name} ({SETTING_WORDS.get(key, key)})" if name else SETTING_WORDS.get(key, key)
    return (
        f"{named} = {shown_number(value)} is outside what this app allows here, {shown_number(low)} to "
        f"{shown_number(type(fitted)(high))}{why}: using {shown_number(fitted)}."
    )


def set_tree_shape(text: str) -> None:
    """Choose a tree shape as if the user had (a shared URL's tree=2,2,1,1): a preset, or the custom field."""
    if text in TREE_PRESETS:
        set_setting("tree_shape", text)
    else:
        set_setting("tree_shape", TREE_CUSTOM)
        set_setting("tree_custom", text)


def head_tree_toggle(method: str) -> bool:
    """For a feature head that also drafts trees (methods.BRANCHING): whether this run drafts a tree of its top
    tokens (then the tree shape picker follows); False for every other method."""
    if method not in methods.BRANCHING:
        return False
    return st.sidebar.toggle(
        "Draft a tree of the head's top tokens",
        key=keep(HEAD_TREE, False),
        on_change=remember,
        args=(HEAD_TREE,),
        help="EAGLE-2's tree for a head that reads its own predicted feature (each node's children: the head's top-b "
        "tokens from that node's feature), a Cartesian tree for parallel heads (head i's top-b at depth i + 1). "
        "Children are chosen, not sampled, so each is judged one-hot: exact at any temperature.",
    )


def tree_controls(limits: Limits | None = None) -> TreeSpec | None:
    """The tree shape picker (presets or a custom shape, static or dynamic:BUDGET,DEPTH,TOPK); None after showing why
    a typed shape is unreadable, or past this deployment's caps (limits.check_tree: said once, in place of the
    shape's caption, which would only repeat its size)."""
    choice = st.sidebar.selectbox(
        "Tree shape: children per depth",
        [*TREE_PRESETS, TREE_CUSTOM],
        key=keep("tree_shape", TREE_PRESETS[0]),
        on_change=remember,
        args=("tree_shape",),
        help="3,2,1,1: 3 children of the root, 2 under each, then single children; 1,1,1,1 is the chain with K = 4. "
        "dynamic:16,5,4 grows an EAGLE-2 tree each round: for 5 levels it expands the top-4 children of the 4 best "
        "frontier nodes by cumulative draft log-probability, then keeps the 16 best nodes. The tree's depth is its K.",
    )
    text = choice
    if choice == TREE_CUSTOM:
        text = st.sidebar.text_input(
            "Custom tree shape (e.g. 3,2,1,1 or dynamic:16,5,4)", key=keep("tree_custom", "2,2,1,1"),
            on_change=remember, args=("tree_custom",),
        )  # fmt: skip
    try:
        shape = parse_tree_spec(text)
        if shape and limits is not None:
            limits.check_tree(shape)  # public mode's caps: depth <= its K cap, nodes <= its node cap
    except SpecvizError as exc:
        st.sidebar.error(str(exc))
        return None
    if isinstance(shape, DynamicTree):
        st.sidebar.caption(
            f"Dynamic tree: {shape.candidates} nodes scored per round, {shape.budget} kept, depth {shape.depth}."
        )
    elif shape and all(b >= 1 for b in shape):
        st.sidebar.caption(f"Tree {','.join(map(str, shape))}: {tree_size(shape)} nodes, depth {len(shape)}.")
    return shape


def keep(key: str, default):
    """Give a widget key its last value (or default) so that it survives page switches, brought into the widget's
    range (a value from a link or another page can never make a widget raise); returns the key."""
    if key not in st.session_state:
        st.session_state[key] = st.session_state.get("_kept_" + key, default)
    fitted = in_range(key, st.session_state[key], Limits.from_env())
    st.session_state[key] = default if fitted is None else fitted
    st.session_state["_kept_" + key] = st.session_state[key]
    return key


def remember(key: str) -> None:
    st.session_state["_kept_" + key] = st.session_state[key]
    st.session_state["_touched_" + key] = True


def active_sources() -> tuple[str, str, str, str]:
    """(target, draft, device, dtype) of the pair in use: the last one that loaded, else the default."""
    if "active_pair" not in st.session_state:
        st.session_state["active_pair"] = (*default_sources(), "auto", "auto")
    return st.session_state["active_pair"]


def active_pair() -> ModelPair:
    """The loaded pair in use (cached for the whole process); raises SpecvizError with the reason if it cannot load."""
    return cached_pair(*active_sources())


def pair_or_error() -> ModelPair | None:
    """The pair in use, or None after showing why it could not be loaded (the rest of the page still works)."""
    try:
        return active_pair()
    except SpecvizError as exc:
        st.error(f"Could not load the model pair: {exc}")
        return None


def model_sidebar() -> bool:
    """The sidebar of pages that use a pair but no decoding settings: the pair picker and lecture mode."""
    st.sidebar.header("Models")
    pair_picker()
    return st.sidebar.toggle(
        "Lecture mode (large, high contrast)", key=keep("lecture", False), on_change=remember, args=("lecture",)
    )


OPERATOR_DEFAULT = "this server's default pair (set by its operator)"


def operator_words(target: str, draft: str, limits: Limits) -> str:
    """What the first entry loads when the operator pointed SPECVIZ_TARGET / SPECVIZ_DRAFT elsewhere."""
    drafted = sidebar_source(draft, limits) if draft else "no draft model"
    return f"Set with SPECVIZ_TARGET / SPECVIZ_DRAFT: {sidebar_source(target, limits)} ← {drafted}."


def pair_picker() -> None:
    """A pair by name (the catalogue's: pystdlib, smollm2, hub pairs) or a custom one, loaded on request; a failure is
    reported and the previous pair stays."""
    limits = Limits.from_env()
    names = [spec.key for spec in CATALOGUE if limits.offers_pair(spec.key)] + ([] if limits.public else [CUSTOM])
    if st.session_state.get("pair_choice", names[0]) not in names:  # a label kept from before pairs had names
        st.session_state["pair_choice"] = names[0]
    operator_set = default_sources() != (BUNDLED_TARGET, BUNDLED_DRAFT)  # the first entry loads the server's default

    def label(name: str) -> str:
        if name == CUSTOM:
            return name
        return OPERATOR_DEFAULT if operator_set and name == CATALOGUE[0].key else find_pair(name).label

    choice = st.sidebar.selectbox(
        "Model pair",
        names,
        format_func=label,
        key=keep("pair_choice", names[0]),
        on_change=remember,
        args=("pair_choice",),
    )
    spec = None
    if choice == CUSTOM:
        target = st.sidebar.text_input(
            "Target (hub id or path)", key=keep("custom_target", ""), on_change=remember, args=("custom_target",)
        )
        draft = st.sidebar.text_input(
            "Draft (hub id or path; empty: none)",
            key=keep("custom_draft", ""),
            on_change=remember,
            args=("custom_draft",),
        )
    else:
        spec = find_pair(choice)
        bundled = spec.key == CATALOGUE[0].key
        target, draft = default_sources() if bundled else (spec.target_source, spec.draft_source or "")
        st.sidebar.caption(operator_words(target, draft, limits) if bundled and operator_set else spec.note)
    device = st.sidebar.selectbox(
        "Device", ["auto", "cpu", "cuda", "mps"], key=keep("device", "auto"), on_change=remember, args=("device",)
    )
    dtype = st.sidebar.selectbox(
        "Precision", list(DTYPES), key=keep("dtype", "auto"), on_change=remember, args=("dtype",), help=DTYPE_HELP
    )
    precision_timing(target.strip(), draft.strip(), device)
    wanted = (target.strip(), draft.strip(), device, dtype)
    slot = st.sidebar.empty()  # the load button, cleared in the run that loads its pair (nothing left to press)
    if wanted != active_sources() and slot.button("Load this pair", type="primary"):
        try:
            if spec is not None and spec.installed() is not True:  # converted once from its package (smollm2)
                with st.spinner(f"Converting {spec.key} once to {spec.target_source} (about half a minute)…"):
                    spec.sources()
            cached_pair(*wanted)
        except SpecvizError as exc:
            still = sidebar_source(active_sources()[0], Limits.from_env())  # public mode shows no local path
            st.sidebar.error(f"{literal(str(exc))}\n\nStill using {literal(still)}.")
        else:
            st.session_state["active_pair"] = wanted
            slot.empty()
    target_in_use, draft_in_use, device_in_use, dtype_in_use = (sidebar_source(s, limits) for s in active_sources())
    drafted_by = f"draft **{draft_in_use}**" if draft_in_use else "no draft model"
    st.sidebar.caption(f"In use: **{target_in_use}** ← {drafted_by} on {device_in_use}, {dtype_in_use} precision")


@st.cache_data(show_spinner="Timing both precisions on this machine…", max_entries=8)
def _precision_verdict(target: str, draft: str, device: str) -> str:
    """Shared by every session: the same machine and pair give the same answer (up to noise)."""
    return verdict(time_precisions(lambda dtype: cached_pair(target, draft, device, dtype)))


def precision_timing(target: str, draft: str, device: str) -> None:
    """A button under Precision that measures which precision is faster here, and the answer once measured."""
    key = ("precision_verdict", target, draft, device)
    if st.sidebar.button("Which precision is faster here?", key="time_precisions"):
        try:
            st.session_state[key] = _precision_verdict(target, draft, device)
        except SpecvizError as exc:
            st.sidebar.error(f"Could not time the precisions: {exc}")
    if key in st.session_state:
        st.sidebar.caption(st.session_state[key])


def pair_drafts(sources: tuple[str, ...]) -> tuple[bool, bool]:
    """(has a draft model, that draft speaks another tokenizer) for the pair of these sources."""
    target, draft = sources[:2]
    return bool(draft), bool(draft) and draft_crosses(target, draft)


def heads_beside(target: str) -> dict[str, str]:
    """The feature heads found beside this target, by method (none where they cannot be looked up)."""
    try:
        return models.find_heads(target, None)  # looked up through the module: tests replace it
    except SpecvizError:
        return {}


def pair_methods(candidates: tuple[str, ...]) -> tuple[str, ...]:
    """The candidates the pair in use can run: the draft model's methods where it has one (TLI and SLEM instead where
    that draft speaks another tokenizer), a feature head's only where its head sits beside the target, as the race
    offers its lanes."""
    sources = active_sources()
    return methods.with_heads(methods.runnable_with(candidates, *pair_drafts(sources)), heads_beside(sources[0]))


def not_offered_words(asked: str, instead: str) -> str:
    """Why the sidebar does not propose with the head method asked for (a link's, or another pair's choice)."""
    return f"This pair has no {methods.label(asked)} beside its target, so the sidebar proposes with {instead}."


def sidebar_controls(page: str = "") -> Controls:
    """Render the shared sidebar (with `page`'s starting values for untouched settings) and return what it says."""
    apply_page_defaults(page)
    st.sidebar.header("Models")
    pair_picker()
    limits = Limits.from_env()
    ranges = sidebar_ranges(limits)
    st.sidebar.header("Decoding")
    choices = pair_methods(methods.PROPOSERS + (methods.SHAPED if page in TREE_PAGES else ()))
    asked = st.session_state.get(keep("method", methods.DRAFT))
    if asked not in choices:
        # a tree chosen on the rounds page (this page's lanes are chains), a pair with no draft model, or a feature
        # head this pair has none of (a link's, or one chosen on another pair)
        st.session_state["method"] = methods.first_choice(choices)
        if asked in methods.REGISTRY and methods.get(asked).loads_head:
            st.sidebar.caption(not_offered_words(asked, methods.label(st.session_state["method"])))
    method = st.sidebar.radio(
        "Proposer", list(choices), format_func=methods.label, key="method", on_change=remember, args=("method",),
        help=race_lanes.missing_heads_words(heads_beside(active_sources()[0]), "proposers"),
    )  # fmt: skip
    drafts_tree = method in methods.SHAPED or (page in TREE_PAGES and head_tree_toggle(method))
    tree = tree_controls(limits) if drafts_tree else ()
    k = st.sidebar.slider(
        "K: draft tokens per round",
        *ranges["k"],
        key=keep("k", 4),
        on_change=remember,
        args=("k",),
        disabled=drafts_tree,
        help="A tree's K is its depth (the longest run it can accept)." if drafts_tree else None,
    )
    plan = (
        ({} if drafts_tree else schedule_controls(method) | verifier_controls(page))
        | exit_controls(method, ranges["exit_layer"], active_sources()[0], page in EXIT_PAGES)
        | quant_controls(method, page in QUANT_PAGES)
    )
    temperature = st.sidebar.slider(
        "Temperature (0 = greedy)",
        *ranges["temperature"],
        step=0.05,
        key=keep("temperature", 1.0),
        on_change=remember,
        args=("temperature",),
    )
    top_k = st.sidebar.number_input(
        "Top-k (0 = off)", *ranges["top_k"], step=1, key=keep("top_k", 0), on_change=remember, args=("top_k",)
    )
    top_p = st.sidebar.slider(
        "Top-p (1 = off)", *ranges["top_p"], step=0.05, key=keep("top_p", 1.0), on_change=remember, args=("top_p",)
    )
    seed = st.sidebar.number_input(
        "Seed", *ranges["seed"], step=1, key=keep("seed", 0), on_change=remember, args=("seed",)
    )
    max_new = st.sidebar.slider(
        "Max new tokens",
        *ranges["max_new_tokens"],
        key=keep("max_new_tokens", 48),
        on_change=remember,
        args=("max_new_tokens",),
    )
    follow_pair(st.session_state, "draft_vocab", active_sources()[1], recommended_draft_vocab)
    draft_vocab = st.sidebar.number_input(
        "Draft vocabulary (0 = every token)",
        *ranges["draft_vocab"],
        step=256,
        key=keep("draft_vocab", recommended_draft_vocab(active_sources()[1])),
        on_change=remember,
        args=("draft_vocab",),
        help=DRAFT_VOCAB_HELP,
    )
    with st.sidebar.expander("Advanced: the forward pass"):
        forward = st.selectbox(
            "Forward pass", list(FORWARDS), format_func=FORWARD_LABELS.get, key=keep("forward", FORWARD_AUTO),
            on_change=remember, args=("forward",), help=FORWARD_HELP,
        )  # fmt: skip
    note = page_default_note(page, *active_sources()[:2])
    if note:
        st.sidebar.caption(note)
    if limits.public:
        st.sidebar.caption(
            f"Public mode: K ≤ {limits.max_k}, trees of at most {limits.max_tree_nodes} nodes, at most "
            f"{limits.max_new_tokens} new tokens, prompts of at most {limits.max_prompt_tokens:,} tokens (chat "
            "template included)."
        )
    lecture = st.sidebar.toggle(
        "Lecture mode (large, high contrast)", key=keep("lecture", False), on_change=remember, args=("lecture",)
    )
    settings = None
    try:
        sampling = SamplingSettings(float(temperature), int(top_k), float(top_p))
        if tree is not None:  # None: the tree shape was refused, by its syntax or the caps (said already)
            fields = tree_fields(tree) if tree else {"k": int(k)}  # a tree's K is its depth
            settings = RunSettings(
                method=method,
                sampling=sampling,
                max_new_tokens=int(max_new),
                seed=int(seed),
                **fields,
                draft_vocab=int(draft_vocab),
                forward=forward,
                **plan,
            )
    except SpecvizError as exc:
        st.sidebar.error(str(exc))
    return Controls(*active_sources(), settings, lecture)


FORWARD_LABELS = {
    FORWARD_AUTO: "auto (lean where supported)",
    FORWARD_LEAN: "lean (specviz's own)",
    FORWARD_HF: "Hugging Face's (the reference)",
}
FORWARD_HELP = (
    "Whose code runs the models' forward passes. Both compute the same function (tests hold their logits equal). "
    "lean: specviz's own pass for Llama, Qwen2 and Mistral decoders, the weights applied with a few tensor "
    "operations per layer and a preallocated cache, so a step costs about its matrix products. Hugging Face's: "
    "the library's forward, with its per-call work (mask and cache objects, module calls), which tiny models pay "
    "in full: it makes the draft look less cheap than it is. auto: lean where the architecture is supported "
    "(early exit always runs Hugging Face's). Hugging Face's generate() lanes run their own forward either way."
)
SCHEDULE_HELP = (
    "How many tokens each round drafts. constant: K every round. heuristic (transformers' "
    "num_assistant_tokens_schedule): start at K, 2 more after a round whose drafts were all accepted, 1 fewer after "
    "any other, at least 1. confidence (transformers' assistant_confidence_threshold): K is the cap, and the draft "
    "stops after a token it gave less than the threshold. Only K changes, so the output is exactly as lossless."
)
THRESHOLD_HELP = (
    "fixed: stop below the threshold set here. fitted: start at it and refit after every round from the run's "
    "(confidence, accepted?) pairs, the point of the ROC curve with the least FPR + 3·FNR (transformers' rule)."
)


def schedule_controls(method: str) -> dict:
    """The K schedule picker, for the methods whose K is a chain of drafts (the draft model, the EAGLE-1 head):
    RunSettings fields; {} (constant) for the others, whose K means something else."""
    if not methods.get(method).adaptive:
        return {}
    name = st.sidebar.selectbox(
        "K schedule", list(schedule.SCHEDULES), key=keep("k_schedule", schedule.CONSTANT), on_change=remember,
        args=("k_schedule",), help=SCHEDULE_HELP,
    )  # fmt: skip
    if name != schedule.CONFIDENCE:
        return {"k_schedule": name}
    threshold = st.sidebar.slider(
        "Confidence threshold", 0.0, 1.0, step=0.05, key=keep("confidence_threshold", schedule.DEFAULT_THRESHOLD),
        on_change=remember, args=("confidence_threshold",),
    )  # fmt: skip
    fitted = st.sidebar.toggle(
        "Refit the threshold every round", key=keep("fit_threshold", False), on_change=remember,
        args=("fit_threshold",), help=THRESHOLD_HELP,
    )  # fmt: skip
    return {"k_schedule": name, "confidence_threshold": float(threshold), "fit_threshold": bool(fitted)}


MAX_SIDEBAR_EXIT_LAYER = 64  # the run itself refuses an E its target does not have (1..L-1), naming L
EXIT_HELP = (
    "The draft is the target itself cut after its first E layers, then its final norm and LM head (LayerSkip's "
    "self-speculation; transformers' assistant_early_exit=E). A draft step costs about E/L of a target step, and the "
    "draft reads the target's own KV cache. E must be from 1 to L - 1 (the bundled target has L = 10). A target not "
    "trained for early exit, like the bundled one, accepts few of these drafts: the output stays exact."
)


EXIT_PAGES = ("race", "workload")  # pages that may run early exit beside the chosen method: E always shown


def follow_pair(state: MutableMapping, key: str, source: str, default_of: Callable[[str], object]) -> None:
    """A setting whose default is the pair's own (early exit's E by its target, the draft vocabulary by its draft
    model) takes the new pair's default when `source` changes, unless the user chose another value: one nobody set,
    or one still at the previous pair's default (a link's copy of it), follows the pair; one the user set stays."""
    before = state.get("_pair_of_" + key)
    state["_pair_of_" + key] = source
    if before == source:
        return
    chosen = state.get("_touched_" + key) and (before is None or state.get(key) != default_of(before))
    if not chosen:
        state[key] = state["_kept_" + key] = default_of(source)


def exit_controls(method: str, allowed: tuple[int, int], target: str, always: bool = False) -> dict:
    """The exit layer E, for the methods that draft with the target's own first layers (and on the pages whose
    lanes include them whatever the chosen method): RunSettings fields. E starts at the target's own default (the
    catalogue's measured one) and follows the pair when it changes, unless the user chose another E."""
    default = exit_layer_for(target)
    follow_pair(st.session_state, "exit_layer", target, exit_layer_for)
    exit_layer = st.sidebar.number_input(
        "Exit layer E (draft = the target's first E layers)", *allowed, step=1,
        key=keep("exit_layer", default), on_change=remember, args=("exit_layer",), help=EXIT_HELP,
    )  # fmt: skip
    return {"exit_layer": int(exit_layer)}


VERIFIER_LABELS = {
    TOKEN_VERIFIER: "token by token (u against min(1, p/q) at each draft)",
    BLOCK_VERIFIER: "as a block (Sun et al.: each stop u against h, the longest passing prefix kept)",
}
VERIFIER_HELP = (
    "How a chain's drafts are judged. Both keep the output exactly the target's. Token by token stops at the first "
    "draft whose u exceeds min(1, p/q); block verification carries a weight w along the drafts, tests a stop after "
    "each, keeps the longest prefix whose stop passes and draws the next token from max(0, w·p − q): never fewer "
    "drafts kept in expectation (docs/engine.md measures both)."
)
VERIFIER_PAGES = ("rounds",)  # pages that offer block verification (the race and workload lanes judge token by token)


def verifier_controls(page: str) -> dict:
    """How a chain's drafts are judged (a tree's are judged along its walk: no choice there): a RunSettings field."""
    if page not in VERIFIER_PAGES:
        return {}
    verifier = st.sidebar.radio(
        "Verification", VERIFIERS, format_func=VERIFIER_LABELS.get, key=keep("verifier", TOKEN_VERIFIER),
        on_change=remember, args=("verifier",), help=VERIFIER_HELP,
    )  # fmt: skip
    return {"verifier": verifier}


QUANT_PAGES = ("race", "workload")  # pages that may run the quantized copy beside the chosen method: bits shown
QUANT_HELP = (
    "The draft is the target itself with its layers' weights rounded to this many bits (groups of 32 weights share "
    "a minimum and a step; the LM head stays bfloat16) and multiplied by torch's weight-only CPU kernels. Fewer "
    "bytes per step make a draft step cheaper on memory-bound hardware; fewer bits make q drift from p. 4 bits: "
    "smollm2's copy agrees with it on 98% of greedy tokens; 3 bits: 44%; 2 bits: none (measured, docs/speed.md). "
    "3 and 2 bits run at 4-bit speed: they show what fewer bits lose, not what they save."
)


def quant_controls(method: str, always: bool = False) -> dict:
    """The quantized self-draft's bits, for its runs (and on the pages whose lanes include it): RunSettings fields."""
    if not (always or methods.get(method).quantizes):
        return {}
    bits = st.sidebar.selectbox(
        "Draft bits (the target's own copy)", BITS, key=keep("quant_bits", DEFAULT_BITS), on_change=remember,
        args=("quant_bits",), format_func=lambda b: f"{b} bits", help=QUANT_HELP,
    )  # fmt: skip
    return {"quant": QuantOptions(bits=int(bits))}


DRAFT_VOCAB_HELP = (
    "The draft proposes only from its N most frequent tokens: its output layer shrinks N/V-fold, so a draft step "
    "costs less. The output stays exactly the target's (a token the draft cannot propose keeps all of p in the "
    "residual); the price is the rare token the target picks that the draft can no longer guess. The bundled draft "
    "recommends 1024 of its 8192 tokens; 0 uses every token."
)


@st.cache_data
def target_layers(target: str) -> int | None:
    """L, the decoder layers of a local target (its config.json); None where it cannot be read without loading."""
    config = Path(target) / "config.json" if target else None
    if config is None or not config.is_file():
        return None
    try:
        layers = json.loads(config.read_text(encoding="utf-8")).get("num_hidden_layers")
    except (OSError, ValueError):
        return None
    return layers if isinstance(layers, int) else None


def exit_layer_fits(settings: RunSettings | None, target: str) -> str | None:
    """Why early exit cannot run at the sidebar's E on this target (E must be 1..L-1), or None when it can (or L
    is not known before loading: the run then refuses it with the same reason)."""
    layers = target_layers(target)
    if settings is None or layers is None or settings.exit_layer <= layers - 1:
        return None
    return (
        f"Early exit at E = {settings.exit_layer} needs a target of more than {settings.exit_layer} layers; this one "
        f"has L = {layers}: set the exit layer E in the sidebar from 1 to {layers - 1} to race it."
    )


@st.cache_data
def recommended_draft_vocab(draft: str) -> int:
    """The draft vocabulary its token counts recommend (0 without counts: hub models, most local ones)."""
    counts = load_counts(draft) if draft and Path(draft).is_dir() else None
    return counts.recommended if counts else 0


def prompt_box(target: str, key: str = "prompt") -> str:
    """A prompt text area with presets suited to the pair in use (code, structured, prose; for an instruct pair:
    code, English, a translation, a summary). For an instruct target the text is the user's message, wrapped in the
    target's chat template unless the raw toggle is on: the prompt returned is what the model is run on."""
    presets = presets_for(target)
    if st.session_state.get(key) is not None and st.session_state.get("_preset_pair_" + key) != target:
        if st.session_state[key] in [p for spec in CATALOGUE for p in spec.presets.values()]:
            st.session_state[key] = presets["code"]  # another pair's preset: this pair's instead
    st.session_state["_preset_pair_" + key] = target
    if key not in st.session_state:
        st.session_state[key] = st.session_state.get("_kept_" + key, presets["code"])
    cols = st.columns(len(presets) + 1)
    cols[0].write("Presets:")
    for col, (name, text) in zip(cols[1:], presets.items()):
        if col.button(name, key=f"{key}_preset_{name}"):
            st.session_state[key] = text
    chat = uses_chat(target)
    prompt = st.text_area("Your message" if chat else "Prompt", key=key, height=110)
    st.session_state["_kept_" + key] = prompt
    if not chat:
        return prompt
    raw = st.toggle(
        "Raw (no chat template: a text to continue)",
        key=keep("raw_prompt", False),
        on_change=remember,
        args=("raw_prompt",),
        help="An instruct model answers a user's message wrapped in its chat template (a system line, your message, "
        "then the assistant's turn); the run's prompt keeps the template's tokens. Raw sends the text as it is.",
    )
    return prompt if raw or not prompt.strip() else chat_prompt(target, prompt)


def chat_prompt(target: str, prompt: str) -> str:
    """The message wrapped in the active pair's chat template; the message as it is if the pair cannot load (the
    page says why when it runs)."""
    from specviz.engine.decode import chat_wrapped

    try:
        pair = active_pair()
    except SpecvizError:
        return prompt
    if pair.target_name != target:
        return prompt
    try:
        return chat_wrapped(pair, prompt, refuse=False)  # a message holding a control token: the run refuses it
    except SpecvizError:
        return prompt  # a prompt that is not text: the run refuses it with the reason
