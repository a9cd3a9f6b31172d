"""The accept/reject maths of speculative sampling (Leviathan et al. 2023; Chen et al. 2023), as pure functions.

Names, used the same way everywhere in specviz:
    p   the target's processed distribution at a position      (K+1, V) for one round
    q   the draft's processed distribution the token was drawn from   (K, V)
    K   draft length: tokens proposed per round (the paper's gamma)
    alpha  per-token acceptance probability; given the prefix its expectation is overlap(p, q) = sum_x min(p, q)
    tau    mean tokens committed per target pass (includes the correction or bonus token)
    c      cost of one draft step as a fraction of one target step

Rule per drafted token x_i: accept if u_i <= min(1, p_i(x_i) / q_i(x_i)); at the first rejection draw the correction
from norm(max(0, p_i - q_i)); if all K pass, draw a bonus token from p_{K+1}. A deterministic drafter is a one-hot q.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from specviz.core.sampling import sample


def acceptance_probability(p_x: torch.Tensor, q_x: torch.Tensor) -> torch.Tensor:
    """min(1, p(x) / q(x)) elementwise; q(x) > 0 because x was drawn from q."""
    return (p_x / q_x).clamp(max=1.0)


def residual(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """norm(max(0, p - q)) over the last axis: what p still owes after q's accepted mass.

    Guard: if the positive part sums to 0 (p == q up to rounding, so rejection was a numerical accident), use p.
    """
    owed = (p - q).clamp(min=0.0)
    total = owed.sum(-1, keepdim=True)
    return torch.where(total > 0, owed / total.clamp(min=torch.finfo(p.dtype).tiny), p)


@dataclass(frozen=True)
class Rule:
    """The two choices that make the sampler exact; the exactness lab swaps in buggy ones to show the bias."""

    acceptance: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = acceptance_probability
    resample: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = residual


EXACT = Rule()


@dataclass(frozen=True)
class Verdict:
    """One round's decision (per run, when batched); every field is a tensor on the models' device (read them with one
    host sync)."""

    p_x: torch.Tensor  # (..., K) target probability of each draft token
    q_x: torch.Tensor  # (..., K) draft probability of each draft token
    accept_prob: torch.Tensor  # (..., K) min(1, p/q)
    passed: torch.Tensor  # (..., K) bool: u_i <= accept_prob_i (only the leading run counts; padding never passes)
    n_accepted: torch.Tensor  # (...) long: length of the leading run of passes
    next_dist: torch.Tensor  # (..., V) residual at the first rejection, or p_{k+1} when all k passed
    next_token: torch.Tensor  # (...) long: the correction or bonus token


def verify(
    p: torch.Tensor,
    q: torch.Tensor,
    drafts: torch.Tensor,
    u_accept: torch.Tensor,
    u_next: torch.Tensor,
    rule: Rule = EXACT,
    k: torch.Tensor | None = None,
) -> Verdict:
    """Accept the longest passing prefix of the drafts and draw the token that follows it.

    p (..., K+1, V), q (..., K, V), drafts (..., K), u_accept (..., K), u_next (...): leading dims are independent
    rounds (one round in the engine, N runs at once in the lab). k (...), optional: a round that drafted only its first
    k tokens (the rest is padding, never judged). Works for K = 0 (plain decoding: sample p_1). No host sync here.
    """
    big_k = drafts.shape[-1]
    p_x = p[..., :big_k, :].gather(-1, drafts[..., None]).squeeze(-1)  # (..., K)
    q_x = q.gather(-1, drafts[..., None]).squeeze(-1)  # (..., K)
    accept_prob = rule.acceptance(p_x, q_x)
    passed = u_accept.to(accept_prob.dtype) <= accept_prob  # (..., K)
    if k is not None:
        passed = passed & (torch.arange(big_k, device=drafts.device) < k[..., None])
    n_accepted = passed.long().cumprod(-1).sum(-1)  # (...) leading run of passes
    # With q extended by an all-zero row, "resample at the stopping position" covers both cases:
    # a rejection at i draws from norm(max(0, p_i - q_i)); all k accepted draws the bonus from p_{k+1}.
    q_padded = torch.cat([q, q.new_zeros(*q.shape[:-2], 1, q.shape[-1])], -2)  # (..., K+1, V)
    stop_p, stop_q = _row(p, n_accepted), _row(q_padded, n_accepted)  # (..., V)
    next_dist = rule.resample(stop_p, stop_q) if big_k else stop_p
    all_passed = n_accepted == (big_k if k is None else k)  # (...)
    next_dist = torch.where(all_passed[..., None], stop_p, next_dist)
    return Verdict(p_x, q_x, accept_prob, passed, n_accepted, next_dist, sample(next_dist, u_next))


def _row(dists: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """(..., R, V) and (...) row indices -> (..., V): each round's row at its own index."""
    return dists.gather(-2, index[..., None, None].expand(*index.shape, 1, dists.shape[-1])).squeeze(-2)


def accepted_mass(p: torch.Tensor, q: torch.Tensor, rule: Rule = EXACT) -> torch.Tensor:
    """q(x) * a(x): the probability that x is drafted from q and then kept, for every x. (..., V) -> (..., V)"""
    return q * rule.acceptance(p, q.clamp(min=torch.finfo(q.dtype).tiny)) * (q > 0)


def next_token_distribution(p: torch.Tensor, q: torch.Tensor, rule: Rule = EXACT) -> torch.Tensor:
    """Exact distribution of the first committed token when x ~ q is proposed and judged against p.

    P(x) = q(x) * a(x) + (1 - sum_y q(y) a(y)) * resample(p, q)(x); equals p for the exact rule.
    """
    kept = accepted_mass(p, q, rule)  # (..., V)
    rejected_mass = 1.0 - kept.sum(-1, keepdim=True)
    return kept + rejected_mass * rule.resample(p, q)


def overlap(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """sum_x min(p(x), q(x)) = 1 - TV(p, q): the probability that a draft x ~ q is accepted against p (the expected
    alpha at one position). Called the overlap to keep it apart from the measured rates in core/stats.py."""
    return torch.minimum(p, q).sum(-1)
