"""Tree verification (core/verify.py verify_tree): hand-built cases, exact enumeration over a small vocabulary, the
negative controls that must fail, and a chi-squared Monte-Carlo check of the pure function itself."""

from __future__ import annotations

import math

import pytest
import torch

from specviz.core import chisq, lab
from specviz.core.sampling import uniforms
from specviz.core.toy import MarkovModel, target_distribution, total_variation, tree_speculative_distribution
from specviz.core.verify import (
    TOP_B,
    TREE_SAMPLINGS,
    WITH_REPLACEMENT,
    WITHOUT_REPLACEMENT,
    draw_children,
    residual,
    tree_depths,
    tree_parents,
    tree_size,
    verify_tree,
)

T = lambda *rows: torch.tensor(rows, dtype=torch.float64)  # noqa: E731


def test_shape_helpers():
    assert tree_parents((2, 1)) == (-1, -1, 0, 1)  # two root children, one child under each
    assert tree_parents((1, 1, 1)) == (-1, 0, 1)  # the chain
    assert tree_size((3, 2, 1, 1)) == 3 + 6 + 6 + 6
    assert tree_depths(tree_parents((2, 2))) == (1, 1, 2, 2, 2, 2)


def test_first_child_accepted_then_its_leaf_gets_the_bonus():
    # Tree (2, 1): nodes 0, 1 under the root; node 2 under 0, node 3 under 1. V = 3.
    parents = tree_parents((2, 1))
    tokens = torch.tensor([0, 1, 2, 2])
    p = T([0.5, 0.3, 0.2], [0.0, 0.0, 1.0], [0.1, 0.1, 0.8], [1.0, 0.0, 0.0], [0.2, 0.2, 0.6])  # root, after 0..3
    q = T([0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 1.0])
    # node 0 (token 0): p(0)/q(0) = 0.5/0.5 = 1 -> accepted whatever u; node 2 (token 2) under it: p after node 0 gives
    # token 2 probability 1, q = 1 -> accepted; node 2 is a leaf: the bonus comes from p after node 2 = (1, 0, 0)
    v = verify_tree(parents, tokens, p, q, T(0.9, 0.5, 0.9, 0.5), torch.tensor(0.95, dtype=torch.float64))
    assert v.path == (0, 2)
    assert v.tried == (0, 2)
    assert v.at_leaf
    assert v.next_token == 0
    assert math.isnan(v.accept_prob[1])  # node 1 never tried


def test_rejected_child_updates_the_residual_for_its_sibling():
    # Root p = (0.2, 0.5, 0.3), children drawn with replacement from q = (0.6, 0.4, 0).
    parents = tree_parents((2,))
    tokens = torch.tensor([0, 1])
    p = T([0.2, 0.5, 0.3], [1, 0, 0], [1, 0, 0])
    q = T([0.6, 0.4, 0.0], [0.6, 0.4, 0.0])
    # child 0 (token 0): a = 0.2/0.6 = 1/3, u = 0.5 -> rejected; residual = norm(max(0, p - q)) = (0, 0.1, 0.3)/0.4
    # child 1 (token 1): judged against the residual: a = min(1, 0.25/0.4) = 0.625, u = 0.7 -> rejected
    # both rejected: draw from norm(max(0, r - q)) = (0, 0, 0.75)/0.75 -> token 2
    v = verify_tree(parents, tokens, p, q, T(0.5, 0.7), torch.tensor(0.1, dtype=torch.float64))
    assert v.path == ()
    assert v.tried == (0, 1)
    assert not v.at_leaf
    assert v.accept_prob[0] == pytest.approx(1 / 3)
    assert v.target_x[1] == pytest.approx(0.25)
    assert v.accept_prob[1] == pytest.approx(0.625)
    assert v.next_token == 2
    assert v.next_dist.tolist() == pytest.approx([0, 0, 1])


def test_second_sibling_accepted_after_the_first_is_rejected():
    parents = tree_parents((2,))
    tokens = torch.tensor([0, 1])
    p = T([0.2, 0.5, 0.3], [1, 0, 0], [0, 0, 1])
    q = T([0.6, 0.4, 0.0], [0.6, 0.4, 0.0])
    # child 0 rejected (u = 0.5 > 1/3); child 1 against the residual: a = 0.625, u = 0.6 -> accepted, a leaf:
    # the bonus comes from p after node 1 = (0, 0, 1) -> token 2
    v = verify_tree(parents, tokens, p, q, T(0.5, 0.6), torch.tensor(0.1, dtype=torch.float64))
    assert v.path == (1,)
    assert v.at_leaf
    assert v.next_token == 2


