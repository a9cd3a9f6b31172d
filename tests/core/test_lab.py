"""The exactness lab (pure part): exact enumeration equals p, and every bug switch is caught.

Statistical thresholds: an exact sampler must give a χ² p-value above 1e-6, every buggy one below 1e-6, at the fixed
seeds and sample counts used here (the buggy statistics are hundreds of times their degrees of freedom).
"""

import itertools

import pytest
import torch

from specviz.core import chisq, lab
from specviz.core.toy import MarkovModel, speculative_distribution, target_distribution, total_variation
from specviz.errors import SettingsError

BUGS = [v for v in lab.VARIANTS if v.key != "exact"]


# ---- two tokens ------------------------------------------------------------------------------------------------------


def test_two_token_worked_example():
    f = lab.two_token_flow()  # p(A) = 0.7, q(A) = 0.9
    assert f.accept_prob == pytest.approx((7 / 9, 1.0))
    assert f.accepted == pytest.approx((0.7, 0.1))
    assert f.residual == pytest.approx((0.0, 1.0))
    assert f.rejected_mass == pytest.approx(0.2)
    assert f.corrected == pytest.approx((0.0, 0.2))
    assert f.final == pytest.approx((0.7, 0.3), abs=1e-12)
    assert f.alpha == pytest.approx(0.8)


@pytest.mark.parametrize("p_a,q_a", itertools.product([0.0, 0.1, 0.5, 0.7, 1.0], [0.0, 0.3, 0.9, 1.0]))
def test_two_token_final_equals_p(p_a, q_a):
    f = lab.two_token_flow(p_a, q_a)
    assert f.final == pytest.approx((p_a, 1 - p_a), abs=1e-12)
    assert sum(f.accepted) + f.rejected_mass == pytest.approx(1.0)


def test_two_token_refuses_non_probabilities():
    with pytest.raises(SettingsError, match="p\\(A\\)"):
        lab.two_token_flow(1.2, 0.5)


# ---- enumeration -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("draft", [lab.SHOP_DRAFT, lab.POOR_DRAFT], ids=["seed_draft", "poor_draft"])
@pytest.mark.parametrize("k", [1, 2, 4])
def test_enumerated_speculative_distribution_equals_the_target(draft, k):
    p, q = lab.shop_models(draft)
    spec = lab.variant_distribution(p, q, (), k, 3)
    assert sum(spec.values()) == pytest.approx(1.0, abs=1e-12)
    assert total_variation(spec, target_distribution(p, (), 3)) < 1e-9
    # the generalised enumeration agrees with the toy module's for the exact rule
    assert total_variation(spec, speculative_distribution(p, q, (), k, 3)) < 1e-12


def test_generalised_enumeration_on_random_markov_models():
    g = torch.Generator().manual_seed(5)
    p, q = MarkovModel.random(4, g, 2.0), MarkovModel.random(4, g, 2.0)
    spec = lab.variant_distribution(p, q, (0,), 3, 4)
    assert total_variation(spec, target_distribution(p, (0,), 4)) < 1e-9


@pytest.mark.parametrize("variant", BUGS, ids=lambda v: v.key)
def test_every_bug_biases_the_exact_distribution(variant):
    p, q = lab.shop_models(lab.POOR_DRAFT)
    spec = lab.variant_distribution(p, q, (), 4, 3, variant)
    assert sum(spec.values()) == pytest.approx(1.0, abs=1e-9)  # still a distribution, just the wrong one
    assert total_variation(spec, target_distribution(p, (), 3)) > 0.1


@pytest.mark.parametrize("variant", BUGS, ids=lambda v: v.key)
def test_every_bug_biases_even_the_first_token(variant):
    p = torch.tensor([0.5, 0.3, 0.15, 0.05], dtype=torch.float64)
    q = torch.tensor([0.2, 0.4, 0.3, 0.1], dtype=torch.float64)
    out = lab.first_token_distribution(p, q, variant)
    assert out.sum() == pytest.approx(1.0)
    assert (out - p).abs().sum() / 2 > 0.02
    assert torch.allclose(lab.first_token_distribution(p, q), p, atol=1e-12)


# ---- Monte Carlo and the χ² tests ------------------------------------------------------------------------------------


def test_bug_checks_detect_every_switch_at_a_fixed_seed():
    p, q = lab.shop_models(lab.POOR_DRAFT)
    checks = {c.variant.key: c for c in lab.bug_checks(p, q, k=4, samples=20_000, seed=0)}
    assert set(checks) == {v.key for v in lab.VARIANTS}
    exact = checks.pop("exact")
    assert exact.tv < 1e-9
    assert exact.chi2.p_value > 1e-6
    assert not exact.detected
    for key, check in checks.items():
        assert check.tv > 0.1, key
        assert check.chi2.p_value < 1e-6, key
        assert check.detected, key
        assert check.chi2.statistic > 20 * check.chi2.dof, key  # far beyond the threshold, not a lucky seed


def test_close_draft_hides_the_small_bugs_from_a_small_sample():
    """With the seed's close draft, skipping the residual biases the output by TV < 0.02: 20,000 samples miss it."""
    p, q = lab.shop_models(lab.SHOP_DRAFT)
    checks = {c.variant.key: c for c in lab.bug_checks(p, q, k=4, samples=20_000, seed=0)}
    assert 0 < checks["skip_residual"].tv < 0.02
    assert not checks["skip_residual"].detected
    assert checks["greedy_soft_q"].detected
    assert checks["accept_if_p_ge_q"].detected


