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
from typing import TYPE_CHECKING

from specviz.core.lazy import lazy
from specviz.core.sampling import sample

if TYPE_CHECKING:
    import torch
else:
    torch = lazy("torch")


TOKEN, BLOCK = "token", "block"  # the verifiers of a chain: token by token (`verify`), or as a block (`verify_block`)
VERIFIERS = (TOKEN, BLOCK)


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


def typical_threshold(p: torch.Tensor, epsilon: float = 0.09, delta: float = 0.3) -> torch.Tensor:
    """Medusa's typical acceptance threshold min(ε, δ·exp(−H(p))) of each row: (..., V) -> (...). A draft passes when
    its target probability is above it, whatever the draft's q and with no random draw (FasterDecoding/Medusa
    `evaluate_posterior`, with its defaults posterior_threshold ε = 0.09 and posterior_alpha δ = 0.3). Not lossless:
    the lab shows it as a lossy shortcut."""
    entropy = -(p * (p + 1e-5).log()).sum(-1)  # (...) natural log, as Medusa computes it
    return torch.minimum(torch.full_like(entropy, epsilon), delta * (-entropy).exp())


@dataclass(frozen=True)
class Rule:
    """The two choices that make the sampler exact; the exactness lab swaps in buggy ones to show the bias.

    threshold, when set, replaces `acceptance`: a rule that reads the whole target row (Medusa's typical acceptance)
    accepts a draft x with probability 1 if p(x) > threshold(p), else 0."""

    acceptance: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = acceptance_probability
    resample: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = residual
    threshold: Callable[[torch.Tensor], torch.Tensor] | None = None

    def accept(self, p: torch.Tensor, p_x: torch.Tensor, q_x: torch.Tensor) -> torch.Tensor:
        """Acceptance probability of drafts with target probabilities p_x and draft probabilities q_x, read from the
        target rows p: p (..., V) with p_x (...) one draft per row, or p_x (..., V) every token of each row."""
        if self.threshold is None:
            return self.acceptance(p_x, q_x)
        bar = self.threshold(p)  # (...)
        if p_x.shape == p.shape:
            bar = bar.unsqueeze(-1)
        return (p_x > bar).to(p_x.dtype)


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
    accept_prob = rule.accept(p[..., :big_k, :], p_x, q_x)
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


def block_weights(p_x: torch.Tensor, q_x: torch.Tensor) -> torch.Tensor:
    """Block verification's cumulative weights w_0 = 1, w_i = min(1, w_(i-1) · p(x_i) / q(x_i)): how much of the
    target's mass the drafted prefix x_1..x_i still carries, where token-by-token verification would forget a
    surplus at each step. (..., K) -> (..., K+1)."""
    weights = [torch.ones_like(p_x[..., 0])]
    for i in range(p_x.shape[-1]):
        weights.append((weights[-1] * p_x[..., i] / q_x[..., i]).clamp(max=1.0))
    return torch.stack(weights, -1)


