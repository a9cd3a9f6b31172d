"""Suffix decoding (ArcticInference): drafts from a trie of this request and of earlier runs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import torch

from specviz import methods
from specviz.core.suffix_tree import SuffixCache, SuffixDraft, SuffixMemory, SuffixOptions
from specviz.core.trace import SUFFIX_REQUEST, SuffixMatch
from specviz.engine.proposers.base import Drafter, Proposal, Proposer, RunContext, empty_chain


@dataclass(frozen=True)
class SuffixProposer(Proposer):
    """Suffix decoding (ArcticInference; core/suffix_tree.py): the most frequent continuation of the longest useful
    match, in a trie over this prompt + output and in a global one over earlier outputs; one-hot q, K varies per round.

    The global trie lives in a SuffixMemory that the caller keeps (an app session, one measurement): runs with the
    same memory learn from each other's outputs; without one, each run starts with an empty global trie."""

    method: ClassVar[str] = methods.SUFFIX
    device: torch.device
    options: SuffixOptions
    cache: SuffixCache

    @classmethod
    def for_run(cls, context: RunContext) -> SuffixProposer:
        """Drafting from the caller's memory of earlier runs (context.memory), or from a fresh one."""
        options = context.settings.suffix
        cache = (context.memory or SuffixMemory()).cache_for(options)
        return cls(context.pair.device, options, cache)

    def start(self, prompt_ids: list[int], features: torch.Tensor | None = None) -> SuffixDrafter:
        return SuffixDrafter(self, list(prompt_ids))


class SuffixDrafter(Drafter):
    """One request in the cache: its prompt + output trie, and its output growing in the global trie as it commits."""

    def __init__(self, proposer: SuffixProposer, prompt_ids: list[int]):
        self.proposer = proposer
        self.history = prompt_ids
        self.request = proposer.cache.start(prompt_ids)
        self.last: SuffixDraft = SuffixDraft()  # what the last propose drafted, and from which trie

    def propose(self, k: int, u: torch.Tensor, stop_below: float | None = None) -> Proposal:
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
