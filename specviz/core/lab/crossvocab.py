"""TLI on a toy pair of vocabularies, enumerated exactly: the draft speaks other tokens, the output is still p.

The target's tokens are five letters; the draft's are five strings, three of them the target's letters under other
ids and two the target has not. Both are first-order Markov chains (core/toy.py), the draft reading the last
committed letter through its own ids. TLI's q′ at temperature 1 (core/crossvocab.py) is a language model over the
target's ids, so the lab's exact enumeration of rounds (core/toy.py speculative_distribution) gives the
distribution of the output sequences, which must equal the target's to rounding.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from specviz.core.crossvocab import Intersection, intersect, restrict
from specviz.core.toy import Context, LanguageModel, MarkovModel, speculative_distribution, target_distribution

TOY_TARGET_VOCAB = ("a", "b", "c", "d", "e")
TOY_DRAFT_VOCAB = ("c", "x", "a", "y", "b")  # a, b, c under other ids; x and y the target never spells


@dataclass(frozen=True)
class CrossCheck:
    """TLI's exact output distribution beside the target's, on the toy pair."""

    intersection: Intersection
    tli: dict[Context, float]  # every output sequence of `length` tokens -> its probability under TLI
    target: dict[Context, float]  # the same under plain sampling from p
    max_error: float  # max |TLI − p| over the sequences
    mean_lost: float  # the draft mass outside I at the first position, averaged over the target's start row


def toy_models(generator: torch.Generator) -> tuple[MarkovModel, MarkovModel]:
    """A random target chain over the target's letters and a random draft chain over the draft's strings."""
    target = MarkovModel.random(len(TOY_TARGET_VOCAB), generator, sharpness=1.5)
    draft = MarkovModel.random(len(TOY_DRAFT_VOCAB), generator, sharpness=1.5)
    return target, draft


def tli_model(draft: MarkovModel, cross: Intersection) -> LanguageModel:
    """The TLI draft at temperature 1 as a model over the target's ids: the draft reads the last committed letter
    through its own id (a letter it cannot spell leaves it at its first row), and its row restricted to I and
    renormalised is q′ (float64, so the enumeration is exact to rounding)."""
    to_draft = cross.to_draft()
    draft_index = torch.tensor(cross.draft_ids)
    target_index = torch.tensor(cross.target_ids)

    def q(context: Context) -> torch.Tensor:
        row = draft.table[to_draft.get(context[-1], 0)]  # (V_d,)
        return restrict(row, draft_index, target_index, cross.target_vocab)  # (V_t,)

    return q


def cross_check(seed: int = 0, k: int = 2, length: int = 3) -> CrossCheck:
    """Enumerate TLI's output over every sequence of `length` tokens after a start token, next to the target's."""
    target, draft = toy_models(torch.Generator().manual_seed(seed))
    cross = intersect(TOY_DRAFT_VOCAB, TOY_TARGET_VOCAB)
    q = tli_model(draft, cross)
    context = (0,)
    tli = speculative_distribution(target, q, context, k, length)
    exact = target_distribution(target, context, length)
    error = max(abs(tli.get(s, 0.0) - exact.get(s, 0.0)) for s in exact.keys() | tli.keys())
    index = torch.tensor(cross.draft_ids)
    lost = [float(1 - draft.table[i][index].sum()) for i in range(len(TOY_DRAFT_VOCAB))]
    return CrossCheck(cross, tli, exact, error, sum(lost) / len(lost))
