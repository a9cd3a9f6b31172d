"""Who proposes the draft tokens, behind one small interface.

A `Proposer` is shared and read-only (it may hold a cached model); `start` gives one run its own `Drafter`, which owns
that run's state (a KV cache, or the token history for n-gram lookup).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Protocol

import numpy as np
import torch
from numpy.lib.stride_tricks import sliding_window_view
from transformers import PreTrainedModel

from specviz import methods
from specviz.core.sampling import SamplingSettings, logits_to_probs, sample
from specviz.core.settings import RunSettings
from specviz.core.verify import TOP_B, WITHOUT_REPLACEMENT, draw_children, tree_depths, tree_parents
from specviz.engine.kv import CachedModel

if TYPE_CHECKING:
    from specviz.engine.models import ModelPair


@dataclass(frozen=True)
class Proposal:
    """What a drafter proposes for one round: a chain of up to K tokens, or a tree of nodes that name their parents."""

    tokens: torch.Tensor  # (n,) long, on the models' device
    q: torch.Tensor | None  # (n, V) what each was drawn from (given its elder siblings, in a tree); None: one-hot
    parents: tuple[int, ...] | None = None  # a tree: each node's parent, -1 = the root, breadth-first
    #                                         (core/verify.py tree_parents); None: a chain, each token after the last

    @property
    def is_tree(self) -> bool:
        return self.parents is not None


class Drafter(Protocol):
    """One run's proposer state."""

    def propose(self, depth: int, u: torch.Tensor) -> Proposal:
        """Propose at most `depth` tokens deep after the committed sequence (0: an empty proposal); u holds one
        uniform per draft slot of the round (RunSettings.draft_slots), for sampling them."""

    def advance(self, committed: list[int], n_accepted: int, features: torch.Tensor | None = None) -> None:
        """Learn what the round committed (its first n_accepted tokens are accepted drafts) and roll back.
        features (layers, rows, H): the target's hidden states for the rows it committed, if hidden_layers asked."""

    @property
    def cache_length(self) -> int:
        """Tokens held in the drafter's KV cache (0 when it has none)."""


class Proposer(Protocol):
    """Shared, read-only; `method` is the registry name (specviz.methods) it implements.

    A proposer that reads the target's features names the layers in `hidden_layers` (indices into transformers'
    `hidden_states`: 0 = the embeddings, L = the last layer's output); the loop then hands its drafter the target's
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

    @classmethod
    def for_run(cls, pair: ModelPair, settings: RunSettings) -> DraftModelProposer:
        return cls(pair.draft, pair.vocab_size, settings.sampling, pair.draft_kept(settings.draft_vocab))

    def start(self, prompt_ids: list[int], features: torch.Tensor | None = None) -> DraftModelDrafter:
        return DraftModelDrafter(CachedModel(self.model, self.vocab_size, prompt_ids, self.kept), self.sampling)


class DraftModelDrafter:
    def __init__(self, state: CachedModel, sampling: SamplingSettings):
        self.state = state
        self.sampling = sampling
        state.prefill()

    def propose(self, k: int, u: torch.Tensor) -> Proposal:
        if k < 1:
            return empty_chain(self.state.device)
        logits = self.state.forward()[-1]  # (V,) reads the committed tokens this cache has not seen
        tokens, dists = [], []
        for i in range(k):
            q_i = logits_to_probs(logits, self.sampling)  # (V,) exactly what x_i is drawn from
            x_i = sample(q_i, u[i])
            tokens.append(x_i)
            dists.append(q_i)
            if i < k - 1:
                logits = self.state.step(x_i)
        return Proposal(torch.stack(tokens), torch.stack(dists))  # (k,), (k, V)

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

    @classmethod
    def for_run(cls, pair: ModelPair, settings: RunSettings) -> TreeProposer:
        kept = pair.draft_kept(settings.draft_vocab)
        return cls(pair.draft, pair.vocab_size, settings.sampling, settings.tree, kept)

    def start(self, prompt_ids: list[int], features: torch.Tensor | None = None) -> TreeDrafter:
        state = CachedModel(self.model, self.vocab_size, prompt_ids, self.kept)
        return TreeDrafter(state, self.sampling, self.shape)


class TreeDrafter:
    def __init__(self, state: CachedModel, sampling: SamplingSettings, shape: tuple[int, ...]):
        self.state = state
        self.sampling = sampling
        self.shape = shape
        self.how = TOP_B if sampling.greedy else WITHOUT_REPLACEMENT
        state.prefill()

    def propose(self, depth: int, u: torch.Tensor) -> Proposal:
        """Draft the run's tree cut to `depth` levels; u (N,) one uniform per node for sampling it (unused for top-b
        children)."""
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

    def advance(self, committed: list[int], n_accepted: int, features: torch.Tensor | None = None) -> None:
        self.state.advance(committed, 0)  # drop every tree node; the committed path is re-read next round

    @property
    def cache_length(self) -> int:
        return self.state.length


def ancestor_matrix(parents: tuple[int, ...]) -> torch.Tensor:
    """(N, N) bool: entry (i, j) is True when node j is node i or one of its ancestors."""
    n = len(parents)
    sees = torch.eye(n, dtype=torch.bool)
    for i, parent in enumerate(parents):  # breadth-first: a parent's row is complete before its children's
        if parent >= 0:
            sees[i] |= sees[parent]
    return sees


def empty_chain(device: torch.device) -> Proposal:
    return Proposal(torch.empty(0, dtype=torch.long, device=device), None)


def empty_tree(device: torch.device, vocab_size: int) -> Proposal:
    """A tree of no nodes: the round is one target pass that draws its next token from p at the root."""
    return Proposal(torch.empty(0, dtype=torch.long, device=device), torch.empty(0, vocab_size, device=device), ())


PROPOSER_CLASSES = (DraftModelProposer, NgramProposer, TreeProposer)


def proposer_class(method: str) -> type[Proposer] | None:
    """The class that implements a registry method in this engine; None for plain decoding."""
    return next((cls for cls in PROPOSER_CLASSES if cls.method == method), None)
