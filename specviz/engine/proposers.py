"""Who proposes the draft tokens, behind one small interface.

A `Proposer` is shared and read-only (it may hold a cached model); `start` gives one run its own `Drafter`, which owns
that run's state (a KV cache, or the token history for n-gram lookup).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, ClassVar, Protocol

import numpy as np
import torch
from numpy.lib.stride_tricks import sliding_window_view
from transformers import PreTrainedModel

from specviz import methods
from specviz.core.dyntree import DynamicTree, GrownSoFar, grow_dynamic_tree
from specviz.core.lab.exits import EXIT_EXACT, ExitVariant
from specviz.core.sampling import SamplingSettings, draw, logits_to_probs, one_hot, sample
from specviz.core.settings import FORWARD_HF, RunSettings
from specviz.core.suffix_tree import SuffixCache, SuffixDraft, SuffixMemory, SuffixOptions
from specviz.core.trace import SUFFIX_REQUEST, SuffixMatch
from specviz.core.verify import TOP_B, WITHOUT_REPLACEMENT, draw_children, tree_depths, tree_parents
from specviz.engine.crossing import CrossingProposer, SlemProposer
from specviz.engine.early_exit import SplitTarget, check_exit_layer
from specviz.engine.kv import CachedModel
from specviz.engine.lean import chosen_forward
from specviz.engine.lean_heads import LeanHead, lean_step
from specviz.engine.proposal import Proposal, empty_chain  # noqa: F401 (the drafter contract, read from here)
from specviz.errors import SettingsError

if TYPE_CHECKING:
    from specviz.engine.eagle3 import Eagle3Head
    from specviz.engine.heads import EagleHead
    from specviz.engine.medusa import MedusaHeads
    from specviz.engine.models import ModelPair


class Drafter(Protocol):
    """One run's proposer state."""

    def propose(self, depth: int, u: torch.Tensor) -> Proposal:
        """Propose at most `depth` tokens deep after the committed sequence (0: an empty proposal); u holds one
        uniform per draft slot of the round (RunSettings.draft_slots), for sampling them. The drafter of a method
        that takes adaptive K schedules (methods.Method.adaptive) also takes `stop_below=threshold`: stop after the
        first draft whose own probability is below it, and report each draft's in Proposal.confidence."""

    def advance(self, committed: list[int], n_accepted: int, features: torch.Tensor | None = None) -> None:
        """Learn what the round committed (its first n_accepted tokens are accepted drafts) and roll back.
        features (layers, rows, H): the target's hidden states for the rows it committed, if hidden_layers asked."""

    @property
    def cache_length(self) -> int:
        """Tokens held in the drafter's KV cache (0 when it has none)."""


class Proposer(Protocol):
    """Shared, read-only; `method` is the registry name (specviz.methods) it implements.

    A proposer that reads the target's features names the layers in `hidden_layers` (indices into transformers'
    `hidden_states`: 0 = the embeddings, L = the last layer's output, after the final norm; a field instead of a
    class attribute where the head's config names them, as EAGLE-3's does); the loop then hands its drafter the target's
    hidden states for the committed tokens the target's cache holds, in order: the prompt's at `start`, then each
    round's at `advance`. This is transformers' `CandidateGenerator.requires_model_outputs`, made explicit.
    """

    method: ClassVar[str]
    hidden_layers: ClassVar[tuple[int, ...]]

    @classmethod
    def for_run(cls, pair: ModelPair, settings: RunSettings) -> Proposer:
        """The proposer for a run with these settings on this pair."""

    def start(self, prompt_ids: list[int], features: torch.Tensor | None = None) -> Drafter:
        """A fresh drafter for one run over this prompt; features (layers, rows, H) of the prompt's tokens that the
        target's prefill read, when the drafter asks for them."""


@dataclass(frozen=True)
class DraftModelProposer:
    """A small causal LM samples K tokens autoregressively from its processed distribution q."""

    method: ClassVar[str] = methods.DRAFT
    hidden_layers: ClassVar[tuple[int, ...]] = ()  # reads none of the target's features
    model: PreTrainedModel
    vocab_size: int
    sampling: SamplingSettings
    kept: torch.Tensor | None = None  # (N,) a trimmed draft vocabulary (engine/vocab.py); None = every token
    forward: str = FORWARD_HF  # the draft's forward pass (engine/lean.py)

    @classmethod
    def for_run(cls, pair: ModelPair, settings: RunSettings) -> DraftModelProposer:
        kept, forward = pair.draft_kept(settings.draft_vocab), chosen_forward(settings.forward, pair.draft)
        return cls(pair.draft, pair.vocab_size, settings.sampling, kept, forward)

    def start(self, prompt_ids: list[int], features: torch.Tensor | None = None) -> DraftModelDrafter:
        state = CachedModel(self.model, self.vocab_size, prompt_ids, self.kept, forward=self.forward)
        return DraftModelDrafter(state, self.sampling)


