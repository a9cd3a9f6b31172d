"""Prompt lookup: the continuation of an earlier occurrence of the text's last n tokens."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch
from numpy.lib.stride_tricks import sliding_window_view

from specviz import methods
from specviz.engine.proposers.base import Drafter, Proposal, Proposer, RunContext


@dataclass(frozen=True)
class NgramProposer(Proposer):
    """Prompt lookup: find the last n tokens earlier in prompt + output and propose what followed them (one-hot q)."""

    method: ClassVar[str] = methods.NGRAM
    device: torch.device
    min_n: int = 1
    max_n: int = 3

    @classmethod
    def for_run(cls, context: RunContext) -> NgramProposer:
        settings = context.settings
        return cls(context.pair.device, settings.ngram_min, settings.ngram_max)

    def start(self, prompt_ids: list[int], features: torch.Tensor | None = None) -> NgramDrafter:
        return NgramDrafter(list(prompt_ids), self.device, self.min_n, self.max_n)


class NgramDrafter(Drafter):
    def __init__(self, history: list[int], device: torch.device, min_n: int, max_n: int):
        self.history = history
        self.device = device
        self.min_n, self.max_n = min_n, max_n

    def propose(self, k: int, u: torch.Tensor, stop_below: float | None = None) -> Proposal:
        tokens = ngram_lookup(self.history, k, self.min_n, self.max_n)
        return Proposal(torch.tensor(tokens, dtype=torch.long, device=self.device), None)

    def advance(self, committed: list[int], n_accepted: int, features: torch.Tensor | None = None) -> None:
        self.history.extend(committed)

    @property
    def cache_length(self) -> int:
        return 0


def ngram_lookup(history: list[int], k: int, min_n: int, max_n: int) -> list[int]:
    """Up to k tokens that followed the earliest occurrence of the longest matching suffix (n from max_n to min_n).

    The earliest occurrence, cut where the history ends, as vLLM's n-gram proposer (its KMP search keeps the earliest
    position of the longest match), prompt lookup decoding's reference code and transformers' prompt lookup all take:
    the same step-by-step drafts as a served n-gram run (docs/vllm.md, the agreement on smollm2).
    """
    seq = np.asarray(history, dtype=np.int64)
    for n in range(max_n, min_n - 1, -1):
        if k < 1 or len(seq) <= n:
            continue
        windows = sliding_window_view(seq[:-1], n)  # (L-n, n): every earlier n-gram that has a successor
        starts = np.flatnonzero((windows == seq[-n:]).all(axis=1)) + n  # where each match's continuation begins
        if starts.size:
            begin = int(starts[0])
            return seq[begin : begin + k].tolist()
    return []
