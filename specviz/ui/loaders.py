"""Models cached once per process and shared, read-only, by every browser session."""

from __future__ import annotations

import gc
import os

import streamlit as st

from specviz.engine.forward.threads import threads_from_environment
from specviz.engine.loading.models import BUNDLED_DRAFT, BUNDLED_TARGET, ModelPair, load_pair, load_tokenizer
from specviz.errors import SpecvizError


def default_sources() -> tuple[str, str]:
    """The bundled pair, unless the operator points SPECVIZ_TARGET / SPECVIZ_DRAFT elsewhere."""
    return os.environ.get("SPECVIZ_TARGET", BUNDLED_TARGET), os.environ.get("SPECVIZ_DRAFT", BUNDLED_DRAFT)


@st.cache_resource(show_spinner="Loading the model pair…", max_entries=3)
def cached_pair(target: str, draft: str | None, device: str = "auto", dtype: str = "auto") -> ModelPair:
    """draft "" or None: the target alone (a pair with no draft model, such as a hub target given alone)."""
    pair = load_pair(
        target, draft or None, device=device, dtype=dtype, threads=threads_from_environment(), cross_vocab=True
    )
    settle_heap()
    return pair


def settle_heap() -> None:
    """After a cached model load: collect once, then move every object alive now (the models' modules, parameters and
    tokenizer tables, kept for the process's life) out of the collector's reach (gc.freeze), so a collection during a
    rerun no longer walks them; Streamlit's own collection after every rerun is off (.streamlit/config.toml,
    runner.postScriptGC = false) for the same reason: Python's generational collector still runs as objects are
    made."""
    gc.collect()
    gc.freeze()


@st.cache_data(show_spinner=False, max_entries=16)
def draft_crosses(target: str, draft: str) -> bool:
    """Whether the draft has a tokenizer of its own (so the sidebar offers TLI and SLEM instead of the draft-model
    methods): its vocabulary compared with the target's, no model loaded."""
    if not draft:
        return False
    try:
        return load_tokenizer(draft).get_vocab() != load_tokenizer(target).get_vocab()
    except SpecvizError:
        return False
