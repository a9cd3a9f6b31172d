"""Trees: the shop model with a draft tree per round (children with or without replacement, or top-b one-hot), the
real verify_tree on sampled trees next to the exact enumeration (core/toy.py), and two broken switches."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from specviz.core.chisq import Chi2Result, chi2_goodness_of_fit
from specviz.core.lab.experiments import check_counts, verdict
from specviz.core.lab.monte_carlo import RunStats, as_vector, sequence_counts
from specviz.core.sampling import uniforms
from specviz.core.toy import Context, LanguageModel, MarkovModel, target_distribution, tree_speculative_distribution
from specviz.core.verify import TOP_B, WITH_REPLACEMENT, WITHOUT_REPLACEMENT, draw_children, tree_parents, verify_tree


@dataclass(frozen=True)
class TreeVariant:
    """One tree sampler: how children are drawn (core/verify.py TREE_SAMPLINGS), and the two broken switches."""

    key: str
    label: str
    how: str  # WITH_REPLACEMENT, WITHOUT_REPLACEMENT or TOP_B
    why: str  # why it is exact, or where its bias comes from
    update_residual: bool = True  # False: every sibling is judged against the unchanged p (broken)
    soft_q_for_top_b: bool = False  # True: deterministic top-b children judged with the draft's soft q (broken)

    @property
    def broken(self) -> dict:
        """The switches as toy.tree_round_outcomes takes them."""
        return {"update_residual": self.update_residual, "soft_q_for_top_b": self.soft_q_for_top_b}


TREE_VARIANTS = (
    TreeVariant(
        "with_replacement",
        "sampled with replacement (SpecInfer)",
        WITH_REPLACEMENT,
        "each child is drawn from q; after a rejected child the target becomes the residual norm(max(0, p − q)) and "
        "the next child is judged against it, so every rejection hands on exactly the mass still owed",
    ),
    TreeVariant(
        "without_replacement",
        "sampled without replacement (Sequoia)",
        WITHOUT_REPLACEMENT,
        "each child is drawn from q with its elder siblings removed and renormalised, and judged against that q: the "
        "ratio always uses the distribution the child really came from",
    ),
    TreeVariant(
        "top_b",
        "top-b children, one-hot q (greedy draft)",
        TOP_B,
        "the b most likely draft tokens are certain picks, so each counts as a one-hot q: kept with probability r(x), "
        "and a rejection removes x from the target r",
    ),
    TreeVariant(
        "no_residual",
        "no residual update between siblings",
        WITH_REPLACEMENT,
        "every sibling is judged against the unchanged p: a token the first child already had its chance at gets a "
        "second full chance, so tokens the draft likes are emitted too often",
        update_residual=False,
    ),
    TreeVariant(
        "soft_q_top_b",
        "top-b children judged with the soft q",
        TOP_B,
        "the children are the draft's top tokens, chosen with certainty, but min(1, p/q) uses their soft q(x) < 1: "
        "the ratio is not the probability the child was proposed with, so the draft's favourites are over-kept",
        soft_q_for_top_b=True,
    ),
)
TREE_VARIANTS_BY_KEY = {v.key: v for v in TREE_VARIANTS}


def tree_variant(how: str, update_residual: bool = True, soft_q_for_top_b: bool = False) -> TreeVariant:
    """The sampler for one setting of the page's controls: a listed variant, or the listed broken one(s) combined.
    The soft q only matters for top-b children (sampled children are judged with the q they came from anyway)."""
    soft = soft_q_for_top_b and how == TOP_B
    exact = next(v for v in TREE_VARIANTS[:3] if v.how == how)
    broken = [
        v for v in TREE_VARIANTS[3:] if (not update_residual and not v.update_residual) or (soft and v.soft_q_for_top_b)
    ]
    if not broken:
        return exact
    if len(broken) == 1 and broken[0].how == how:
        return broken[0]
    return TreeVariant(
        "+".join([how] + [v.key for v in broken]),
        f"{exact.label}, " + " and ".join(v.label for v in broken),
        how,
        "; ".join(v.why for v in broken),
        update_residual,
        soft,
    )


TREE_SHAPES = ((2,), (2, 1), (3, 1), (2, 2), (3, 2, 1))  # small enough to enumerate over four events in a moment


def tree_variant_distribution(
    p: LanguageModel, q: LanguageModel, shape: tuple[int, ...], length: int, variant: TreeVariant
) -> dict[Context, float]:
    """Exact distribution of the first `length` tokens from repeated tree rounds of `variant` (by enumeration)."""
    return tree_speculative_distribution(p, q, (), shape, variant.how, length, **variant.broken)


def tree_round(
    p: LanguageModel, q: LanguageModel, context: Context, shape: tuple[int, ...], variant: TreeVariant, u: torch.Tensor
) -> Context:
    """One tree round by the real pure functions: draw_children per node, then verify_tree. u (2N + 1,) uniforms:
    N for the draws, N for the accept tests, one for the correction or bonus. Returns the tokens it commits."""
    parents = tree_parents(shape)
    n = len(parents)
    tokens: list[int] = []
    q_rows: list[torch.Tensor] = []
    contexts = [context]  # contexts[i + 1]: the context after node i
    level = [-1]  # the nodes of the previous depth (-1: the root)
    for b in shape:
        below = []
        for parent in level:
            q_node = q(contexts[parent + 1])  # (V,)
            x, rows = draw_children(q_node, b, u[len(tokens) : len(tokens) + b], variant.how)  # (b,), (b, V)
            if variant.soft_q_for_top_b:
                rows = q_node.expand(b, -1)  # the broken variant: the soft q, not what the child was drawn from
            for token, row in zip(x.tolist(), rows):
                tokens.append(token)
                q_rows.append(row)
                contexts.append(contexts[parent + 1] + (token,))
                below.append(len(tokens) - 1)
        level = below
    p_rows = torch.stack([p(c) for c in contexts])  # (N + 1, V)
    q_all = torch.stack(q_rows) if q_rows else p_rows[:0]  # (N, V)
    v = verify_tree(
        parents,
        torch.tensor(tokens, dtype=torch.long),
        p_rows,
        q_all,
        u[n : 2 * n],
        u[2 * n],
        update_residual=variant.update_residual,
    )
    return tuple(tokens[i] for i in v.path) + (v.next_token,)


def sample_tree(
    p: LanguageModel,
    q: LanguageModel,
    shape: tuple[int, ...],
    variant: TreeVariant,
    runs: int,
    length: int,
    generator: torch.Generator,
) -> RunStats:
    """`runs` sequences of `length` tokens from repeated tree rounds (the tree cut to depth length − 1 at the end, as
    the engine and the enumeration do). One run at a time: each round is the real verify_tree on one small tree."""
    out = torch.empty(runs, length, dtype=torch.long)
    passes = 0
    for run in range(runs):
        seq: Context = ()
        while len(seq) < length:
            cut = shape[: length - len(seq) - 1]
            n = len(tree_parents(cut))
            seq += tree_round(p, q, seq, cut, variant, uniforms(generator, 2 * n + 1))
            passes += 1
        out[run] = torch.tensor(seq[:length])
    return RunStats(out, passes, 0, 0)


@dataclass(frozen=True)
class TreeCheck:
    """One tree sampler against the target: exact distance by enumeration, and a χ² test on samples."""

    variant: TreeVariant
    exact: torch.Tensor  # (V^length,) the variant's exact output distribution
    max_abs_diff: float  # max over sequences of |exact − p|
    tv: float  # total variation from p
    chi2: Chi2Result  # the variant's samples against p's exact distribution
    passes_per_token: float  # target passes per committed token in the samples (plain decoding: 1)

    @property
    def verdict(self) -> str:
        return verdict(self.max_abs_diff, self.chi2.p_value)


def tree_checks(
    p: MarkovModel,
    q: MarkovModel,
    shape: tuple[int, ...],
    samples: int = 4000,
    seed: int = 0,
    variants: Sequence[TreeVariant] = TREE_VARIANTS,
) -> tuple[torch.Tensor, list[TreeCheck]]:
    """p's exact distribution over sequences of depth + 1 events (the most one round commits), and every variant's
    exact distance from it and χ² p-value on `samples` runs (fixed seed per variant)."""
    length = len(shape) + 1
    check_counts(1, samples, length)
    vocab = p.table.shape[-1]
    target = as_vector(target_distribution(p, (), length), vocab, length)
    checks = []
    for index, variant in enumerate(variants):
        exact = as_vector(tree_variant_distribution(p, q, shape, length, variant), vocab, length)
        runs = sample_tree(p, q, shape, variant, samples, length, torch.Generator().manual_seed(seed + index))
        checks.append(
            TreeCheck(
                variant,
                exact,
                float((exact - target).abs().max()),
                0.5 * float((exact - target).abs().sum()),
                chi2_goodness_of_fit(sequence_counts(runs, vocab), target),
                runs.passes / (runs.runs * length),
            )
        )
    return target, checks
