"""Tiny exact models and exact enumeration: the whole speculative procedure's output distribution, with no sampling.

With a vocabulary of a handful of tokens every draft sequence and every accept/reject branch can be listed, so the
claim "speculative sampling emits exactly the target's distribution" becomes an equality checked to 1e-12.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from specviz.core.verify import EXACT, TOP_B, WITH_REPLACEMENT, Rule, accepted_mass
from specviz.errors import SettingsError

Context = tuple[int, ...]
LanguageModel = Callable[[Context], torch.Tensor]  # context -> (V,) next-token distribution


@dataclass(frozen=True, eq=False)
class MarkovModel:
    """Next-token distribution depends on the last token only: table[last] is a (V,) distribution; with a `start`
    distribution the empty context has one too (the exactness lab's shop model: the first event from START)."""

    table: torch.Tensor  # (V, V), rows sum to 1, row = previous token
    start: torch.Tensor | None = None  # (V,) the first token's distribution; None: contexts are never empty

    def __call__(self, context: Context) -> torch.Tensor:
        return self.start if not context and self.start is not None else self.table[context[-1]]

    @property
    def rows(self) -> torch.Tensor:
        """(V + 1, V): the table with the start distribution appended as row V (the state before any token)."""
        if self.start is None:
            raise ValueError("This Markov model has no start distribution: build it with start=(V,) probabilities.")
        return torch.cat([self.table, self.start[None]])

    @classmethod
    def random(cls, vocab_size: int, generator: torch.Generator, sharpness: float = 1.0) -> MarkovModel:
        """Rows drawn from a softmax of Gaussian logits; larger sharpness = peakier rows."""
        logits = torch.randn(vocab_size, vocab_size, generator=generator, dtype=torch.float64) * sharpness
        return cls(logits.softmax(-1))

    @classmethod
    def from_rows(
        cls, rows: Sequence[Sequence[float]], name: str = "table", normalise: bool = True, labels: Sequence[str] = ()
    ) -> MarkovModel:
        """An editable table: the start row first, then one row per previous token; each row normalised to sum to 1
        (or, with normalise=False, checked to). `labels` name the rows in error messages."""
        table = check_table(rows, name, labels)  # (V + 1, V)
        if normalise:
            table = table / table.sum(-1, keepdim=True)
        elif not torch.allclose(table.sum(-1), torch.ones(len(table), dtype=torch.float64), atol=1e-9):
            raise SettingsError(f"every row of the {name} must sum to 1.")
        return cls(table[1:], table[0])


def check_table(rows: Sequence[Sequence[float]], name: str, labels: Sequence[str] = ()) -> torch.Tensor:
    """(V + 1, V) float64 tensor of a typed table, or a SettingsError saying what is wrong with it (for the editor)."""
    try:
        table = torch.tensor([[float(x) for x in row] for row in rows], dtype=torch.float64)  # (V + 1, V)
    except (TypeError, ValueError) as exc:
        raise SettingsError(f"the {name} must contain only numbers.") from exc
    if table.dim() != 2 or table.shape[0] != table.shape[1] + 1 or table.shape[1] < 2:
        raise SettingsError(f"the {name} must have a START row and one row per event, one column per event.")
    if not torch.isfinite(table).all() or (table < 0).any():
        raise SettingsError(f"the {name} must contain probabilities >= 0 (no blanks, no negative numbers).")
    empty = [labels[i] if i < len(labels) else str(i) for i, s in enumerate(table.sum(-1).tolist()) if s <= 0]
    if empty:
        raise SettingsError(f"the {name} row(s) {', '.join(empty)} are all zero: each row needs some probability.")
    return table


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


def continued(p: LanguageModel, context: Context, outcomes: dict[Context, float], length: int) -> dict[Context, float]:
    """One round's outcomes, each continued by the target alone to `length` tokens: for an exact round, the target's
    own distribution over `length` tokens (a round whose q depends on where it began, as a feature head's does, is
    checked this way)."""
    result: dict[Context, float] = {}
    for tokens, prob in outcomes.items():
        for rest, rest_prob in target_distribution(p, context + tokens, length - len(tokens)).items():
            result[tokens + rest] = result.get(tokens + rest, 0.0) + prob * rest_prob
    return result


def total_variation(a: dict[Context, float], b: dict[Context, float]) -> float:
    """Half the L1 distance between two distributions over sequences."""
    return 0.5 * sum(abs(a.get(key, 0.0) - b.get(key, 0.0)) for key in a.keys() | b.keys())


def tree_round_outcomes(
    p: LanguageModel,
    q: LanguageModel,
    context: Context,
    shape: tuple[int, ...],
    how: str,
    rule: Rule = EXACT,
    update_residual: bool = True,
    soft_q_for_top_b: bool = False,
) -> dict[Context, float]:
    """Every token sequence one tree round can commit at `context`, and its exact probability.

    Children per depth from `shape`, drawn as `how` says (core/verify.py: WITH_REPLACEMENT, WITHOUT_REPLACEMENT,
    TOP_B), judged child by child as verify_tree does. No tree is ever sampled: each child's draw, accept and reject is
    a branch weighted by its probability. Only the subtree of a kept child matters, and it is drafted given that
    child's token alone, so the walk enumerates one level at a time. update_residual=False and soft_q_for_top_b=True
    are the broken variants that the tests show are not exact.
    """
    outcomes: dict[Context, float] = {}

    def emit(tokens: Context, prob: float) -> None:
        outcomes[tokens] = outcomes.get(tokens, 0.0) + prob

    def node(accepted: Context, prob: float) -> None:
        depth = len(accepted)
        p_node = p(context + accepted)  # (V,)
        if depth == len(shape):  # a leaf: the bonus from p
            for token, p_t in enumerate(p_node.tolist()):
                emit(accepted + (token,), prob * p_t)
            return
        q_node = q(context + accepted)  # (V,)
        order = q_node.argsort(descending=True, stable=True).tolist() if how == TOP_B else None
        siblings(accepted, prob, p_node, q_node, q_node, order, shape[depth], 0)

    def siblings(accepted, prob, target, q_node, left, order, b, j) -> None:
        if j == b:  # every child rejected: draw from what is left of the target
            for token, r_t in enumerate(target.tolist()):
                emit(accepted + (token,), prob * r_t)
            return
        for x, draw_prob, q_j in _child_draws(q_node, left, order, j, how, soft_q_for_top_b):
            a = float(rule.accept(target, target[x], q_j[x])) if q_j[x] > 0 else 0.0
            if a > 0:
                node(accepted + (x,), prob * draw_prob * a)
            if a < 1:
                rest = rule.resample(target, q_j) if update_residual else target
                siblings(
                    accepted,
                    prob * draw_prob * (1 - a),
                    rest,
                    q_node,
                    left.index_fill(0, torch.tensor([x]), 0.0),
                    order,
                    b,
                    j + 1,
                )

    node((), 1.0)
    return outcomes


def _child_draws(q_node, left, order, j, how, soft_q_for_top_b):
    """The j-th child's possible tokens: (token, probability of drawing it, the q its ratio uses)."""
    if how == TOP_B:
        x = order[j]
        q_j = q_node if soft_q_for_top_b else torch.nn.functional.one_hot(torch.tensor(x), len(q_node)).to(q_node)
        return [(x, 1.0, q_j)]
    q_j = q_node if how == WITH_REPLACEMENT or left.sum() <= 0 else left / left.sum()
    return [(x, q_x, q_j) for x, q_x in enumerate(q_j.tolist()) if q_x > 0]


def tree_speculative_distribution(
    p: LanguageModel, q: LanguageModel, context: Context, shape: tuple[int, ...], how: str, length: int, **broken
) -> dict[Context, float]:
    """Exact distribution of the first `length` tokens from repeated tree rounds (the tree is cut to depth
    length - 1 at the end, as the engine does)."""
    if length == 0:
        return {(): 1.0}
    result: dict[Context, float] = {}
    for tokens, prob in tree_round_outcomes(p, q, context, shape[: length - 1], how, **broken).items():
        for rest, rest_prob in tree_speculative_distribution(
            p, q, context + tokens, shape, how, length - len(tokens), **broken
        ).items():
            result[tokens + rest] = result.get(tokens + rest, 0.0) + prob * rest_prob
    return result