class DraftModelDrafter:
    def __init__(self, state: CachedModel, sampling: SamplingSettings):
        self.state = state
        self.sampling = sampling
        state.prefill()

    def propose(self, k: int, u: torch.Tensor, stop_below: float | None = None) -> Proposal:
        """Draft k tokens; with stop_below (the confidence K schedule), stop after the first whose own draft
        probability is below it (core/schedule.py)."""
        if k < 1:
            return empty_chain(self.state.device)
        logits = self.state.forward()[-1]  # (V,) reads the committed tokens this cache has not seen
        tokens, dists, confidence = [], [], []
        for i in range(k):
            x_i, q_i = draw(logits, self.sampling, u[i])  # q_i (V,): exactly what x_i is drawn from
            tokens.append(x_i)
            dists.append(q_i)
            if stop_below is not None:
                confidence.append(draft_confidence(logits, q_i, x_i, self.sampling))
                if confidence[-1] < stop_below:
                    break
            if i < k - 1:
                logits = self.state.step(x_i)
        return Proposal(torch.stack(tokens), torch.stack(dists), confidence=tuple(confidence))  # (n,), (n, V)

    def advance(self, committed: list[int], n_accepted: int, features: torch.Tensor | None = None) -> None:
        self.state.advance(committed, n_accepted)

    @property
    def cache_length(self) -> int:
        return self.state.length


@dataclass(frozen=True)
class NgramProposer:
    """Prompt lookup: find the last n tokens earlier in prompt + output and propose what followed them (one-hot q)."""

    method: ClassVar[str] = methods.NGRAM
    hidden_layers: ClassVar[tuple[int, ...]] = ()  # reads none of the target's features
    device: torch.device
    min_n: int = 1
    max_n: int = 3

    @classmethod
    def for_run(cls, pair: ModelPair, settings: RunSettings) -> NgramProposer:
        return cls(pair.device, settings.ngram_min, settings.ngram_max)

    def start(self, prompt_ids: list[int], features: torch.Tensor | None = None) -> NgramDrafter:
        return NgramDrafter(list(prompt_ids), self.device, self.min_n, self.max_n)


class NgramDrafter:
    def __init__(self, history: list[int], device: torch.device, min_n: int, max_n: int):
        self.history = history
        self.device = device
        self.min_n, self.max_n = min_n, max_n

    def propose(self, k: int, u: torch.Tensor) -> Proposal:
        tokens = ngram_lookup(self.history, k, self.min_n, self.max_n)
        return Proposal(torch.tensor(tokens, dtype=torch.long, device=self.device), None)

    def advance(self, committed: list[int], n_accepted: int, features: torch.Tensor | None = None) -> None:
        self.history.extend(committed)

    @property
    def cache_length(self) -> int:
        return 0


def ngram_lookup(history: list[int], k: int, min_n: int, max_n: int) -> list[int]:
    """Up to k tokens that followed an earlier occurrence of the longest matching suffix (n from max_n to min_n).

    Prefers the most recent occurrence that has k tokens after it, else the earliest (the longest continuation).
    """
    seq = np.asarray(history, dtype=np.int64)
    for n in range(max_n, min_n - 1, -1):
        if k < 1 or len(seq) <= n:
            continue
        windows = sliding_window_view(seq[:-1], n)  # (L-n, n): every earlier n-gram that has a successor
        starts = np.flatnonzero((windows == seq[-n:]).all(axis=1)) + n  # where each match's continuation begins
        if starts.size:
            full = starts[starts + k <= len(seq)]
            begin = int(full[-1]) if full.size else int(starts[0])
            return seq[begin : begin + k].tolist()
    return []


@dataclass(frozen=True)
class TreeProposer:
    """The draft model drafts a tree: one forward pass per depth over all the nodes at that depth (tree attention).

    Children at temperature > 0 are sampled from q without replacement (Sequoia's SpecTree; core/verify.py proves it
    exact); at temperature 0 they are the draft's top-b tokens, judged as one-hot proposals (EAGLE-2 style).
    """

    method: ClassVar[str] = methods.TREE
    hidden_layers: ClassVar[tuple[int, ...]] = ()  # reads none of the target's features
    model: PreTrainedModel
    vocab_size: int
    sampling: SamplingSettings
    shape: tuple[int, ...]
    kept: torch.Tensor | None = None  # (N,) a trimmed draft vocabulary (engine/vocab.py); None = every token
    forward: str = FORWARD_HF  # the draft's forward pass (engine/lean.py)
    dynamic: DynamicTree | None = None  # grow a dynamic (EAGLE-2) tree per round instead of the static shape

    @classmethod
    def for_run(cls, pair: ModelPair, settings: RunSettings) -> TreeProposer:
        kept, forward = pair.draft_kept(settings.draft_vocab), chosen_forward(settings.forward, pair.draft)
        return cls(pair.draft, pair.vocab_size, settings.sampling, settings.tree, kept, forward, settings.dynamic)

    def start(self, prompt_ids: list[int], features: torch.Tensor | None = None) -> TreeDrafter:
        state = CachedModel(self.model, self.vocab_size, prompt_ids, self.kept, forward=self.forward)
        return TreeDrafter(state, self.sampling, self.shape, self.dynamic)


