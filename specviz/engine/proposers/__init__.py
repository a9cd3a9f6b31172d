"""Who proposes the draft tokens, behind one small interface.

A `Proposer` is shared and read-only (it may hold a cached model); `start` gives one run its own `Drafter`, which owns
that run's state (a KV cache, or the token history for n-gram lookup).

One module per method family; this package's names are re-exported here, so `specviz.engine.proposers.X` works.
"""

from __future__ import annotations

from specviz import methods
from specviz.engine.masks import additive_mask, ancestor_matrix
from specviz.engine.proposers.base import (
    Drafter,
    Proposal,
    Proposer,
    draft_confidence,
    empty_chain,
    empty_tree,
    tree_shape,
)
from specviz.engine.proposers.crossing import CrossingProposer, SlemProposer
from specviz.engine.proposers.draft_model import DraftModelDrafter, DraftModelProposer, TreeDrafter, TreeProposer
from specviz.engine.proposers.eagle import EagleDrafter, EagleProposer
from specviz.engine.proposers.eagle3 import Eagle3Proposer
from specviz.engine.proposers.early_exit import EarlyExitDrafter, EarlyExitProposer
from specviz.engine.proposers.medusa import MedusaDrafter, MedusaProposer, draft_cap_note
from specviz.engine.proposers.mtp import MtpProposer
from specviz.engine.proposers.ngram import NgramDrafter, NgramProposer, ngram_lookup
from specviz.engine.proposers.rows import cat_rows, rows_of, take_rows
from specviz.engine.proposers.suffix import SuffixDrafter, SuffixProposer
from specviz.engine.proposers.trees import dynamic_proposal, grow_top_b_tree

PROPOSER_CLASSES = (
    DraftModelProposer,
    NgramProposer,
    TreeProposer,
    EagleProposer,
    MtpProposer,
    Eagle3Proposer,
    MedusaProposer,
    SuffixProposer,
    EarlyExitProposer,
    CrossingProposer,
    SlemProposer,
)


def proposer_class(method: str) -> type[Proposer] | None:
    """The class that implements a registry method in this engine; None for plain decoding."""
    return next((cls for cls in PROPOSER_CLASSES if cls.method == method), None)


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
        trees = "only" if m.shaped else "also" if m.branches else ""
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
    "Eagle3Proposer",
    "MtpProposer",
    "MedusaProposer",
    "MedusaDrafter",
    "draft_cap_note",
    "SuffixProposer",
    "SuffixDrafter",
    "EarlyExitProposer",
    "EarlyExitDrafter",
    "CrossingProposer",
    "SlemProposer",
    "PROPOSER_CLASSES",
    "proposer_class",
]
