"""The calculator's tree model (core/tree_theory.py): hand-computed cases, the chain as a special case, and costs."""

from __future__ import annotations

import math

import pytest

from specviz.core.theory import VerifyCost, expected_tokens, positional_expected_tokens
from specviz.core.tree_theory import (
    compare_tree,
    decayed_rates,
    node_path_probabilities,
    parse_shape,
    shape_table,
    sibling_probabilities,
    tree_expected_tokens,
    verify_cost_for,
)
from specviz.core.verify import tree_parents
from specviz.errors import SettingsError


@pytest.mark.parametrize("alpha", [0.0, 0.3, 0.8, 0.95, 1.0])
def test_a_one_wide_tree_is_the_chain(alpha):
    # (1, 1, 1, 1) with a_1 = α: E = 1 + α + α² + α³ + α⁴ = (1 − α^5) / (1 − α)
    e = tree_expected_tokens((1, 1, 1, 1), [alpha])
    assert e == pytest.approx(expected_tokens(alpha, 4), abs=1e-12)
    if alpha < 1:
        assert e == pytest.approx((1 - alpha**5) / (1 - alpha), abs=1e-12)


def test_two_children_of_the_root_by_hand():
    # a_1 = 0.6, a_2 = 0.5: child 1 accepted 0.6; child 2 reached 0.4 and accepted half of that, 0.2.
    # E = 1 + 0.6 + 0.2 = 1.8 (the chain K = 1 gives 1.6)
    assert sibling_probabilities([0.6, 0.5], 2) == pytest.approx((0.6, 0.2))
    assert tree_expected_tokens((2,), [0.6, 0.5]) == pytest.approx(1.8)


def test_a_two_level_tree_by_hand():
    # (2, 1), a = (0.6, 0.5): nodes 0, 1 under the root (f = 0.6, 0.2), node 2 under 0 and node 3 under 1, each the
    # first child of its parent (f = 0.6·0.6 = 0.36, 0.2·0.6 = 0.12). E = 1 + 0.6 + 0.2 + 0.36 + 0.12 = 2.28
    f = node_path_probabilities(tree_parents((2, 1)), [0.6, 0.5])
    assert f == pytest.approx((0.6, 0.2, 0.36, 0.12))
    assert tree_expected_tokens((2, 1), [0.6, 0.5]) == pytest.approx(2.28)


@pytest.mark.parametrize("shape", [(3, 2, 1, 1), (4, 2, 2, 1), (2, 2), (5,)])
def test_node_sum_equals_the_per_depth_product(shape):
    # Σ_v f(v) = Σ_d Π_{l≤d} A_l with A_l = 1 − Π_{i≤b_l}(1 − a_i): the chain formula with a per-depth rate
    rates = (0.7, 0.4, 0.3)
    per_depth = [1 - math.prod(1 - rates[min(i, 2)] for i in range(b)) for b in shape]
    assert tree_expected_tokens(shape, rates) == pytest.approx(positional_expected_tokens(per_depth), abs=1e-12)


def test_children_beyond_the_given_rates_reuse_the_last_and_decay_builds_rates():
    assert tree_expected_tokens((3,), [0.5]) == pytest.approx(1 + 0.5 + 0.25 + 0.125)
    assert decayed_rates(0.8, 0.5, 3) == pytest.approx((0.8, 0.4, 0.2))


def test_costs_and_speedups_by_hand():
    # (2, 1), a = (0.6, 0.5), c = 0.1, linear v(N) = 1 + 0.05·N: tree N = 4, D = 2 -> cost 2·0.1 + 1.2 = 1.4
    cmp = compare_tree((2, 1), [0.6, 0.5], 0.1, VerifyCost.linear(0.05))
    assert (cmp.tree.nodes, cmp.tree.depth) == (4, 2)
    assert cmp.tree.round_cost == pytest.approx(1.4)
    assert cmp.tree.speedup == pytest.approx(2.28 / 1.4)
    # same depth: K = 2, E = 1 + 0.6 + 0.36 = 1.96, cost 0.2 + 1.1 = 1.3; same nodes: K = 4, cost 0.4 + 1.2 = 1.6
    assert cmp.same_depth.expected_tokens == pytest.approx(1.96)
    assert cmp.same_depth.round_cost == pytest.approx(1.3)
    assert cmp.same_nodes.expected_tokens == pytest.approx(expected_tokens(0.6, 4))
    assert cmp.same_nodes.round_cost == pytest.approx(1.6)
    assert cmp.best_chain.speedup >= max(cmp.same_depth.speedup, cmp.same_nodes.speedup) - 1e-12


def test_a_tree_pays_with_a_flat_verify_and_not_when_it_grows():
    rates = (0.7, 0.5, 0.4)
    flat = compare_tree((3, 2, 1, 1), rates, 0.05, VerifyCost.ideal())
    assert flat.pays
    assert "the tree pays" in flat.verdict()
    grows = compare_tree((3, 2, 1, 1), rates, 0.05, VerifyCost.linear(0.1))
    assert not grows.pays
    assert "does not pay" in grows.verdict()
    assert grows.tree.expected_tokens == flat.tree.expected_tokens  # costs change, the expected tokens do not


def test_measured_verify_cost_is_extended_past_its_last_point():
    measured = VerifyCost.measured([1.1, 1.2, 1.3, 1.4])  # slope 0.1 per node
    assert verify_cost_for(measured, 3) == pytest.approx(1.3)
    assert verify_cost_for(measured, 10) == pytest.approx(1.4 + 0.6)
    assert compare_tree((3, 2), [0.7], 0.1, measured).tree.verify_cost == pytest.approx(1.4 + 0.5)


def test_shape_table_and_parsing():
    rows = shape_table([(1, 1), (2, 1)], [0.6, 0.5], 0.0, VerifyCost.ideal())
    assert [r["shape"] for r in rows] == ["1,1", "2,1"]
    assert rows[1]["expected_tokens"] == pytest.approx(2.28)
    assert parse_shape("3, 2,1 1") == (3, 2, 1, 1)
    for bad in ("", "3,x", "0,1", "16,16,16"):
        with pytest.raises(SettingsError):
            parse_shape(bad)
    with pytest.raises(SettingsError):
        compare_tree((2,), [1.2], 0.1, VerifyCost.ideal())