class TreeDrafter:
    def __init__(
        self, state: CachedModel, sampling: SamplingSettings, shape: tuple[int, ...], dynamic: DynamicTree | None
    ):
        self.state = state
        self.sampling = sampling
        self.shape = shape
        self.dynamic = dynamic
        self.how = TOP_B if sampling.greedy else WITHOUT_REPLACEMENT
        state.prefill()

    def propose(self, depth: int, u: torch.Tensor) -> Proposal:
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


@dataclass(frozen=True)
class EagleProposer:
    """EAGLE-1: a one-layer head drafts from the target's own features (engine/heads.py). The first draft of a round
    reads the target's real feature of the last committed row; each later one the head's own predicted feature.
    q = the head's processed distribution (temperature, top-k, top-p as the target's): one-hot of its argmax when
    greedy, what the draft is sampled from otherwise (vLLM's "probabilistic" draft sampling)."""

    method: ClassVar[str] = methods.EAGLE
    hidden_layers: ClassVar[tuple[int, ...]] = (-1,)  # the target's last hidden state, after its final norm: f_t
    head: EagleHead
    embed: torch.nn.Module  # the target's embedding and LM head, shared
    lm_head: torch.nn.Module
    vocab_size: int
    sampling: SamplingSettings
    shape: tuple[int, ...] = ()  # a tree's children per depth (EagleDrafter.propose_tree); empty: a chain
    dynamic: DynamicTree | None = None  # a dynamic (EAGLE-2) tree per round (EagleDrafter.propose_dynamic)
    lean: LeanHead | None = None  # the head's step on the lean forward (engine/lean_heads.py); None: its own modules

    @classmethod
    def for_run(cls, pair: ModelPair, settings: RunSettings) -> EagleProposer:
        target = pair.target
        head = pair.eagle_head
        embed, lm_head = target.get_input_embeddings(), target.get_output_embeddings()
        shape, dynamic = tree_shape(settings), settings.dynamic if settings.is_tree else None
        lean = lean_step(head, target, settings.forward)
        return cls(head, embed, lm_head, pair.vocab_size, settings.sampling, shape, dynamic, lean)

    def start(self, prompt_ids: list[int], features: torch.Tensor | None = None) -> EagleDrafter:
        return EagleDrafter(self, prompt_ids, features)

    # What EagleDrafter asks of a feature-head proposer: a cache, read committed pairs, draft logits, one step on its
    # own state, one tree depth's nodes.

    def new_cache(self):
        """One run's head cache: a LeanCache for the lean step, the module's DynamicCache otherwise."""
        return self.lean.new_cache() if self.lean is not None else self.head.new_cache()

    def read(self, following: torch.Tensor, features: torch.Tensor, cache) -> torch.Tensor:
        """Pairs (f_t, x_{t+1}) of newly committed rows, following (n,) and features (layers, n, H) -> the state
        after the last: g (H,), the predicted next feature."""
        return self.head_pass(following, features[0], cache)[-1]

    def logits(self, g: torch.Tensor) -> torch.Tensor:
        """(..., V) the target's LM head on the head's feature(s) g (..., H)."""
        if self.lean is not None:
            return self.lean.logits(g, self.vocab_size)
        return self.lm_head(g)[..., : self.vocab_size]

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
        if self.lean is not None:
            return self.lean.forward(tokens, states, cache, positions, mask)
        return self.head(self.embed(tokens)[None], states[None], cache, positions, mask)[0]


class EagleDrafter:
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
        if n == 0:
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
        p = self.proposer
        state, tokens, dists, confidence = self.last, [], [], []
        for i in range(k):
            logits = p.logits(state)  # (V,) the head's logits over the target's vocabulary
            x_i, q_i = draw(logits, p.sampling, u[i])  # q_i (V,): exactly what x_i is drawn from
            tokens.append(x_i)
            dists.append(q_i)
            if stop_below is not None:
                confidence.append(draft_confidence(logits, q_i, x_i, p.sampling))
                if confidence[-1] < stop_below:
                    break
            if i < k - 1:  # the head reads its own output with the drafted token
                state = p.step(x_i, state, self.cache)
                self.fed_extra += 1
        return Proposal(torch.stack(tokens), torch.stack(dists), confidence=tuple(confidence))  # (n,), (n, V)

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
            allowed = torch.cat([sees.new_ones(len(nodes), committed), sees], dim=1)  # (m, cached + m)
            positions = torch.full((1, len(nodes)), committed + depth - 1, device=device)  # (1, m)
            mask = additive_mask(allowed, p.embed.weight.dtype)  # (1, 1, m, cached + m)
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
            allowed = torch.cat([sees.new_ones(len(frontier), committed), sees], dim=1)  # (m, cached + m)
            positions = torch.full((1, len(frontier)), committed + so_far.depth(frontier[0]) - 1, device=device)
            mask = additive_mask(allowed, p.embed.weight.dtype)  # (1, 1, m, cached + m)
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