def test_shop_experiment_reproduces_the_seed_demo():
    p, q = lab.shop_models()
    e = lab.shop_experiment(p, q, k=4, samples=20_000, seed=0)
    assert e.largest_gap < 0.02  # sampling noise only
    assert e.largest_gap_exact < 1e-12  # the exact distributions agree
    assert e.chi2_spec.p_value > 1e-6
    assert e.chi2_plain.p_value > 1e-6
    assert 13 < e.passes_per_64 < 15.5  # ~14 target passes instead of 64
    assert 0.9 < e.acceptance_fraction < 1.0
    assert e.plain_freq.sum() == pytest.approx(1.0)
    assert e.exact_target.sum() == pytest.approx(1.0)


def test_monte_carlo_counts_are_consistent():
    p, q = lab.shop_models(lab.POOR_DRAFT)
    stats = lab.sample_speculative(p, q, 3, 500, 10, torch.Generator().manual_seed(1))
    assert stats.sequences.shape == (500, 10)
    assert int(stats.sequences.min()) >= 0
    assert 0 < stats.accepted <= stats.proposed
    committed = 500 * 10
    assert committed == stats.passes + stats.accepted  # each pass commits its accepted drafts + one target token
    plain = lab.sample_plain(p, 200, 5, torch.Generator().manual_seed(1))
    assert plain.passes == 1000
    assert plain.sequences.shape == (200, 5)


def test_same_seed_same_samples():
    p, q = lab.shop_models()
    a = lab.sample_speculative(p, q, 4, 300, 6, torch.Generator().manual_seed(3))
    b = lab.sample_speculative(p, q, 4, 300, 6, torch.Generator().manual_seed(3))
    assert torch.equal(a.sequences, b.sequences)
    assert a.passes == b.passes


def test_chi2_p_value_matches_known_quantiles():
    assert chisq.chi2_p_value(3.841458820694124, 1) == pytest.approx(0.05, abs=1e-9)
    assert chisq.chi2_p_value(18.307038, 10) == pytest.approx(0.05, abs=1e-6)
    assert chisq.chi2_p_value(0.0, 4) == 1.0


def test_chi2_tests():
    probs = torch.tensor([0.5, 0.3, 0.2, 0.0])
    fit = chisq.chi2_goodness_of_fit(torch.tensor([500.0, 300.0, 200.0, 0.0]), probs)
    assert fit.statistic == pytest.approx(0.0)
    assert fit.p_value == pytest.approx(1.0)
    assert fit.dof == 2
    assert (
        chisq.chi2_goodness_of_fit(torch.tensor([500.0, 300.0, 199.0, 1.0]), probs).p_value == 0.0
    )  # impossible outcome
    pooled = chisq.chi2_goodness_of_fit(torch.tensor([97.0, 1.0, 1.0, 1.0]), torch.tensor([0.97, 0.01, 0.01, 0.01]))
    assert pooled.pooled == 3
    assert pooled.dof == 1
    same = chisq.chi2_homogeneity(torch.tensor([50.0, 30.0, 20.0]), torch.tensor([50.0, 30.0, 20.0]))
    assert same.p_value == pytest.approx(1.0)
    differ = chisq.chi2_homogeneity(torch.tensor([90.0, 10.0, 0.0]), torch.tensor([10.0, 10.0, 80.0]))
    assert differ.p_value < 1e-6


def test_markov_chain_tables_are_validated():
    p = lab.chain_from_rows([[2, 2, 0, 0]] + [list(r) for r in lab.SHOP_TARGET[1:]])
    assert torch.allclose(p.start, torch.tensor([0.5, 0.5, 0.0, 0.0], dtype=torch.float64))
    bad = [list(r) for r in lab.SHOP_TARGET]
    for row, message in (([-0.1, 0.5, 0.3, 0.3], ">= 0"), ([0, 0, 0, 0], "all zero"), ([float("nan")] * 4, ">= 0")):
        with pytest.raises(SettingsError, match=message):
            lab.chain_from_rows(bad[:1] + [row] + bad[2:])
    with pytest.raises(SettingsError, match="START row"):
        lab.chain_from_rows(bad[1:])
    with pytest.raises(SettingsError):
        lab.get_variant("nope")
    with pytest.raises(SettingsError, match="samples"):
        lab.shop_experiment(*lab.shop_models(), samples=10)


def test_chain_alpha_rows():
    p, q = lab.shop_models()
    alphas = lab.chain_alpha(p, q)
    assert len(alphas) == 5
    assert alphas[0] == pytest.approx(0.98)  # START: Σ min(p, q) = 1 − 0.02
    assert alphas[1] == pytest.approx(1 - 0.04)  # after "view"


def test_sequence_labels_follow_the_count_order():
    labels = lab.sequence_labels(2)
    assert labels[0] == "view → view"
    assert labels[1] == "view → click"
    assert len(labels) == 16
    stats = lab.RunStats(torch.tensor([[0, 1], [0, 1], [3, 3]]), 3, 0, 0)
    counts = lab.sequence_counts(stats, 4)
    assert counts[1] == 2
    assert counts[15] == 1


def test_every_bug_switch_cites_a_public_report_or_says_it_is_a_classic_mistake():
    for variant in lab.VARIANTS[1:]:
        assert variant.seen_in == lab.CLASSIC or "https://github.com/" in variant.seen_in, variant.key
    cited = {v.key for v in lab.VARIANTS if v.seen_in != lab.CLASSIC and v.key != "exact"}
    assert cited == {"skip_residual", "greedy_soft_q", "q_before_top_k", lab.TYPICAL}
