"""A small causal LM drafts: a chain sampled token by token, or a tree one pass per depth."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from transformers import PreTrainedModel

from specviz import methods
from specviz.core.dyntree import DynamicTree, GrownSoFar
from specviz.core.sampling import SamplingSettings, logits_to_probs
from specviz.core.settings import FORWARD_HF
from specviz.core.verify import TOKEN, TOP_B, WITHOUT_REPLACEMENT, draw_children, tree_depths, tree_parents
from specviz.engine.forward.kv import CachedModel
from specviz.engine.forward.lean import chosen_forward
from specviz.engine.forward.masks import ancestor_matrix
from specviz.engine.proposers.base import (
    Drafter,
    Proposal,
    Proposer,
    RunContext,
    draft_chain,
    empty_chain,
    empty_tree,
)
from specviz.engine.proposers.trees import dynamic_proposal


@dataclass(frozen=True)
class DraftModelProposer(Proposer):
    """A small causal LM samples K tokens autoregressively from its processed distribution q."""

    method: ClassVar[str] = methods.DRAFT
    adaptive: ClassVar[bool] = True
    model: PreTrainedModel
    vocab_size: int
    sampling: SamplingSettings
    vocab_ids: torch.Tensor | None = (
        None  # (N,) a trimmed draft vocabulary (engine/loading/vocab.py); None = every token
    )
    forward: str = FORWARD_HF  # the draft's forward pass (engine/forward/lean.py)

    @classmethod
    def for_run(cls, context: RunContext) -> DraftModelProposer:
        pair, settings = context.pair, context.settings
        vocab_ids, forward = pair.draft_vocab_ids(settings.draft_vocab), chosen_forward(settings.forward, pair.draft)
        return cls(pair.draft, pair.vocab_size, settings.sampling, vocab_ids, forward)

    def start(self, prompt_ids: list[int], features: torch.Tensor | None = None) -> DraftModelDrafter:
        state = CachedModel(self.model, self.vocab_size, prompt_ids, self.vocab_ids, forward=self.forward)
        return DraftModelDrafter(state, self.sampling)


class DraftModelDrafter(Drafter):
    def __init__(self, state: CachedModel, sampling: SamplingSettings):
        self.state = state
        self.sampling = sampling
        state.prefill()

    def propose(self, k: int, u: torch.Tensor, stop_below: float | None = None) -> Proposal:
        """Draft k tokens; with stop_below (the confidence K schedule), stop after the first whose own draft
        probability is below it (core/schedule.py)."""
        if k < 1:
            return empty_chain(self.state.device)
        first = self.state.forward()[-1]  # (V,) reads the committed tokens this cache has not seen
        return draft_chain(first, k, u, self.sampling, self.state.step, stop_below)

    def advance(self, committed: list[int], n_accepted: int, features: torch.Tensor | None = None) -> None:
        self.state.advance(committed, n_accepted)

    @property
    def cache_length(self) -> int:
        return self.state.length


@dataclass(frozen=True)
class TreeProposer(Proposer):
    """The draft model drafts a tree: one forward pass per depth over all the nodes at that depth (tree attention).

    Children at temperature > 0 are sampled from q without replacement (Sequoia's SpecTree; core/verify.py proves it
    exact); at temperature 0 they are the draft's top-b tokens, judged as one-hot proposals (EAGLE-2 style).
    """

    method: ClassVar[str] = methods.TREE
    chains: ClassVar[bool] = False  # only trees: a chain is the shape 1,1,1,1
    trees: ClassVar[bool] = True
    dynamic_trees: ClassVar[bool] = True
    verifiers: ClassVar[tuple[str, ...]] = (TOKEN,)  # a tree is judged along its walk
    model: PreTrainedModel
    vocab_size: int
    sampling: SamplingSettings
    shape: tuple[int, ...]
    vocab_ids: torch.Tensor | None = (
        None  # (N,) a trimmed draft vocabulary (engine/loading/vocab.py); None = every token
    )
    forward: str = FORWARD_HF  # the draft's forward pass (engine/forward/lean.py)
    dynamic: DynamicTree | None = None  # grow a dynamic (EAGLE-2) tree per round instead of the static shape

    @classmethod
    def for_run(cls, context: RunContext) -> TreeProposer:
        pair, settings = context.pair, context.settings
        vocab_ids, forward = pair.draft_vocab_ids(settings.draft_vocab), chosen_forward(settings.forward, pair.draft)
        return cls(pair.draft, pair.vocab_size, settings.sampling, settings.tree, vocab_ids, forward, settings.dynamic)

    def start(self, prompt_ids: list[int], features: torch.Tensor | None = None) -> TreeDrafter:
        state = CachedModel(self.model, self.vocab_size, prompt_ids, self.vocab_ids, forward=self.forward)
        return TreeDrafter(state, self.sampling, self.shape, self.dynamic)


class TreeDrafter(Drafter):
    def __init__(
        self, state: CachedModel, sampling: SamplingSettings, shape: tuple[int, ...], dynamic: DynamicTree | None
    ):
        self.state = state
        self.sampling = sampling
        self.shape = shape
        self.dynamic = dynamic
        self.how = TOP_B if sampling.greedy else WITHOUT_REPLACEMENT
        state.prefill()

    def propose(self, depth: int, u: torch.Tensor, stop_below: float | None = None) -> Proposal:
        """Draft the run's tree cut to `depth` levels; u (N,) one uniform per node for sampling it (unused for top-b
        children)."""
        if self.dynamic is not None:
            return self.propose_dynamic(depth)
        shape = self.shape[:depth]
        if not shape:
            return empty_tree(self.state.device, self.state.vocab_size)
        parents = tree_parents(shape)
        depths = torch.tensor(tree_depths(parents), dtype=torch.long)  # (N,)
        n = len(parents)
        ancestors = ancestor_matrix(parents)  # (N, N) bool: node i sees node j
        tokens = torch.empty(n, dtype=torch.long, device=self.state.device)
        q_rows = torch.empty(n, self.state.vocab_size, device=self.state.device)  # (N, V)
        logits = self.state.forward()[-1:]  # (1, V): after the committed sequence (the root)
        level = [-1]  # the nodes whose children come next
        for depth, branching in enumerate(shape, start=1):
            children = [i for i, parent in enumerate(parents) if depths[i] == depth]
            for row in range(len(level)):
                mine = children[row * branching : (row + 1) * branching]
                scores = logits[row] if self.how == TOP_B else logits_to_probs(logits[row], self.sampling)  # (V,)
                x, q = draw_children(scores, branching, u[mine[0] : mine[-1] + 1], self.how)
                tokens[mine[0] : mine[-1] + 1], q_rows[mine[0] : mine[-1] + 1] = x, q
            if depth < len(shape):  # the leaves need no draft distribution
                new = torch.tensor(children)
                # the cache holds the nodes of depths < d, numbered 0..children[0]-1 in the same order
                sees = ancestors[new][:, : children[-1] + 1]  # (b_d nodes, earlier nodes + these)
                logits = self.state.forward_tree(tokens[new], depths[new], sees)  # (b_d nodes, V)
            level = children
        return Proposal(tokens, q_rows, parents)

    def propose_dynamic(self, depth: int) -> Proposal:
        """Grow the round's dynamic tree cut to `depth` levels (core/dyntree.py): one draft pass per level over the
        expanded frontier (its top-k nodes), under a tree mask over the cache of the nodes expanded before them, as
        the static tree's passes (a frontier node sees the committed sequence and its ancestors, all expanded)."""
        if min(depth, self.dynamic.depth) < 1:
            return empty_tree(self.state.device, self.state.vocab_size)
        root = self.state.forward()[-1]  # (V,) after the committed sequence (the root)

        def expand(frontier: list[int], so_far: GrownSoFar) -> torch.Tensor:
            tokens = torch.tensor([so_far.tokens[c] for c in frontier], device=self.state.device)  # (m,)
            depths = torch.tensor([so_far.depth(c) for c in frontier], dtype=torch.long)  # (m,)
            return self.state.forward_tree(tokens, depths, so_far.sees(frontier))  # (m, V)

        return dynamic_proposal(root, expand, self.dynamic, depth, self.state.vocab_size)

    def advance(self, committed: list[int], n_accepted: int, features: torch.Tensor | None = None) -> None:
        self.state.advance(committed, 0)  # drop every tree node; the committed path is re-read next round

    @property
    def cache_length(self) -> int:
        return self.state.length