@dataclass(frozen=True)
class Eagle3Proposer:
    """EAGLE-3: a one-layer head drafts from the target's hidden states at three depths (engine/eagle3.py), with its
    own LM head over a draft vocabulary. The first draft of a round reads fc of the target's real states of the last
    committed row; each later one the head's own pre-norm output, with no fc (as vLLM's proposer). q = the head's
    processed distribution over the target's vocabulary: its draft-vocabulary logits placed through d2t, -inf
    elsewhere, so q = 0 off the draft vocabulary (one-hot of its argmax when greedy). A token with q = 0 is never
    drafted, so min(1, p/q) and the residual keep the output exact (as for a trimmed draft vocabulary)."""

    method: ClassVar[str] = methods.EAGLE3
    head: Eagle3Head
    embed: torch.nn.Module  # the target's embedding, shared
    vocab_size: int
    sampling: SamplingSettings
    hidden_layers: tuple[int, ...] = (2, 5, 7)  # the head's layers read (its config): vLLM's default for 10 layers
    shape: tuple[int, ...] = ()  # a tree's children per depth (EagleDrafter.propose_tree); empty: a chain
    dynamic: DynamicTree | None = None  # a dynamic (EAGLE-2) tree per round (EagleDrafter.propose_dynamic)
    lean: LeanHead | None = None  # the head's step on the lean forward (engine/lean_heads.py); None: its own modules

    @classmethod
    def for_run(cls, pair: ModelPair, settings: RunSettings) -> Eagle3Proposer:
        head = pair.eagle3_head
        embed = pair.target.get_input_embeddings()
        shape, dynamic = tree_shape(settings), settings.dynamic if settings.is_tree else None
        lean = lean_step(head, pair.target, settings.forward)
        return cls(head, embed, pair.vocab_size, settings.sampling, head.layers_read, shape, dynamic, lean)

    def start(self, prompt_ids: list[int], features: torch.Tensor | None = None) -> EagleDrafter:
        return EagleDrafter(self, prompt_ids, features)

    def new_cache(self):
        """One run's head cache: a LeanCache for the lean step, the module's DynamicCache otherwise."""
        return self.lean.new_cache() if self.lean is not None else self.head.new_cache()

    def read(self, following: torch.Tensor, features: torch.Tensor, cache) -> tuple[torch.Tensor, torch.Tensor]:
        """features (layers, n, H) -> fc over them side by side (n, layers H); the state (normed, s) after the last
        pair, each (H,)."""
        fused = features.transpose(0, 1).reshape(features.shape[1], -1)  # (n, layers * H) in the layers' order
        h = self.lean.project.times(fused) if self.lean is not None else self.head.fuse(fused)  # (n, H)
        normed, s = self.head_pass(following, h, cache)
        return normed[-1], s[-1]

    def logits(self, state: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        """(..., V) the head's draft logits at their target ids, -inf elsewhere; state (normed, s), each (..., H)."""
        if self.lean is not None:
            return self.lean.logits(state, self.vocab_size)
        return self.head.target_logits(state[0], self.head.config.vocab_size)[..., : self.vocab_size]

    def step(self, token: torch.Tensor, state, cache) -> tuple[torch.Tensor, torch.Tensor]:
        """The head reads its own pre-norm output s back with the drafted token (no fc)."""
        normed, s = self.head_pass(token.view(1), state[1].view(1, -1), cache)
        return normed[-1], s[-1]

    def step_nodes(self, tokens: torch.Tensor, state, cache, positions, mask) -> tuple[torch.Tensor, torch.Tensor]:
        """Tree nodes of one depth in one pass: tokens (m,) with their parents' states (normed, s), each (m, H), at
        positions (1, m) under the additive mask (1, 1, m, cached + m) -> each node's (normed, s), each (m, H)."""
        return self.head_pass(tokens, state[1], cache, positions, mask)

    def head_pass(self, tokens: torch.Tensor, states: torch.Tensor, cache, positions=None, mask=None):
        """The head over pairs: tokens (n,) x_{t+1} with states (n, H) (h: fc's output, or its own s) -> (normed, s),
        each (n, H), on the lean step or through the head's own modules (the reference)."""
        if self.lean is not None:
            return self.lean.forward(tokens, states, cache, positions, mask)
        normed, s = self.head(self.embed(tokens)[None], states[None], cache, positions, mask)
        return normed[0], s[0]


@dataclass(frozen=True)
class MedusaProposer:
    """Medusa: K independent heads guess the next K tokens from one feature, the target's post-norm hidden state of
    the row that predicted the last committed token (engine/medusa.py; as vLLM feeds its MedusaProposer). Head i
    drafts x_{n+1+i} after the committed x_0..x_n: no head sees another's draft, so one pass drafts the whole chain.

    Greedy: each head's argmax, a one-hot q (accepted with probability p(x): exact). Sampled (temperature > 0): each
    draft is drawn from its head's processed distribution q_i and judged by min(1, p/q_i), exact as any draft. Here
    specviz departs from vLLM, whose Medusa drafts every head's argmax at any temperature and judges it one-hot (its
    draft_sample_method does not reach Medusa): both are lossless; their acceptance rates differ at temperature > 0.
    K below the number of heads uses the first K (what vLLM builds for num_speculative_tokens = K); above it, the
    drafter proposes one token per head and no more, as a lookup proposes fewer than K when it finds fewer (vLLM
    would build the extra heads without weights: its K must not exceed the checkpoint's)."""

    method: ClassVar[str] = methods.MEDUSA
    hidden_layers: ClassVar[tuple[int, ...]] = (-1,)  # the target's last hidden state, after its final norm: h_t
    heads: MedusaHeads
    vocab_size: int
    sampling: SamplingSettings
    shape: tuple[int, ...] = ()  # a tree's children per depth (MedusaDrafter.propose_tree); empty: a chain

    @classmethod
    def for_run(cls, pair: ModelPair, settings: RunSettings) -> MedusaProposer:
        heads, shape = pair.medusa_heads, tree_shape(settings)
        if len(shape) > heads.num_heads:
            raise SettingsError(
                f"The Medusa tree {','.join(map(str, shape))} is {len(shape)} levels deep, but the Medusa heads are "
                f"{heads.num_heads}: head i drafts depth i + 1, so a Medusa tree is at most {heads.num_heads} levels "
                "deep. Use a shorter tree shape."
            )
        return cls(heads, pair.vocab_size, settings.sampling, shape)

    def start(self, prompt_ids: list[int], features: torch.Tensor | None = None) -> MedusaDrafter:
        return MedusaDrafter(self, features)


class MedusaDrafter:
    """One run's state: only the feature of the last committed row (the heads keep no cache)."""

    def __init__(self, proposer: MedusaProposer, features: torch.Tensor | None):
        self.proposer = proposer
        self.last: torch.Tensor | None = None  # (H,) None before any feature (a one-token prompt)
        self._read(features)

    def _read(self, features: torch.Tensor | None) -> None:
        if features is not None and features.shape[1]:
            self.last = features[0, -1]  # (H,) the row whose logits gave the last committed token

    def propose(self, k: int, u: torch.Tensor) -> Proposal:
        if self.proposer.shape:
            return self.propose_tree(k, u.device)
        if k < 1 or self.last is None:  # a one-token prompt: no feature yet, the target decodes one token
            return empty_chain(u.device)
        p = self.proposer
        k = min(k, p.heads.num_heads)  # one draft per head at most
        logits = p.heads(self.last, k)[:, : p.vocab_size]  # (k, V) head i's guess at x_{n+1+i}
        q = logits_to_probs(logits, p.sampling)  # (k, V) exactly what each draft is drawn from (one-hot when greedy)
        tokens = sample(q, u[:k])  # (k,) draft i from q_i with u_i, as a chain of separate draws would
        return Proposal(tokens, q)

    def propose_tree(self, depth: int, device: torch.device) -> Proposal:
        """Medusa's Cartesian tree cut to `depth` levels: head i's top-b_{i+1} tokens are the children of every node
        of depth i (all from the one feature: no head sees a drafted token, so every node of a depth gets the same
        children, and one pass of the heads drafts the whole tree)."""
        p = self.proposer
        shape = p.shape[:depth]
        if not shape or self.last is None:  # a one-token prompt: no feature yet, the target decodes one token
            return empty_tree(device, p.vocab_size)
        logits = p.heads(self.last, len(shape))[:, : p.vocab_size]  # (depth, V) head i's guess at depth i + 1

        def expand(depth: int, nodes: list[int], tokens: torch.Tensor, state_rows: torch.Tensor) -> torch.Tensor:
            return logits[depth].expand(len(nodes), -1)  # (m, V) every node of this depth: head `depth`'s logits

        return grow_top_b_tree(shape, logits[:1], expand, p.vocab_size)

    def advance(self, committed: list[int], n_accepted: int, features: torch.Tensor | None = None) -> None:
        self._read(features)

    @property
    def cache_length(self) -> int:
        return 0


@dataclass(frozen=True)
class SuffixProposer:
    """Suffix decoding (ArcticInference; core/suffix_tree.py): the most frequent continuation of the longest useful
    match, in a trie over this prompt + output and in a global one over earlier outputs; one-hot q, K varies per round.

    The global trie lives in a SuffixMemory that the caller keeps (an app session, one measurement): runs with the
    same memory learn from each other's outputs; without one, each run starts with an empty global trie."""

    method: ClassVar[str] = methods.SUFFIX
    hidden_layers: ClassVar[tuple[int, ...]] = ()  # reads none of the target's features
    device: torch.device
    options: SuffixOptions
    cache: SuffixCache

    @classmethod
    def for_run(cls, pair: ModelPair, settings: RunSettings, memory: SuffixMemory | None = None) -> SuffixProposer:
        cache = (memory or SuffixMemory()).cache_for(settings.suffix)
        return cls(pair.device, settings.suffix, cache)

    def start(self, prompt_ids: list[int], features: torch.Tensor | None = None) -> SuffixDrafter:
        return SuffixDrafter(self, list(prompt_ids))


class SuffixDrafter:
    """One request in the cache: its prompt + output trie, and its output growing in the global trie as it commits."""

    def __init__(self, proposer: SuffixProposer, prompt_ids: list[int]):
        self.proposer = proposer
        self.history = prompt_ids
        self.request = proposer.cache.start(prompt_ids)
        self.last: SuffixDraft = SuffixDraft()  # what the last propose drafted, and from which trie

    def propose(self, k: int, u: torch.Tensor) -> Proposal:
        if k < 1:
            self.last = SuffixDraft()  # nothing drafted this round (match() must not report the last one's)
            return empty_chain(self.proposer.device)
        o = self.proposer.options
        self.last = self.proposer.cache.speculate(
            self.request, self.history, k, o.max_spec_factor, o.max_spec_offset, o.min_token_prob
        )
        return Proposal(torch.tensor(self.last.tokens, dtype=torch.long, device=self.proposer.device), None)

    def advance(self, committed: list[int], n_accepted: int, features: torch.Tensor | None = None) -> None:
        self.history.extend(committed)
        self.proposer.cache.add(self.request, committed)

    def finish(self, committed: list[int]) -> None:
        """The run's last round: its tokens join the global trie, the prompt's trie is dropped."""
        self.proposer.cache.add(self.request, committed)
        self.proposer.cache.stop(self.request)

    def match(self, texts: Sequence[str]) -> SuffixMatch:
        """Where the last propose's draft came from, for the round's trace: its trie, the matched end of the text
        (before this round's drafts) and each draft's path probability."""
        d = self.last
        matched = tuple(self.history[len(self.history) - d.match_len :]) if d.match_len else ()
        source = d.source or SUFFIX_REQUEST
        return SuffixMatch(source, matched, tuple(texts[t] for t in matched), d.probs, d.score)

    @property
    def cache_length(self) -> int:
        return 0


@dataclass(frozen=True)
class EarlyExitProposer:
    """Self-speculation by early exit (engine/early_exit.py): the target's own first E layers, its final norm and LM
    head draft a chain; q = that exit's processed distribution (one-hot of its argmax when greedy), so the usual
    min(1, p/q) test keeps the output exact. It shares the target's per-run cache (`shares_target`: the loop hands
    `start` the target's own CachedModel): the draft reads the target's keys and values of layers < E for every
    committed token, and the verify pass (`EarlyExitDrafter.score`) skips layers < E for the tokens the draft ran."""

    method: ClassVar[str] = methods.EARLY_EXIT
    hidden_layers: ClassVar[tuple[int, ...]] = ()  # reads no hidden states: it reads the target's cache itself
    shares_target: ClassVar[bool] = True
    exit_layer: int
    sampling: SamplingSettings
    variant: ExitVariant = EXIT_EXACT  # runs exit through the final norm; the exactness lab switches it

    @classmethod
    def for_run(cls, pair: ModelPair, settings: RunSettings) -> EarlyExitProposer:
        check_exit_layer(pair.target, settings.exit_layer)
        return cls(settings.exit_layer, settings.sampling)

    def start(
        self, prompt_ids: list[int], features: torch.Tensor | None = None, target: CachedModel | None = None
    ) -> EarlyExitDrafter:
        """A drafter over the run's target cache (prefilled with the prompt, its last token pending)."""
        if target is None:
            raise ValueError("early exit drafts from the target's own cache: pass the run's target CachedModel")
        return EarlyExitDrafter(SplitTarget(target, self.exit_layer), self.sampling, self.variant)


class EarlyExitDrafter:
    """One run's early-exit state: nothing of its own between rounds but the target's cache. During a round, the
    layer-E states of the pending token and of the drafts x_1..x_{n-1} (what the draft ran through layers < E, whose
    keys and values it left in the target's cache), kept for the verify pass."""

    def __init__(self, split: SplitTarget, sampling: SamplingSettings, variant: ExitVariant = EXIT_EXACT):
        self.split = split
        self.sampling = sampling
        self.variant = variant
        self.states: torch.Tensor | None = None  # (pending + n - 1, H) layer-E states; None outside a round

    def propose(self, k: int, u: torch.Tensor, stop_below: float | None = None) -> Proposal:
        """Draft k tokens through the first E layers; with stop_below (the confidence K schedule), stop after the
        first whose own draft probability is below it (core/schedule.py)."""
        state = self.split.state
        if k < 1 or not state.pending:
            return empty_chain(state.device)
        pending = torch.tensor(state.pending, dtype=torch.long, device=state.device)  # (P,)
        rows = [self.split.lower(pending)]  # [(P, H)] at layer E, after the target's committed cache
        norm = self.variant.norm_drafts
        logits = self.split.logits(rows[0][-1:], norm)[0]  # (V,) the exit's next-token logits
        tokens, dists, confidence = [], [], []
        for i in range(k):
            q_i = logits_to_probs(logits, self.sampling)  # (V,) exactly what x_i is drawn from
            x_i = sample(q_i, u[i])
            tokens.append(x_i)
            dists.append(q_i if self.variant.norm_q == norm else self._told_q(rows[-1][-1:]))
            if stop_below is not None:
                confidence.append(draft_confidence(logits, q_i, x_i, self.sampling))
                if confidence[-1] < stop_below:
                    break
            if i < k - 1:
                rows.append(self.split.lower(x_i.view(1)))  # (1, H)
                logits = self.split.logits(rows[-1], norm)[0]
        self.states = torch.cat(rows)  # (P + n - 1, H)
        return Proposal(torch.stack(tokens), torch.stack(dists), confidence=tuple(confidence))  # (n,), (n, V)

    def _told_q(self, hidden: torch.Tensor) -> torch.Tensor:
        """(V,) the q the verifier is told when the lab's variant reports another exit than the drafts came from."""
        return logits_to_probs(self.split.logits(hidden, self.variant.norm_q)[0], self.sampling)

    def score(self, proposal: Proposal) -> torch.Tensor:
        """The verify pass, reusing the draft's work: layers < E over the last draft only, then layers >= E over the
        pending token and every draft from their layer-E states; logits (n + 1, V) at the root and after each draft.
        The target's cache then holds pending + n tokens in every layer, as after a plain verify pass."""
        state, n = self.split.state, proposal.tokens.numel()
        if n == 0 or self.states is None:
            return state.forward(logits_to_keep=1)  # (1, V) nothing drafted: a plain target step
        last = self.split.lower(proposal.tokens[-1:])  # (1, H) the one draft the draft never ran
        hidden = self.split.upper(torch.cat([self.states, last]))  # (P + n, H) pre-norm, after layer L-1
        self.states = None
        state.pending, state.fed_extra = [], n  # the drafts are unconfirmed extra tokens, as after state.forward
        return self.split.logits(hidden[-(n + 1) :])  # (n + 1, V)

    def advance(self, committed: list[int], n_accepted: int, features: torch.Tensor | None = None) -> None:
        """Nothing of its own to roll back: the loop's target.advance crops both halves of the shared cache."""
        self.states = None

    @property
    def cache_length(self) -> int:
        """Tokens in the cache of layers < E: the committed ones, plus the drafts' while a round is judged."""
        return self.split.lower_length()


def draft_cap_note(pair: ModelPair, settings: RunSettings) -> str | None:
    """Why a run drafts fewer than K tokens a round whatever the text (Medusa: one per head); None when it does not."""
    if settings.method != methods.MEDUSA or settings.is_tree or settings.draft_length <= pair.medusa_heads.num_heads:
        return None
    n = pair.medusa_heads.num_heads
    return (
        f"The Medusa heads are {n}, one draft each: K = {settings.draft_length} drafts {n} tokens a round (vLLM's "
        f"num_speculative_tokens must not exceed the heads either: it would build heads without weights)."
    )


def draft_confidence(logits: torch.Tensor, q: torch.Tensor, x: torch.Tensor, sampling: SamplingSettings) -> float:
    """The draft's own probability of the token x it drafted, what the confidence schedule stops on (as
    transformers' ConfidenceCriteria reads it): the softmax of the raw logits (V,) when greedy, where q is one-hot,
    so this is the draft's top probability; q(x) when sampling. One host read per draft token."""
    probs = logits.float().softmax(-1) if sampling.greedy else q
    return float(probs[x])


def tree_shape(settings: RunSettings) -> tuple[int, ...]:
    """The tree a chain method that also drafts trees (methods.BRANCHING) drafts in this run; () for a chain."""
    return settings.tree if settings.is_tree else ()


def grow_top_b_tree(shape: tuple[int, ...], root_logits: torch.Tensor, expand, vocab_size: int) -> Proposal:
    """A tree of this shape whose children at each node are the b highest-scoring tokens of that node's logits
    (core/verify.py TOP_B: deterministic, so each q row is one-hot and sibling elimination keeps the walk exact).

    root_logits (1, V); expand(depth, nodes, tokens, parent_rows) gives the (m, V) logits of the m nodes of that
    depth (a list of node ids, in order), tokens (N,) holding every node drafted so far and parent_rows (m,) each
    node's parent's row among the previous depth's nodes; it is not called for the leaves."""
    parents = tree_parents(shape)
    tokens = torch.empty(len(parents), dtype=torch.long, device=root_logits.device)  # (N,)
    logits, start = root_logits, 0  # (nodes of the previous depth, V)
    for depth, branching in enumerate(shape, start=1):
        count = logits.shape[0] * branching
        nodes = list(range(start, start + count))  # breadth-first: node j's parent is the previous depth's j // b
        tokens[start : start + count] = logits.topk(branching, dim=-1).indices.reshape(-1)  # (m,) top-b per parent
        if depth < len(shape):
            rows = torch.arange(count, device=root_logits.device) // branching  # (m,) each node's parent's row
            logits = expand(depth, nodes, tokens, rows)  # (m, V)
        start += count
    return Proposal(tokens, one_hot(tokens, vocab_size), parents)  # q (N, V) one-hot


def dynamic_proposal(root_logits: torch.Tensor, expand, dynamic: DynamicTree, depth: int, vocab_size: int) -> Proposal:
    """A dynamic tree cut to `depth` levels as a Proposal: root_logits (V,) and expand(frontier, so_far) -> (m, V)
    draft logits, ranked by their log-softmax (EAGLE-2 ranks by the raw draft's, whatever the temperature: the
    children are chosen, not sampled, so they are judged one-hot and the round is exact at any temperature)."""
    rows = {-1: root_logits.float().log_softmax(-1)}  # parent candidate -> (V,) log q after it

    def scored(frontier: list[int], so_far: GrownSoFar) -> torch.Tensor:
        logp = expand(frontier, so_far).float().log_softmax(-1)  # (m, V)
        rows.update(zip(frontier, logp))
        return logp

    grown = grow_dynamic_tree(rows[-1], scored, replace(dynamic, depth=min(depth, dynamic.depth)))
    tokens = torch.tensor([grown.tokens[c] for c in grown.kept], dtype=torch.long, device=root_logits.device)  # (n,)
    soft_q = torch.stack([rows[grown.parents[c]].exp() for c in grown.kept])  # (n, V) the draft's q at each parent
    return Proposal(tokens, one_hot(tokens, vocab_size), grown.node_parents, grown=grown, soft_q=soft_q)


def cat_rows(states: list):
    """Head states with a leading row axis, (1, H) or tuples of such -> one (n, H) (or a tuple of such)."""
    if isinstance(states[0], tuple):
        return tuple(torch.cat(parts) for parts in zip(*states))
    return torch.cat(states)


def rows_of(state):
    """A head's state for one row, (H,) or a tuple of such -> the same with a leading row axis (1, H)."""
    return tuple(s[None] for s in state) if isinstance(state, tuple) else state[None]


def take_rows(state, rows: torch.Tensor):
    """Rows of a head's state, (n, H) or a tuple of such -> (len(rows), H) each."""
    return tuple(s[rows] for s in state) if isinstance(state, tuple) else state[rows]


def additive_mask(allowed: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """(m, T) bool (True = may attend) -> (1, 1, m, T) additive mask: 0 or the dtype's minimum."""
    mask = torch.zeros(allowed.shape, dtype=dtype, device=allowed.device)
    return mask.masked_fill(~allowed, torch.finfo(dtype).min)[None, None]


def ancestor_matrix(parents: tuple[int, ...]) -> torch.Tensor:
    """(N, N) bool: entry (i, j) is True when node j is node i or one of its ancestors."""
    n = len(parents)
    sees = torch.eye(n, dtype=torch.bool)
    for i, parent in enumerate(parents):  # breadth-first: a parent's row is complete before its children's
        if parent >= 0:
            sees[i] |= sees[parent]
    return sees


def empty_tree(device: torch.device, vocab_size: int) -> Proposal:
    """A tree of no nodes: the round is one target pass that draws its next token from p at the root."""
    return Proposal(torch.empty(0, dtype=torch.long, device=device), torch.empty(0, vocab_size, device=device), ())


@dataclass(frozen=True)
class MtpProposer(EagleProposer):
    """One MTP module (engine/mtp.py), chained across depths: EAGLE-1's drafter, caches and trees, the module in the
    head's place; its logits read the module's output norm before the target's LM head (DeepSeek's shared head)."""

    method: ClassVar[str] = methods.MTP

    @classmethod
    def for_run(cls, pair: ModelPair, settings: RunSettings) -> MtpProposer:
        target = pair.target
        embed, lm_head = target.get_input_embeddings(), target.get_output_embeddings()
        lean = lean_step(pair.mtp_head, target, settings.forward)
        return cls(pair.mtp_head, embed, lm_head, pair.vocab_size, settings.sampling, tree_shape(settings), lean=lean)

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        """(..., V) the target's LM head on the module's normed output(s) h (..., H)."""
        if self.lean is not None:
            return self.lean.logits(h, self.vocab_size)  # the output norm included
        return self.lm_head(self.head.normed(h))[..., : self.vocab_size]


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
