"""Tiny exact models and exact enumeration: the whole speculative procedure's output distribution, with no sampling.

With a vocabulary of a handful of tokens every draft sequence and every accept/reject branch can be listed, so the
claim "speculative sampling emits exactly the target's distribution" becomes an equality checked to 1e-12.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from specviz.core.verify import EXACT, Rule, accepted_mass

Context = tuple[int, ...]
LanguageModel = Callable[[Context], torch.Tensor]  # context -> (V,) next-token distribution


@dataclass(frozen=True)
class MarkovModel:
    """Next-token distribution depends on the last token only: table[last] is a (V,) distribution."""

    table: torch.Tensor  # (V, V), rows sum to 1

    def __call__(self, context: Context) -> torch.Tensor:
        return self.table[context[-1]]

    @classmethod
    def random(cls, vocab_size: int, generator: torch.Generator, sharpness: float = 1.0) -> MarkovModel:
        """Rows drawn from a softmax of Gaussian logits; larger sharpness = peakier rows."""
        logits = torch.randn(vocab_size, vocab_size, generator=generator, dtype=torch.float64) * sharpness
        return cls(logits.softmax(-1))


Judge = Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, float, torch.Tensor]]
"""(p_i, q_i) -> (mass emitted as each accepted draft (V,), total rejected mass, correction distribution (V,))."""


def judge_with(rule: Rule = EXACT) -> Judge:
    """One position of the sampler with drafts drawn from q and judged by `rule`."""

    def judge(p_i: torch.Tensor, q_i: torch.Tensor) -> tuple[torch.Tensor, float, torch.Tensor]:
        kept = accepted_mass(p_i, q_i, rule)  # (V,)
        return kept, 1.0 - kept.sum().item(), rule.resample(p_i, q_i)

    return judge


def round_outcomes(p: LanguageModel, q: LanguageModel, context: Context, k: int, judge: Judge) -> dict[Context, float]:
    """Every token sequence one round can commit at `context` with K drafts, and its exact probability."""
    outcomes: dict[Context, float] = {}

    def emit(tokens: Context, prob: float) -> None:
        outcomes[tokens] = outcomes.get(tokens, 0.0) + prob

    def walk(accepted: Context, prob: float) -> None:
        p_i = p(context + accepted)  # (V,)
        if len(accepted) == k:  # all K passed: bonus from p_{K+1}
            for token, p_t in enumerate(p_i.tolist()):
                emit(accepted + (token,), prob * p_t)
            return
        kept, rejected, resample = judge(p_i, q(context + accepted))
        for token, mass in enumerate(kept.tolist()):
            if mass > 0:
                walk(accepted + (token,), prob * mass)
        for token, r_t in enumerate(resample.tolist()):
            emit(accepted + (token,), prob * rejected * r_t)

    walk((), 1.0)
    return outcomes


def speculative_distribution(
    p: LanguageModel,
    q: LanguageModel,
    context: Context,
    k: int,
    length: int,
    rule: Rule = EXACT,
    judge: Judge | None = None,
) -> dict[Context, float]:
    """Exact distribution of the first `length` tokens from repeated rounds (K shrinks at the end, as in the engine)."""
    if length == 0:
        return {(): 1.0}
    judge = judge or judge_with(rule)
    result: dict[Context, float] = {}
    for tokens, prob in round_outcomes(p, q, context, min(k, length - 1), judge).items():
        for rest, rest_prob in speculative_distribution(
            p, q, context + tokens, k, length - len(tokens), judge=judge
        ).items():
            result[tokens + rest] = result.get(tokens + rest, 0.0) + prob * rest_prob
    return result


def target_distribution(p: LanguageModel, context: Context, length: int) -> dict[Context, float]:
    """Exact distribution of `length` tokens sampled from the target alone: the product of p's conditionals."""
    if length == 0:
        return {(): 1.0}
    result: dict[Context, float] = {}
    for token, p_t in enumerate(p(context).tolist()):
        for rest, rest_prob in target_distribution(p, context + (token,), length - 1).items():
            result[(token,) + rest] = p_t * rest_prob
    return result


def total_variation(a: dict[Context, float], b: dict[Context, float]) -> float:
    """Half the L1 distance between two distributions over sequences."""
    return 0.5 * sum(abs(a.get(key, 0.0) - b.get(key, 0.0)) for key in a.keys() | b.keys())