def block_owed(w: torch.Tensor, p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """max(0, w · p − q) over the last axis: what the target still owes after a prefix of weight w. (...), (..., V)."""
    return (w[..., None] * p - q).clamp(min=0.0)


def verify_block(
    p: torch.Tensor, q: torch.Tensor, drafts: torch.Tensor, u_accept: torch.Tensor, u_next: torch.Tensor
) -> Verdict:
    """Block verification (Sun et al., ICLR 2025, arXiv 2403.10444): the drafts judged as one block, from the same
    on-path probabilities. With the weights w_i above, stopping after i drafts (i < K) is allowed with probability

        h_i = s_i / (s_i + 1 − w_i),   s_i = Σ_x max(0, w_i · p_(i+1)(x) − q_(i+1)(x)),   h_K = w_K,

    and the block keeps its longest prefix whose stop passes (u_i ≤ h_i), not the first run of passes; the token
    after it is drawn from norm(max(0, w_τ · p_(τ+1) − q_(τ+1))), or from p_(K+1) when all K are kept. Exact, and never
    fewer tokens kept in expectation than token by token (the binary example of the paper: 11/9 against 10/9).

    Same shapes and Verdict as `verify` (without padding): accept_prob holds each h_i, passed each u_i ≤ h_i."""
    big_k = drafts.shape[-1]
    if big_k == 0:  # nothing drafted (a round trimmed to the token budget): the target's own token, as verify draws it
        return verify(p, q, drafts, u_accept, u_next)
    p_x = p[..., :big_k, :].gather(-1, drafts[..., None]).squeeze(-1)  # (..., K)
    q_x = q.gather(-1, drafts[..., None]).squeeze(-1)  # (..., K)
    w = block_weights(p_x, q_x)  # (..., K+1)
    stops = []
    for i in range(1, big_k):
        s_i = block_owed(w[..., i], p[..., i, :], q[..., i, :]).sum(-1)  # (...)
        room = s_i + (1.0 - w[..., i])  # in this order: (s + 1) - w rounded h above 1 where w = 1
        stop = (s_i / room.clamp(min=torch.finfo(p.dtype).tiny)).clamp(max=1.0)
        stops.append(torch.where(room > 0, stop, torch.zeros_like(s_i)))
    h = torch.stack([*stops, w[..., big_k]], -1)  # (..., K)
    passed = u_accept.to(h.dtype) <= h  # (..., K)
    positions = torch.arange(1, big_k + 1, device=drafts.device)
    n_accepted = (passed.long() * positions).amax(-1)  # (...) τ: the last stop that passed
    q_padded = torch.cat([q, q.new_zeros(*q.shape[:-2], 1, q.shape[-1])], -2)  # (..., K+1, V)
    stop_p, stop_q = _row(p, n_accepted), _row(q_padded, n_accepted)  # (..., V)
    owed = block_owed(_row(w[..., None], n_accepted).squeeze(-1), stop_p, stop_q)  # (..., V)
    total = owed.sum(-1, keepdim=True)
    next_dist = torch.where(total > 0, owed / total.clamp(min=torch.finfo(p.dtype).tiny), stop_p)
    next_dist = torch.where((n_accepted == big_k)[..., None], stop_p, next_dist)
    return Verdict(p_x, q_x, h, passed, n_accepted, next_dist, sample(next_dist, u_next))


def _row(dists: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """(..., R, V) and (...) row indices -> (..., V): each round's row at its own index."""
    return dists.gather(-2, index[..., None, None].expand(*index.shape, 1, dists.shape[-1])).squeeze(-2)


def accepted_mass(p: torch.Tensor, q: torch.Tensor, rule: Rule = EXACT) -> torch.Tensor:
    """q(x) * a(x): the probability that x is drafted from q and then kept, for every x. (..., V) -> (..., V)"""
    return q * rule.accept(p, p, q.clamp(min=torch.finfo(q.dtype).tiny)) * (q > 0)


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


# --- Trees: several drafts per position, verified in one target pass --------------------------------------------------
#
# A draft tree is given by its shape, children per depth: (3, 2, 1, 1) is 3 children of the root, 2 under each of
# those, then single children (3 + 6 + 6 + 6 = 21 nodes, depth 4). Nodes are numbered breadth-first, children of one
# parent consecutive and in the order they were drafted; node i's parent is parents[i] (-1 for the root). (1, 1, ..., 1)
# is the chain with K = depth. Sources: SpecInfer (Miao et al., arXiv 2305.09781) multi-step speculative sampling,
# Sequoia (Chen et al., arXiv 2402.12374) SpecTree sampling without replacement, EAGLE-2 (Li et al., arXiv 2406.16858)
# deterministic top-b trees, recursive rejection sampling (Jeon et al., arXiv 2402.14160).
#
# Why accepting along the tree is exact. Lemma (Leviathan et al.): if x ~ q' is kept with probability
# min(1, r(x)/q'(x)) and otherwise a token is drawn from norm(max(0, r - q')), the result is distributed as r, for any
# r and any q'. At a node with target r_1 = p_node, child j was drawn from q_j(. | h_j) given its elder siblings
# h_j = (x_1..x_{j-1}), and the u's are independent of the drafting. Claim: once child j is reached with history h_j
# (all elder siblings rejected), the rest of the walk emits a first token distributed as r_j(h_j), where
# r_{j+1} = norm(max(0, r_j - q_j)); after the last child (j = b + 1) the walk draws from r_{b+1} itself, so the claim
# holds there. Induction downwards on j: child j is kept with probability min(1, r_j/q_j)(x_j); if it is rejected, the
# rest emits r_{j+1} by the induction hypothesis, and r_{j+1} is a function of h_j alone (through r_j and q_j), not of
# x_j, so the lemma with r = r_j, q' = q_j(. | h_j) gives r_j.
# So the first token is distributed as p_node; a kept child continues as the same procedure one level down (its subtree
# was drafted given its own token only), and at a leaf the bonus is drawn from p_leaf. Nothing above uses how q_j
# depends on h_j, so it covers:
#   WITH_REPLACEMENT  x_j ~ q for every j (SpecInfer): q_j = q.
#   WITHOUT_REPLACEMENT  x_j ~ norm(q with x_1..x_{j-1} zeroed) (Sequoia's SpecTree): q_j is that renormalised q
#       (when the elder siblings used up all of q's support, x_j is drawn from q itself and q_j = q: still exact).
#   TOP_B  the b most likely draft tokens, deterministic (the feature heads' trees): q_j = one_hot(x_j), so a child is
#       kept with probability r_j(x_j) and a rejection zeroes x_j in r and renormalises. Putting the draft's soft q in
#       the ratio instead is NOT exact (x_j was not drawn from it); tests/core/test_tree_verify.py shows the bias.
WITH_REPLACEMENT, WITHOUT_REPLACEMENT, TOP_B = "with_replacement", "without_replacement", "top_b"
TREE_SAMPLINGS = (WITH_REPLACEMENT, WITHOUT_REPLACEMENT, TOP_B)


def tree_parents(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Children per depth -> parent of each node, breadth-first (-1 = the root). (2, 1) -> (-1, -1, 0, 1)."""
    parents: list[int] = []
    level = [-1]  # nodes of the previous depth
    for branching in shape:
        start = len(parents)
        parents += [parent for parent in level for _ in range(branching)]
        level = list(range(start, len(parents)))
    return tuple(parents)


def tree_depths(parents: tuple[int, ...]) -> tuple[int, ...]:
    """Depth of each node (1 for the root's children)."""
    depths: list[int] = []
    for parent in parents:
        depths.append(1 if parent < 0 else depths[parent] + 1)
    return tuple(depths)


def tree_size(shape: tuple[int, ...]) -> int:
    """Nodes in a tree of this shape: b1 + b1*b2 + ... ."""
    total, level = 0, 1
    for branching in shape:
        level *= branching
        total += level
    return total


def draw_children(q: torch.Tensor, b: int, u: torch.Tensor, how: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The b children of one node and, per child, the distribution it was drawn from (what its ratio must use).

    q (V,) the node's processed draft distribution (for TOP_B: any scores whose order ranks the tokens, e.g. the raw
    draft logits); u (b,) uniforms (unused for TOP_B). Returns tokens (b,) long and q_rows (b, V).
    """
    if how == TOP_B:
        tokens = q.topk(b).indices  # (b,) deterministic: the b highest-ranked tokens
        return tokens, torch.nn.functional.one_hot(tokens, q.shape[-1]).to(q.dtype)  # (b, V) one-hot q
    tokens, rows, left = [], [], q
    for j in range(b):
        row = q if how == WITH_REPLACEMENT or left.sum() <= 0 else left / left.sum()  # (V,)
        x = sample(row, u[j])
        tokens.append(x)
        rows.append(row)
        left = left.index_fill(-1, x.view(1), 0.0)  # without replacement: x cannot be drawn again
    return torch.stack(tokens), torch.stack(rows)  # (b,), (b, V)


@dataclass(frozen=True)
class TreeVerdict:
    """One tree round's decision, on the host. Node fields are per node, in node order; untried nodes have nan."""

    path: tuple[int, ...]  # accepted nodes from the root down
    tried: tuple[int, ...]  # nodes that met the accept test, in the order they met it
    target_x: tuple[float, ...]  # probability of the node's token under the target it was judged against: p at its
    #                               parent, or the residual left by its rejected elder siblings
    q_x: tuple[float, ...]  # q_j(x): probability of the node's token in the distribution it was drawn from
    accept_prob: tuple[float, ...]  # min(1, target_x / q_x)
    passed: tuple[bool, ...]  # u <= accept_prob (False for untried nodes)
    next_dist: torch.Tensor  # (V,) the residual after every child of the last path node was rejected, or p at a leaf
    next_token: int  # the correction (residual) or bonus (leaf) token
    at_leaf: bool  # True: the walk reached a leaf, next_token is a bonus; False: a correction
    against: tuple[torch.Tensor | None, ...] = ()  # per node, the (V,) distribution it was judged against (p at its
    #                                                parent, or the residual left by its rejected elder siblings)


def verify_tree(
    parents: tuple[int, ...],
    tokens: torch.Tensor,
    p: torch.Tensor,
    q: torch.Tensor,
    u_accept: torch.Tensor,
    u_next: torch.Tensor,
    rule: Rule = EXACT,
    update_residual: bool = True,
) -> TreeVerdict:
    """Walk the tree from the root, accepting exactly (see the proof above).

    parents (N,) as from tree_parents; tokens (N,); p (N+1, V): row 0 the target after the prefix, row i+1 the target
    after node i; q (N, V): row i the distribution node i was drawn from given its elder siblings (draw_children's
    q_rows); u_accept (N,) one uniform per node; u_next () for the final draw. update_residual=False is the broken
    variant (siblings all judged against the unchanged p), kept only as a negative control for the tests.
    """
    n = len(parents)
    children: list[list[int]] = [[] for _ in range(n + 1)]  # index 0 = root, i+1 = node i
    for node, parent in enumerate(parents):
        children[parent + 1].append(node)
    nan = float("nan")
    target_x, q_x, accept_prob, passed = [nan] * n, [nan] * n, [nan] * n, [False] * n
    against: list[torch.Tensor | None] = [None] * n
    path, tried, node = [], [], -1
    while True:
        target = p[node + 1]  # (V,) what the next token must follow
        kept = None
        for child in children[node + 1]:
            x = tokens[child]
            a = rule.accept(target, target[x], q[child, x])
            target_x[child], q_x[child], accept_prob[child] = float(target[x]), float(q[child, x]), float(a)
            against[child] = target
            tried.append(child)
            if float(u_accept[child]) <= float(a):
                passed[child], kept = True, child
                break
            if update_residual:
                target = rule.resample(target, q[child])  # (V,) what the younger siblings must now produce
        if kept is None:
            token = int(sample(target, u_next))
            return TreeVerdict(
                tuple(path),
                tuple(tried),
                *map(tuple, (target_x, q_x, accept_prob, passed)),
                target,
                token,
                at_leaf=not children[node + 1],
                against=tuple(against),
            )
        path.append(kept)
        node = kept
