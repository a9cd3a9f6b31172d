"""Drafters whose draft model speaks another tokenizer: TLI and SLEM (core/crossvocab.py) over the one loop.

Both keep the draft's own KV cache over its own tokens and the committed text as the target wrote it. After each
round the committed target tokens are decoded, the whole text re-tokenized for the draft, and the draft's cache
kept up to the first token where the two disagree (its context and the drafts it read this round count), then the
rest is read anew: that is the realignment after a mismatch, recorded in each round's `Crossing`.

- TLI proposes target tokens drawn from q′ (the draft restricted to the shared tokens, renormalised) with q′ as q, so
  the loop's ordinary verify keeps the output exactly the target's at any temperature.
- SLEM drafts K tokens greedily in its own vocabulary, turns their text into target tokens, and proposes those as a
  deterministic chain (one-hot q: accept with probability p(x); greedy: exact match), also exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import torch
from transformers import PreTrainedModel

from specviz import methods
from specviz.core.crossvocab import masked_top, realign, slem_tokens, tli_step
from specviz.core.sampling import SamplingSettings, sample
from specviz.core.settings import FORWARD_HF
from specviz.core.trace import Crossing, TokenProb
from specviz.engine.forward.kv import CachedModel
from specviz.engine.forward.lean import chosen_forward
from specviz.engine.loading.vocab_map import VocabMap
from specviz.engine.proposers.base import Drafter, Proposal, Proposer, RunContext, empty_chain
from specviz.errors import SettingsError

if TYPE_CHECKING:
    from specviz.engine.loading.models import ModelPair

SEAM_WINDOW = 4  # SLEM: committed target tokens re-tokenized with the draft's text, so a word split at the seam joins
MASKED_SHOWN = 3  # TLI: masked draft tokens recorded per position


def crossing_of(pair: ModelPair, method: str) -> VocabMap:
    """The pair's map between tokenizers, or a clear refusal when the draft shares the target's tokenizer."""
    if pair.draft is None or pair.crossing is None:
        raise SettingsError(
            f"{methods.get(method).label} needs a draft model with a tokenizer of its own; this pair's draft shares "
            f"the target's (use --method {methods.DRAFT}) or there is none (give one, e.g. --draft pystdlib)."
        )
    return pair.crossing


@dataclass(frozen=True)
class TliProposer(Proposer):
    """TLI: a draft model with another tokenizer, drafting only the tokens both vocabularies share; SLEM's proposer
    is this one with another drafter (`start` gives a run its drafter by `method`)."""

    method: ClassVar[str] = methods.TLI
    model: PreTrainedModel
    vocab: VocabMap
    sampling: SamplingSettings
    forward: str = FORWARD_HF

    @classmethod
    def for_run(cls, context: RunContext) -> TliProposer:
        pair, settings = context.pair, context.settings
        vocab = crossing_of(pair, cls.method)
        return cls(pair.draft, vocab, settings.sampling, chosen_forward(settings.forward, pair.draft))

    def start(self, prompt_ids: list[int], features: torch.Tensor | None = None) -> CrossingDrafter:
        return (TliDrafter if self.method == methods.TLI else SlemDrafter)(self, list(prompt_ids))


@dataclass(frozen=True)
class SlemProposer(TliProposer):
    """SLEM: the draft's text, re-tokenized into the target's tokens, judged by exact match."""

    method: ClassVar[str] = methods.SLEM


class CrossingDrafter(Drafter):
    """One run's draft context over its own tokens, realigned to the committed text after every round."""

    def __init__(self, proposer: TliProposer, prompt_ids: list[int]):
        self.vocab, self.sampling = proposer.vocab, proposer.sampling
        self.committed = prompt_ids  # target ids: prompt + output so far
        self.ids = self.vocab.draft_ids(self.vocab.target_text(prompt_ids)) or [0]  # the draft's context: cache +
        #                                                                              pending, its own tokens
        self.state = CachedModel(
            proposer.model, self.vocab.intersection.draft_vocab, self.ids, forward=proposer.forward
        )
        self.state.prefill()
        self.drafted: list[int] = []  # this round's draft ids, in order
        self.target: list[int] = []  # this round's proposal, target ids
        self.lost: list[float] = []  # TLI: mass outside the intersection per position
        self.masked: list[list[tuple[int, float]]] = []  # TLI: the top masked draft tokens per position
        self.seam = False  # SLEM: the draft's text was tokenized alone
        self.moved: tuple[int, int, int] | None = None  # the realignment after this round: kept, dropped, fresh

    def _draft_logits(self) -> torch.Tensor:
        """(V_d,) the draft's next-token logits after its committed context."""
        return self.state.forward()[-1]

    def advance(self, committed: list[int], n_accepted: int, features: torch.Tensor | None = None) -> None:
        """Learn the committed target tokens and realign: keep the draft's cache where its tokens (context and the
        drafts it read) agree with the committed text re-tokenized, read the rest anew."""
        self.committed = self.committed + list(committed)
        read = self.ids + self.drafted[: self.state.fed_extra]  # what the cache holds and is queued to read
        retokenized = self.vocab.draft_ids(self.vocab.target_text(self.committed)) or [0]
        moved = realign(read, retokenized)
        keep = min(moved.kept, self.state.length, len(retokenized) - 1)  # at least one token to read next
        self.state.rewind(keep, retokenized[keep:])
        self.ids = retokenized
        self.moved = (moved.kept, moved.dropped, len(moved.fresh))

    def crossing(self) -> Crossing:
        """This round's translation, and the realignment after its commit (none yet when the run stopped in it)."""
        return self._crossing(*(self.moved or (self.state.length, 0, 0)))

    def _crossing(self, kept: int, dropped: int, fresh: int) -> Crossing:
        """The round's translation for a realignment that kept, dropped and freshly read so many draft tokens."""
        raise NotImplementedError  # each way across tokenizers (TLI, SLEM) records its own

    @property
    def cache_length(self) -> int:
        return self.state.length


