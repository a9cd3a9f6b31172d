"""Expected tokens per target pass for a draft tree, and what the tree costs: the calculator's tree model.

The acceptance model is Sequoia's positional acceptance assumption (Chen et al. 2024, "Sequoia: Scalable, Robust,
and Hardware-aware Speculative Decoding", arXiv 2402.12374, section 3): whether a drafted token is accepted depends
only on its position among its siblings. Here a_i is the *conditional* rate: the i-th child is accepted with
probability a_i given that its elder siblings were rejected (for a chain, a_1 = α). The unconditional chance that
the i-th child is the one accepted is P_i = a_i · Π_{j<i} (1 − a_j), and a node is on the accepted path with
probability f(v) = Π over the nodes on the path from the root to v of P_{position}. (Sequoia's F(T) = Σ_v f(v)
multiplies per-position probabilities along the path; for F(T) to be an expectation they must be these P_i, the chance
that the i-th child is the accepted one. The calculator asks for the conditional a_i, as the chain's α is.) The
expected tokens per round is then

    E[tree] = 1 + Σ_{v in tree} f(v)          (the 1 is the correction or bonus token every round emits)

For a tree given by children per depth (b_1, …, b_D) this equals 1 + Σ_d Π_{l≤d} A_l with A_l = 1 − Π_{i≤b_l}(1 − a_i),
the chance that one of the b_l children at depth l is accepted: the chain formula of `theory.positional_expected_tokens`
with A_l in place of α_l (the tests check both agree). (1, 1, …, 1) with a_1 = α is the chain, E(α, K).

Assumptions, stated where the page shows the numbers: rates depend on the sibling position only (not on depth or on
the parent's token), and a draft with children sampled with replacement may draw the same token twice, which the
model does not see. Costs: one draft forward per depth, batched over every node at that depth, costs c (one draft
step), so drafting costs D·c; the verify pass over the N nodes (N + 1 tokens) costs v(N) from `theory.VerifyCost`,
flat (v = 1) when a pass is memory-bound as on a GPU at batch 1, growing with N when compute-bound as on this CPU.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from specviz import methods
from specviz.core.settings import check_tree_shape
from specviz.core.theory import SEARCH_LIMIT, VerifyCost, best_k, expected_tokens
from specviz.core.verify import tree_parents, tree_size
from specviz.errors import SettingsError

MAX_SIBLINGS = 16  # per-sibling rates a caller may give (settings.MAX_BRANCHING: the widest node the engine drafts)


def _finite_in_unit(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and 0 <= x <= 1


def check_rates(rates: Sequence[float]) -> tuple[float, ...]:
    """Validated conditional per-sibling rates a_1, a_2, …"""
    rates = tuple(rates)
    if not rates or len(rates) > MAX_SIBLINGS:
        raise SettingsError(f"give between 1 and {MAX_SIBLINGS} per-sibling acceptance rates.")
    if not all(_finite_in_unit(a) for a in rates):
        raise SettingsError(f"every per-sibling acceptance rate must be a number from 0 to 1; got {list(rates)}.")
    return tuple(float(a) for a in rates)


def decayed_rates(alpha: float, decay: float, width: int) -> tuple[float, ...]:
    """Conditional rates a_i = α · decay^(i−1) for i = 1..width: each younger sibling is a worse guess."""
    if not (_finite_in_unit(alpha) and _finite_in_unit(decay)):
        raise SettingsError(f"α and the decay must be numbers from 0 to 1; got α {alpha!r}, decay {decay!r}.")
    return tuple(alpha * decay**i for i in range(width))


def sibling_probabilities(rates: Sequence[float], width: int) -> tuple[float, ...]:
    """P_i = a_i · Π_{j<i}(1 − a_j) for i = 1..width: the chance that the i-th child is the one accepted (at most
    one is). Children past the last rate given reuse the last rate."""
    out, rejected_so_far = [], 1.0
    for i in range(width):
        a = rates[min(i, len(rates) - 1)]
        out.append(rejected_so_far * a)
        rejected_so_far *= 1.0 - a
    return tuple(out)


def node_path_probabilities(parents: Sequence[int], rates: Sequence[float]) -> tuple[float, ...]:
    """Sequoia's f(v) for each node: the chance that the accepted path runs through it. Nodes in tree_parents order
    (a parent before its children; siblings in the order they are judged)."""
    rates = check_rates(rates)
    probs = sibling_probabilities(rates, max((list(parents).count(p) for p in set(parents)), default=1))
    f: list[float] = []
    seen: dict[int, int] = {}  # parent -> its children met so far
    for parent in parents:
        position = seen.get(parent, 0)
        seen[parent] = position + 1
        f.append((1.0 if parent < 0 else f[parent]) * probs[position])
    return tuple(f)


def tree_expected_tokens(shape: Sequence[int], rates: Sequence[float]) -> float:
    """E[tokens per target pass] = 1 + Σ_v f(v) (Sequoia's F(T), with the always-emitted token)."""
    return 1.0 + math.fsum(node_path_probabilities(tree_parents(tuple(shape)), rates))


def check_shape(shape: tuple[int, ...]) -> None:
    """A shape the tree method would run (not empty, and within the engine's limits)."""
    if not shape:
        raise SettingsError(methods.NEEDS_SHAPE)
    check_tree_shape(shape)


def parse_shape(text: str) -> tuple[int, ...]:
    """'3,2,1,1' -> (3, 2, 1, 1), checked as the engine checks a tree (settings.check_tree_shape)."""
    parts = [p for p in text.replace(",", " ").split() if p]
    try:
        shape = tuple(int(p) for p in parts)
    except ValueError as exc:
        raise SettingsError(
            f"a tree shape is whole numbers of children per depth, e.g. 3,2,1,1; got {text!r}."
        ) from exc
    check_shape(shape)
    return shape


# ---------------------------------------------------------------------------------------------------------------------
# Costs


def verify_cost_for(verify: VerifyCost, nodes: int) -> float:
    """v(N) for a pass over N nodes (N + 1 tokens, as v(K) for K drafts). A measured model that stops short of N is
    extended along the least-squares line through its measured points: an extrapolation, and the page says so."""
    if verify.kind != "measured" or nodes <= verify.k_max:
        return verify(nodes)
    ks = range(1, verify.k_max + 1)
    if verify.k_max == 1:
        return verify.values[0]
    mean_k, mean_v = sum(ks) / len(ks), sum(verify.values) / len(ks)
    slope = sum((k - mean_k) * (v - mean_v) for k, v in zip(ks, verify.values)) / sum((k - mean_k) ** 2 for k in ks)
    return max(verify.values[-1] + max(slope, 0.0) * (nodes - verify.k_max), verify.values[-1])


@dataclass(frozen=True)
class RoundPlan:
    """One way to fill a target pass: its expected tokens, what a round costs, and the predicted speedup."""

    label: str
    nodes: int  # drafted tokens the verify pass reads
    depth: int  # draft forwards per round (a chain: K; a tree: one per depth)
    expected_tokens: float
    verify_cost: float  # v(nodes), in target steps
    round_cost: float  # depth · c + v(nodes)

    @property
    def speedup(self) -> float:
        return self.expected_tokens / self.round_cost


def _plan(label: str, nodes: int, depth: int, e: float, c: float, verify: VerifyCost) -> RoundPlan:
    v = verify_cost_for(verify, nodes)
    return RoundPlan(label, nodes, depth, e, v, depth * c + v)


@dataclass(frozen=True)
class TreeComparison:
    """A tree next to the chain with the same node budget, the chain of the same depth, and the best chain."""

    shape: tuple[int, ...]
    rates: tuple[float, ...]  # conditional per-sibling rates; the chains use a_1 as their α
    c: float
    verify: VerifyCost
    tree: RoundPlan
    same_nodes: RoundPlan  # chain with K = N
    same_depth: RoundPlan  # chain with K = D
    best_chain: RoundPlan  # the chain K in 1..N (at most SEARCH_LIMIT) with the largest speedup under these costs

    @property
    def pays(self) -> bool:
        """Does the tree beat every chain (K up to its node count) under these costs?"""
        return self.tree.speedup > self.best_chain.speedup

    def verdict(self) -> str:
        """One plain sentence: does the tree pay here, and why."""
        t, d, best = self.tree, self.same_depth, self.best_chain
        gain, extra = t.expected_tokens - d.expected_tokens, t.verify_cost - d.verify_cost
        head = (
            f"The tree's {t.nodes - d.nodes} extra nodes buy {gain:.2f} more tokens per pass than the chain of the "
            f"same depth and add {extra:.2f} target steps to the verify pass"
        )
        score = f"{t.speedup:.2f}× against {best.speedup:.2f}× for the best chain, K = {best.nodes}"
        if self.pays:
            return (
                f"{head}: the tree pays ({score}). Trees pay when the draft is cheap and the verify cost stays nearly "
                "flat as nodes are added, as on a GPU at batch 1."
            )
        if extra > 1e-9:
            return (
                f"{head}: the tree does not pay ({score}). When the verify pass grows with every node (as it does on "
                "this CPU), the extra tokens cost more than they bring."
            )
        return (
            f"{head}: the tree does not pay ({score}). The extra nodes are free here, but a chain does at least as "
            "well: the younger siblings are rarely accepted, or the draft steps of a longer chain are cheap enough."
        )


def compare_tree(shape: Sequence[int], rates: Sequence[float], c: float, verify: VerifyCost) -> TreeComparison:
    """The tree model's numbers for one shape, per-sibling rates, draft cost c and verify cost model."""
    shape, rates = tuple(shape), check_rates(rates)
    check_shape(shape)
    if not (isinstance(c, (int, float)) and math.isfinite(c) and c >= 0):
        raise SettingsError(f"c (draft step cost / target step cost) must be a number >= 0; got {c!r}.")
    n, depth, alpha = tree_size(shape), len(shape), rates[0]
    k_top = min(n, SEARCH_LIMIT)
    k_best = best_k(alpha, c, _search_model(verify, k_top), k_top)[0]
    return TreeComparison(
        shape,
        rates,
        c,
        verify,
        _plan("tree " + ",".join(map(str, shape)), n, depth, tree_expected_tokens(shape, rates), c, verify),
        _plan(f"chain K = {n} (same nodes)", n, n, expected_tokens(alpha, n), c, verify),
        _plan(f"chain K = {depth} (same depth)", depth, depth, expected_tokens(alpha, depth), c, verify),
        _plan(f"best chain, K = {k_best}", k_best, k_best, expected_tokens(alpha, k_best), c, verify),
    )


def _search_model(verify: VerifyCost, k_top: int) -> VerifyCost:
    """The verify model as best_k searches it: measured values extended to k_top as verify_cost_for extends them."""
    if verify.kind != "measured" or verify.k_max >= k_top:
        return verify
    return VerifyCost.measured([verify_cost_for(verify, k) for k in range(1, k_top + 1)])


def shape_table(shapes: Sequence[Sequence[int]], rates: Sequence[float], c: float, verify: VerifyCost) -> list[dict]:
    """A few shapes side by side: nodes, depth, E, v(N), predicted speedup."""
    rows = []
    for shape in shapes:
        lane = compare_tree(shape, rates, c, verify).tree
        rows.append(
            {
                "shape": ",".join(map(str, shape)),
                "nodes": lane.nodes,
                "depth": lane.depth,
                "expected_tokens": lane.expected_tokens,
                "verify_cost": lane.verify_cost,
                "speedup": lane.speedup,
            }
        )
    return rows


COMPARE_SHAPES = ((1, 1, 1, 1), (2, 1, 1, 1), (2, 2, 1, 1), (3, 2, 1, 1), (4, 2, 2, 1))

# Measured here, given to this page as figures (not re-measured when the page runs): 2-core AMD EPYC (torch AVX512),
# the bundled pair, 10 code prompts, greedy, float32, 48 new tokens. τ = tokens committed per target pass.
CPU_TREE_MEASUREMENT = "2-core AMD EPYC (torch, AVX512), bundled pair, 10 code prompts, greedy, float32, 48 new tokens"
CPU_TREE_TAU = (
    ("chain K = 4", 2.70),
    ("tree 1,1,1,1", 2.70),
    ("tree 2,2,1,1", 3.22),
    ("tree 3,2,1,1", 3.45),
    ("tree 4,2,2,1", 3.66),
)
CPU_TREE_WALL = "no wall-clock gain over the chain on that CPU"
