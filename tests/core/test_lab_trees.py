"""The exactness lab's tree section (core/lab.py): exact samplers match p to 1e-9, the two negative controls miss it
by a clear margin, and a χ² test with fixed seeds passes the exact samplers and fails the broken ones."""

from __future__ import annotations

import pytest
import torch

from specviz.core import chisq, lab
from specviz.core.verify import TOP_B, WITH_REPLACEMENT, WITHOUT_REPLACEMENT

EXACT_KEYS = ("with_replacement", "without_replacement", "top_b")
BROKEN_KEYS = ("no_residual", "soft_q_top_b")


@pytest.fixture(scope="module")
def shop_poor():
    return lab.shop_models(lab.POOR_DRAFT)


@pytest.mark.parametrize("shape", lab.TREE_SHAPES)
def test_exact_tree_samplers_emit_p_and_broken_ones_do_not(shop_poor, shape):
    p, q = shop_poor
    length = len(shape) + 1
    target = lab.as_vector(lab.target_distribution(p, (), length), 4, length)
    for key, variant in lab.TREE_VARIANTS_BY_KEY.items():
        exact = lab.as_vector(lab.tree_variant_distribution(p, q, shape, length, variant), 4, length)
        gap = float((exact - target).abs().max())
        assert exact.sum().item() == pytest.approx(1.0, abs=1e-12)
        if key in EXACT_KEYS:
            assert gap < 1e-9, (shape, key)
        else:
            assert gap > 0.05, (shape, key)
            assert 0.5 * float((exact - target).abs().sum()) > 0.15, (shape, key)


def test_chi2_passes_the_exact_samplers_and_fails_the_broken_ones(shop_poor):
    p, q = shop_poor
    target, checks = lab.tree_checks(p, q, (2, 2), samples=1000, seed=0)
    by_key = {c.variant.key: c for c in checks}
    for key in EXACT_KEYS:
        assert by_key[key].verdict == lab.EXACT_VERDICT, key
        assert by_key[key].chi2.p_value > 1e-3, key
        assert lab.pass_fail(by_key[key].verdict) == "pass: exact"
    for key in BROKEN_KEYS:
        assert by_key[key].verdict == lab.DETECTED_VERDICT, key
        assert by_key[key].chi2.p_value < 1e-12, key
        assert lab.pass_fail(by_key[key].verdict).startswith("fail")
    assert target.sum().item() == pytest.approx(1.0)
    assert all(0 < c.passes_per_token < 1 for c in checks)  # a tree commits more than one token per target pass


def test_the_sampler_follows_its_own_enumeration_even_when_broken(shop_poor):
    # Two independent implementations agree: verify_tree on sampled trees vs the toy's weighted enumeration.
    p, q = shop_poor
    variant = lab.TREE_VARIANTS_BY_KEY["no_residual"]
    exact = lab.as_vector(lab.tree_variant_distribution(p, q, (2, 1), 3, variant), 4, 3)
    runs = lab.sample_tree(p, q, (2, 1), variant, 1000, 3, torch.Generator().manual_seed(5))
    assert chisq.chi2_goodness_of_fit(lab.sequence_counts(runs, 4), exact).p_value > 1e-3


def test_tree_round_commits_the_accepted_path_then_one_token():
    # A draft equal to the target is always accepted: a (2, 1) tree commits its first child, that child's child and
    # the bonus; with replacement, all uniforms 0.5.
    p, _ = lab.shop_models()
    tokens = lab.tree_round(p, p, (), (2, 1), lab.TREE_VARIANTS[0], torch.full((9,), 0.5, dtype=torch.float64))
    assert len(tokens) == 3


def test_the_switches_pick_the_variant():
    assert lab.tree_variant(WITH_REPLACEMENT).key == "with_replacement"
    assert lab.tree_variant(WITH_REPLACEMENT, update_residual=False).key == "no_residual"
    assert lab.tree_variant(TOP_B, soft_q_for_top_b=True).key == "soft_q_top_b"
    assert lab.tree_variant(WITHOUT_REPLACEMENT, soft_q_for_top_b=True).key == "without_replacement"  # no effect
    both = lab.tree_variant(TOP_B, False, True)
    assert not both.update_residual
    assert both.soft_q_for_top_b
    assert both.key not in lab.TREE_VARIANTS_BY_KEY
    assert lab.tree_variant(WITHOUT_REPLACEMENT, False).how == WITHOUT_REPLACEMENT