def test_top_b_children_are_one_hot():
    # Greedy target: p one-hot on token 1. Top-2 children of the draft: tokens 0 and 1, q one-hot.
    parents = tree_parents((2,))
    tokens, q = draw_children(T(0.7, 0.2, 0.1), 2, T(0.5, 0.5), TOP_B)
    assert tokens.tolist() == [0, 1]
    assert q.tolist() == [[1, 0, 0], [0, 1, 0]]
    p = T([0, 1, 0], [0, 0, 1], [0, 0, 1])
    # child 0 (token 0): a = p(0) = 0 -> rejected whatever u; residual = p with 0 zeroed = p
    # child 1 (token 1): a = p(1) = 1 -> accepted whatever u; leaf: bonus = argmax of p after node 1 = 2
    v = verify_tree(parents, tokens, p, q, T(1e-9, 1.0), torch.tensor(0.5, dtype=torch.float64))
    assert v.path == (1,)
    assert v.next_token == 2


def test_children_without_replacement_never_repeat_and_fall_back_when_q_runs_out():
    q = T(0.5, 0.5, 0.0)  # only two tokens possible, three children asked
    tokens, rows = draw_children(q, 3, T(0.3, 0.3, 0.3), WITHOUT_REPLACEMENT)
    assert tokens[:2].tolist() == [0, 1]
    assert rows[1].tolist() == [0, 1, 0]  # after 0 is drawn, q renormalised without it
    assert rows[2].tolist() == [0.5, 0.5, 0]  # support used up: drawn from q itself (still exact)
    tokens, rows = draw_children(q, 3, T(0.3, 0.3, 0.3), WITH_REPLACEMENT)
    assert tokens.tolist() == [0, 0, 0]
    assert all(r.tolist() == q.tolist() for r in rows)


@pytest.fixture(scope="module")
def markov():
    g = torch.Generator().manual_seed(7)
    return MarkovModel.random(4, g, 2.0), MarkovModel.random(4, g, 2.0)


@pytest.mark.parametrize("how", TREE_SAMPLINGS)
@pytest.mark.parametrize("shape", [(2,), (3, 2, 1), (1, 1, 1), (4, 1), (2, 2)])
def test_tree_rounds_emit_exactly_p(markov, how, shape):
    p, q = markov
    tv = total_variation(tree_speculative_distribution(p, q, (0,), shape, how, 3), target_distribution(p, (0,), 3))
    assert tv < 1e-9


def test_exact_with_a_sparse_q_that_runs_out_of_tokens(markov):
    p, _ = markov
    q = MarkovModel(T(*[[0.7, 0.3, 0, 0]] * 4))  # support of 2 tokens, 3 children without replacement
    for how in TREE_SAMPLINGS:
        tv = total_variation(tree_speculative_distribution(p, q, (0,), (3, 1), how, 2), target_distribution(p, (0,), 2))
        assert tv < 1e-9


@pytest.mark.parametrize("how", [WITH_REPLACEMENT, WITHOUT_REPLACEMENT])
def test_control_no_residual_update_between_siblings_is_biased(markov, how):
    p, q = markov
    broken = tree_speculative_distribution(p, q, (0,), (3, 1), how, 2, update_residual=False)
    assert total_variation(broken, target_distribution(p, (0,), 2)) > 0.01


def test_control_soft_q_for_top_b_children_is_biased(markov):
    p, q = markov
    broken = tree_speculative_distribution(p, q, (0,), (3, 1), TOP_B, 2, soft_q_for_top_b=True)
    assert total_variation(broken, target_distribution(p, (0,), 2)) > 0.01


def _sampled_first_tokens(p, q, shape, how, n, update_residual=True):
    """The lab's tree round (draw_children + verify_tree) n times at context (0,): counts of the first token."""
    g = torch.Generator().manual_seed(1234)
    variant = lab.tree_variant(how, update_residual)
    counts = torch.zeros(p.table.shape[0])
    for _ in range(n):
        counts[lab.tree_round(p, q, (0,), shape, variant, uniforms(g, 2 * tree_size(shape) + 1))[0]] += 1
    return counts


def _chi2_p_value(counts, probs):
    """Pearson's χ² p-value of the counts against the exact probabilities (specviz's own test; rare cells pooled)."""
    return chisq.chi2_goodness_of_fit(counts, probs).p_value


@pytest.mark.slow
@pytest.mark.parametrize("how", TREE_SAMPLINGS)
def test_chi_squared_monte_carlo_of_verify_tree(markov, how):
    p, q = markov
    counts = _sampled_first_tokens(p, q, (3, 1), how, 4000)
    assert _chi2_p_value(counts, p.table[0]) > 1e-6


@pytest.mark.slow
def test_chi_squared_catches_the_missing_residual(markov):
    p, q = markov
    counts = _sampled_first_tokens(p, q, (3, 1), WITH_REPLACEMENT, 4000, update_residual=False)
    assert _chi2_p_value(counts, p.table[0]) < 1e-6


def test_residual_helper_matches_hand_maths():
    assert residual(T(0.2, 0.5, 0.3), T(0.6, 0.4, 0.0)).tolist() == pytest.approx([0, 0.25, 0.75])
