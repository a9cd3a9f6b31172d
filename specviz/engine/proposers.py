"""Who proposes the draft tokens, behind one small interface.

A `Proposer` is shared and read-only (it may hold a cached model); `start` gives one run its own `Drafter`, which owns
that run's state (a KV cache, or the token history for n-gram lookup).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np
import torch
from numpy.lib.stride_tricks import sliding_window_view
from transformers import PreTrainedModel

from specviz.core.sampling import SamplingSettings, logits_to_probs, sample
from specviz.core.settings import RunSettings
from specviz.engine.kv import CachedModel

if TYPE_CHECKING:
    from specviz.engine.models import ModelPair


@dataclass(frozen=True)
class Proposal:
    """Up to K draft tokens and the distributions they were drawn from."""

    tokens: torch.Tensor  # (k,) long, on the models' device
    q: torch.Tensor | None  # (k, V) processed draft distributions; None for a deterministic drafter (one-hot q)


class Drafter(Protocol):
    """One run's proposer state."""

    def propose(self, k: int, u: torch.Tensor) -> Proposal:
        """Propose up to k tokens after the committed sequence; u (k,) are the uniforms for sampling them."""

    def advance(self, committed: list[int], n_accepted: int) -> None:
        """Learn what the round committed (its first n_accepted tokens are accepted drafts) and roll back."""

    @property
    def cache_length(self) -> int:
        """Tokens held in the drafter's KV cache (0 when it has none)."""


class Proposer(Protocol):
    """Shared, read-only; named by an entry of specviz.methods (its `proposer` field is the class name)."""

    @classmethod
    def for_run(cls, pair: ModelPair, settings: RunSettings) -> Proposer:
        """The proposer for a run with these settings on this pair."""

    def start(self, prompt_ids: list[int]) -> Drafter:
        """A fresh drafter for one run over this prompt."""


@dataclass(frozen=True)
class DraftModelProposer:
    """A small causal LM samples K tokens autoregressively from its processed distribution q."""

    model: PreTrainedModel
    vocab_size: int
    sampling: SamplingSettings

    @classmethod
    def for_run(cls, pair: ModelPair, settings: RunSettings) -> DraftModelProposer:
        return cls(pair.draft, pair.vocab_size, settings.sampling)

    def start(self, prompt_ids: list[int]) -> DraftModelDrafter:
        return DraftModelDrafter(CachedModel(self.model, self.vocab_size, prompt_ids), self.sampling)


class DraftModelDrafter:
    def __init__(self, state: CachedModel, sampling: SamplingSettings):
        self.state = state
        self.sampling = sampling
        state.prefill()

    def propose(self, k: int, u: torch.Tensor) -> Proposal:
        if k < 1:
            return Proposal(torch.empty(0, dtype=torch.long, device=self.state.device), None)
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

    def advance(self, committed: list[int], n_accepted: int) -> None:
        self.state.advance(committed, n_accepted)

    @property
    def cache_length(self) -> int:
        return self.state.length


@dataclass(frozen=True)
class NgramProposer:
    """Prompt lookup: find the last n tokens earlier in prompt + output and propose what followed them (one-hot q)."""

    device: torch.device
    min_n: int = 1
    max_n: int = 3

    @classmethod
    def for_run(cls, pair: ModelPair, settings: RunSettings) -> NgramProposer:
        return cls(pair.device, settings.ngram_min, settings.ngram_max)

    def start(self, prompt_ids: list[int]) -> NgramDrafter:
        return NgramDrafter(list(prompt_ids), self.device, self.min_n, self.max_n)


class NgramDrafter:
    def __init__(self, history: list[int], device: torch.device, min_n: int, max_n: int):
        self.history = history
        self.device = device
        self.min_n, self.max_n = min_n, max_n

    def propose(self, k: int, u: torch.Tensor) -> Proposal:
        tokens = ngram_lookup(self.history, k, self.min_n, self.max_n)
        return Proposal(torch.tensor(tokens, dtype=torch.long, device=self.device), None)

    def advance(self, committed: list[int], n_accepted: int) -> None:
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
