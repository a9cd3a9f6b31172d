"""Who proposes the draft tokens, behind one small interface.

A `Proposer` is shared and read-only (it may hold a cached model); `start` gives one run its own `Drafter`, which owns
that run's state (a KV cache, or the token history for n-gram lookup).

One module per method family, found here by looking (`PROPOSER_CLASSES`: every `Proposer` subclass in the package's
modules whose `method` is a registry name), so a new method's proposer needs no line in this file. The shared names are
re-exported here, so `specviz.engine.proposers.X` works for them; a method's own classes are imported from its module.
"""

from __future__ import annotations

import pkgutil
from importlib import import_module
from typing import TYPE_CHECKING

from specviz import methods
from specviz.engine.forward.masks import additive_mask, ancestor_matrix
from specviz.engine.proposers.base import (
    Drafter,
    Proposal,
    Proposer,
    RunContext,
    draft_confidence,
    empty_chain,
    empty_tree,
    tree_shape,
)
from specviz.engine.proposers.crossing import SlemProposer, TliProposer
from specviz.engine.proposers.draft_model import DraftModelDrafter, DraftModelProposer, TreeDrafter, TreeProposer
from specviz.engine.proposers.eagle import EagleDrafter, EagleProposer
from specviz.engine.proposers.early_exit import EarlyExitDrafter, EarlyExitProposer
from specviz.engine.proposers.ngram import NgramDrafter, NgramProposer, ngram_lookup
from specviz.engine.proposers.rows import cat_rows, rows_of, take_rows
from specviz.engine.proposers.suffix import SuffixDrafter, SuffixProposer
from specviz.engine.proposers.trees import dynamic_proposal, grow_top_b_tree

if TYPE_CHECKING:
    from specviz.core.settings import RunSettings
    from specviz.engine.loading.models import ModelPair


def _proposers_here() -> tuple[type[Proposer], ...]:
    """Every proposer class defined in this package's modules (a `Proposer` subclass whose `method` is a registry
    name), in the registry's order."""
    found: dict[str, type[Proposer]] = {}
    for info in pkgutil.iter_modules(__path__):
        module = import_module(f"{__name__}.{info.name}")
        for obj in vars(module).values():
            defined_here = isinstance(obj, type) and obj.__module__ == module.__name__
            if defined_here and issubclass(obj, Proposer) and obj.method in methods.REGISTRY:
                found[obj.method] = obj
    return tuple(found[name] for name in methods.REGISTRY if name in found)


PROPOSER_CLASSES = _proposers_here()


def proposer_class(method: str) -> type[Proposer] | None:
    """The class that implements a registry method in this engine; None for plain decoding."""
    return next((cls for cls in PROPOSER_CLASSES if cls.method == method), None)


def draft_cap_note(pair: ModelPair, settings: RunSettings) -> str | None:
    """Why a run drafts fewer than K tokens a round whatever the text (its proposer's `cap_note`); None when it does
    not, and for plain decoding."""
    cls = proposer_class(settings.method)
    return cls.cap_note(pair, settings) if cls else None


def proposers_table() -> str:
    """The Markdown table of every in-process method (docs/contributing.md carries it; tests/test_docs.py checks it
    is this one): its proposer class and module, what a drafted token costs, its trees, its head directory, vLLM's
    name for it."""
    rows = [
        "| method | proposer | module | a drafted token costs | trees | head beside the target | vLLM method |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name in methods.ENGINE_METHODS:
        cls, m = proposer_class(name), methods.get(name)
        if cls is None:
            continue
        trees = "only" if not cls.chains else "also" if cls.trees else ""
        head = f"`{m.head.beside}/`" if m.head else ""
        module = cls.__module__.removeprefix("specviz.engine.proposers.")
        rows.append(
            f"| `{name}` | `{cls.__name__}` | `{module}.py` | {m.draft_cost} | {trees} | {head} | "
            f"{f'`{m.vllm_method}`' if m.vllm_method else ''} |"
        )
    return "\n".join(rows)


__all__ = [
    "Proposal",
    "Drafter",
    "Proposer",
    "RunContext",
    "draft_confidence",
    "tree_shape",
    "empty_chain",
    "empty_tree",
    "cat_rows",
    "rows_of",
    "take_rows",
    "additive_mask",
    "ancestor_matrix",
    "grow_top_b_tree",
    "dynamic_proposal",
    "DraftModelProposer",
    "DraftModelDrafter",
    "TreeProposer",
    "TreeDrafter",
    "NgramProposer",
    "NgramDrafter",
    "ngram_lookup",
    "EagleProposer",
    "EagleDrafter",
    "draft_cap_note",
    "SuffixProposer",
    "SuffixDrafter",
    "EarlyExitProposer",
    "EarlyExitDrafter",
    "TliProposer",
    "SlemProposer",
    "PROPOSER_CLASSES",
    "proposer_class",
]
