"""EAGLE-1 and the drafter every chained feature head shares: chains, static and dynamic trees."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import torch

from specviz import methods
from specviz.core.dyntree import DynamicTree, GrownSoFar
from specviz.core.sampling import SamplingSettings
from specviz.core.settings import RunSettings
from specviz.core.verify import tree_parents
from specviz.engine.forward.masks import additive_mask, after_cache, ancestor_matrix
from specviz.engine.proposers.base import (
    Drafter,
    Proposal,
    Proposer,
    RunContext,
    draft_chain,
    empty_chain,
    empty_tree,
    tree_shape,
)
from specviz.engine.proposers.rows import cat_rows, rows_of, take_rows
from specviz.engine.proposers.runners import HeadRunner, HfEagleRunner, chosen_runner
from specviz.engine.proposers.trees import dynamic_proposal, grow_top_b_tree

if TYPE_CHECKING:
    from specviz.engine.loading.models import ModelPair


@dataclass(frozen=True)
class EagleProposer(Proposer):
    """EAGLE-1: a one-layer head drafts from the target's own features (engine/heads/eagle.py). The first draft of a
    round reads the target's real feature of the last committed row; each later one the head's own predicted feature. q
    = the head's processed distribution (temperature, top-k, top-p as the target's): one-hot of its argmax when greedy,
    what the draft is sampled from otherwise (vLLM's "probabilistic" draft sampling)."""

    method: ClassVar[str] = methods.EAGLE
    hidden_layers = (-1,)  # the target's last hidden state, after its final norm: f_t
    trees: ClassVar[bool] = True  # EAGLE-2-style trees of its top-b tokens per node
    dynamic_trees: ClassVar[bool] = True
    adaptive: ClassVar[bool] = True
    runner: HeadRunner  # the head on the run's forward, chosen once (proposers/runners.py)
    vocab_size: int
    sampling: SamplingSettings
    shape: tuple[int, ...] = ()  # a tree's children per depth (EagleDrafter.propose_tree); empty: a chain
    dynamic: DynamicTree | None = None  # a dynamic (EAGLE-2) tree per round (EagleDrafter.propose_dynamic)

    @classmethod
    def for_run(cls, context: RunContext) -> EagleProposer:
        pair, settings = context.pair, context.settings
        target = pair.target
        reference = HfEagleRunner(
            pair.load_head_for(cls.method), target.get_input_embeddings(), target.get_output_embeddings()
        )
        shape, dynamic = tree_shape(settings), settings.dynamic if settings.is_tree else None
        runner = chosen_runner(reference, target, settings.forward)
        return cls(runner, pair.vocab_size, settings.sampling, shape, dynamic)

    @classmethod
    def cost_probe(cls, pair: ModelPair, ids: list[int], settings: RunSettings):
        """One head step over the prompt, to be timed (engine/costs.py): its layer and an LM head."""
        from specviz.engine.proposers.probes import HeadStepProbe

        return HeadStepProbe(cls, pair, ids, settings)

    def start(self, prompt_ids: list[int], features: torch.Tensor | None = None) -> EagleDrafter:
        return EagleDrafter(self, prompt_ids, features)

    # What EagleDrafter asks of a feature-head proposer: a cache, read committed pairs, draft logits, one step on its
    # own state, one tree depth's nodes.

    def new_cache(self):
        """One run's head cache: a LeanCache for the lean step, the module's DynamicCache otherwise."""
        return self.runner.new_cache()

    def read(self, following: torch.Tensor, features: torch.Tensor, cache) -> torch.Tensor:
        """Pairs (f_t, x_{t+1}) of newly committed rows, following (n,) and features (layers, n, H) -> the state
        after the last: g (H,), the predicted next feature."""
        return self.head_pass(following, features[0], cache)[-1]

    def logits(self, g: torch.Tensor) -> torch.Tensor:
        """(..., V) the target's LM head on the feature(s) g (..., H) (through the head's output norm, if any)."""
        return self.runner.logits(g, self.vocab_size)

    def step(self, token: torch.Tensor, g: torch.Tensor, cache) -> torch.Tensor:
        """The pair (g, x) predicts the next feature: the head reads its own output."""
        return self.head_pass(token.view(1), g.view(1, -1), cache)[-1]  # (H,)

    def step_nodes(self, tokens: torch.Tensor, g: torch.Tensor, cache, positions, mask) -> torch.Tensor:
        """Tree nodes of one depth in one pass: tokens (m,) with their parents' features g (m, H), at positions
        (1, m) under the additive mask (1, 1, m, cached + m) -> (m, H) each node's predicted next feature."""
        return self.head_pass(tokens, g, cache, positions, mask)

    def head_pass(self, tokens: torch.Tensor, states: torch.Tensor, cache, positions=None, mask=None) -> torch.Tensor:
        """The head over pairs: tokens (n,) x_{t+1} with states (n, H) -> (n, H) its outputs, on the lean step or
        through the head's own modules (the reference)."""
        return self.runner.run(tokens, states, cache, positions, mask)


class EagleDrafter(Drafter):
    """One run's feature-head state (EAGLE-1 or EAGLE-3): the head's own KV cache over the pairs (state_t, x_{t+1}).

    Invariant after start and after each advance: the cache holds one pair per target feature row (rows 0..n-1 for
    the committed x_0..x_n), and `last` is the head's state after the last of them (EAGLE-1: its predicted feature
    g_n; EAGLE-3: its normed and pre-norm outputs), whose logits give the first draft. Drafted pairs are appended
    during `propose` (a chain's, or a tree's nodes: propose_tree) and cropped at `advance`, which then reads the newly
    committed rows with the target's real features (as EAGLE and vLLM do; after a tree round, the accepted path's
    rows from the target's tree pass). The proposer says how to read, step and draw logits (EagleProposer.read)."""

    def __init__(self, proposer, prompt_ids: list[int], features: torch.Tensor | None):
        self.proposer = proposer
        self.cache = proposer.new_cache()
        self.tokens = list(prompt_ids)  # the committed sequence
        self.last = None  # the head's state after the last committed pair; None before any feature
        self.fed_extra = 0  # drafted pairs in the cache, dropped at advance
        self._read(features)

    def _read(self, features: torch.Tensor | None) -> None:
        """Read the pairs of newly committed feature rows; features (layers, rows, H)."""
        n, start = 0 if features is None else features.shape[1], self.cache.get_seq_length()
        if features is None or n == 0:
            return
        following = torch.tensor(self.tokens[start + 1 : start + 1 + n], device=features.device)  # (n,) x_{t+1}
        self.last = self.proposer.read(following, features, self.cache)

    def propose(self, k: int, u: torch.Tensor, stop_below: float | None = None) -> Proposal:
        """Draft k tokens; with stop_below (the confidence K schedule), stop after the first whose own draft
        probability is below it (core/schedule.py)."""
        if self.proposer.dynamic is not None:
            return self.propose_dynamic(k, u.device)
        if self.proposer.shape:
            return self.propose_tree(k, u.device)
        if k < 1 or self.last is None:  # a one-token prompt: no feature yet, the target decodes one token
            return empty_chain(u.device)
        p, state = self.proposer, self.last

        def step(x: torch.Tensor) -> torch.Tensor:
            """The head reads its own output with the drafted token: the next logits (V,) over the target's
            vocabulary."""
            nonlocal state
            state = p.step(x, state, self.cache)
            self.fed_extra += 1
            return p.logits(state)

        return draft_chain(p.logits(state), k, u, p.sampling, step, stop_below)

    def propose_tree(self, depth: int, device: torch.device) -> Proposal:
        """The run's tree cut to `depth` levels, EAGLE-2's way with a static shape: each node's children are the
        head's top-b tokens from that node's own predicted feature (its path's features, not the root's).

        One head pass per depth over every node of that depth (as TreeDrafter does with the draft model): the nodes
        join the head's cache in node order, and a tree mask lets each see the committed pairs and its ancestors'
        pairs only, at position cached - 1 + depth, the position it would have in its path's chain. Chosen over one
        pass per path because it costs depth passes, not one per leaf, and needs nothing but the mask the target's
        tree pass already uses; a (1, 1, ..., 1) tree is the chain, pass for pass. The leaves need no pass."""
        p = self.proposer
        shape = p.shape[:depth]
        if not shape or self.last is None:  # a one-token prompt: no feature yet, the target decodes one token
            return empty_tree(device, p.vocab_size)
        parents = tree_parents(shape)
        ancestors = ancestor_matrix(parents)  # (N, N) bool
        committed = self.cache.get_seq_length()  # pairs of the committed rows
        state = rows_of(self.last)  # the root's state, (1, H) (or a tuple of such)

        def expand(depth: int, nodes: list[int], tokens: torch.Tensor, state_rows: torch.Tensor):
            nonlocal state
            state = take_rows(state, state_rows)  # (m, H) each node's parent's state
            sees = ancestors[nodes][:, : nodes[-1] + 1].to(device)  # (m, earlier nodes + these) the nodes' ancestry
            allowed = after_cache(sees, committed)  # (m, cached + m)
            positions = torch.full((1, len(nodes)), committed + depth - 1, device=device)  # (1, m)
            mask = additive_mask(allowed, p.runner.dtype)  # (1, 1, m, cached + m)
            state = p.step_nodes(tokens[nodes], state, self.cache, positions, mask)
            self.fed_extra += len(nodes)
            return p.logits(state)  # (m, V) the logits for each node's children

        return grow_top_b_tree(shape, p.logits(state), expand, p.vocab_size)

    def propose_dynamic(self, depth: int, device: torch.device) -> Proposal:
        """The round's dynamic tree cut to `depth` levels (core/dyntree.py), EAGLE-2's own way: one head pass per
        level over the expanded frontier, each node reading its parent's state with its own token, under a tree mask
        over the committed pairs and the expanded nodes' pairs (its ancestors), at position cached - 1 + depth (as
        propose_tree). The head's logits rank the children by their log-softmax."""
        p = self.proposer
        if min(depth, p.dynamic.depth) < 1 or self.last is None:  # a one-token prompt: no feature yet
            return empty_tree(device, p.vocab_size)
        committed = self.cache.get_seq_length()  # pairs of the committed rows
        state_of = {-1: rows_of(self.last)}  # candidate -> its state, (1, H) (or a tuple of such); -1 = the root

        def expand(frontier: list[int], so_far: GrownSoFar) -> torch.Tensor:
            parent_state = cat_rows([state_of[so_far.parents[c]] for c in frontier])  # (m, H) each parent's state
            tokens = torch.tensor([so_far.tokens[c] for c in frontier], device=device)  # (m,)
            sees = so_far.sees(frontier).to(device)  # (m, expanded + m)
            allowed = after_cache(sees, committed)  # (m, cached + m)
            positions = torch.full((1, len(frontier)), committed + so_far.depth(frontier[0]) - 1, device=device)
            mask = additive_mask(allowed, p.runner.dtype)  # (1, 1, m, cached + m)
            state = p.step_nodes(tokens, parent_state, self.cache, positions, mask)
            self.fed_extra += len(frontier)
            for row, c in enumerate(frontier):
                state_of[c] = take_rows(state, torch.tensor([row], device=device))
            return p.logits(state)  # (m, V)

        return dynamic_proposal(p.logits(self.last), expand, p.dynamic, depth, p.vocab_size)

    def advance(self, committed: list[int], n_accepted: int, features: torch.Tensor | None = None) -> None:
        if self.fed_extra:
            self.cache.crop(-self.fed_extra)  # drop every drafted pair: accepted rows are re-read with real features
        self.fed_extra = 0
        self.tokens.extend(committed)
        self._read(features)

    @property
    def cache_length(self) -> int:
        return self.cache.get_seq_length()