class TliDrafter(CrossingDrafter):
    """TLI: each draft is drawn from q′ (the draft's processed distribution on the shared tokens, renormalised)."""

    def propose(self, k: int, u: torch.Tensor, stop_below: float | None = None) -> Proposal:
        self.drafted, self.target, self.lost, self.masked, self.moved = [], [], [], [], None
        if k < 1:
            return empty_chain(self.state.device)
        vocab, target_vocab = self.vocab, self.vocab.intersection.target_vocab
        logits = self._draft_logits()  # (V_d,)
        tokens, dists = [], []
        for i in range(k):
            step = tli_step(logits, vocab.draft_index, vocab.target_index, target_vocab, self.sampling)
            x = sample(step.q, u[i])  # a target id in the intersection, drawn from exactly q′
            x_draft = vocab.to_draft[x]
            tokens.append(x)
            dists.append(step.q)
            self.drafted.append(int(x_draft))
            self.lost.append(float(step.lost))
            self.masked.append(masked_top(step.full, vocab.draft_index, MASKED_SHOWN))
            if i < k - 1:
                logits = self.state.step(x_draft)
        self.target = [int(t) for t in tokens]
        return Proposal(torch.stack(tokens), torch.stack(dists))  # (n,), (n, V_t)

    def _crossing(self, kept: int, dropped: int, fresh: int) -> Crossing:
        texts = self.vocab.draft_texts
        return Crossing(
            method=methods.TLI,
            draft_ids=tuple(self.drafted),
            draft_texts=tuple(texts[d] for d in self.drafted),
            target_ids=tuple(self.target),
            target_texts=tuple(texts[d] for d in self.drafted),  # the same spelling: that is what I means
            outside=(False,) * len(self.drafted),
            lost=tuple(self.lost),
            masked=tuple(tuple(TokenProb(d, texts[d], p) for d, p in row) for row in self.masked),
            kept=kept,
            dropped=dropped,
            fresh=fresh,
        )


class SlemDrafter(CrossingDrafter):
    """SLEM: K greedy draft tokens, their text re-tokenized into target tokens, proposed as a deterministic chain."""

    def propose(self, k: int, u: torch.Tensor, stop_below: float | None = None) -> Proposal:
        self.drafted, self.target, self.seam, self.moved = [], [], False, None
        if k < 1:
            return empty_chain(self.state.device)
        logits = self._draft_logits()  # (V_d,)
        for i in range(k):
            x = logits.argmax(-1)
            self.drafted.append(int(x))
            if i < k - 1:
                logits = self.state.step(x)
        self.target = self._target_tokens(self.vocab.draft_text(self.drafted))[:k]
        return Proposal(torch.tensor(self.target, dtype=torch.long, device=self.state.device), None)

    def _target_tokens(self, text: str) -> list[int]:
        """The draft's text as target tokens after the committed ones: re-tokenized with the last few committed
        tokens' text, or alone where it merges into them (the seam)."""
        window = self.committed[-SEAM_WINDOW:]
        joined = slem_tokens(window, self.vocab.target_ids(self.vocab.target_text(window) + text))
        self.seam = joined is None
        return self.vocab.target_ids(text) if joined is None else joined

    def _crossing(self, kept: int, dropped: int, fresh: int) -> Crossing:
        draft_texts, shared = self.vocab.draft_texts, set(self.vocab.intersection.draft_ids)
        return Crossing(
            method=methods.SLEM,
            draft_ids=tuple(self.drafted),
            draft_texts=tuple(draft_texts[d] for d in self.drafted),
            target_ids=tuple(self.target),
            target_texts=tuple(self.vocab.target_text([t]) for t in self.target),
            outside=tuple(d not in shared for d in self.drafted),
            lost=(),
            masked=(),
            kept=kept,
            dropped=dropped,
            fresh=fresh,
            seam=self.seam,
        )
