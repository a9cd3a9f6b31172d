"""Medusa's typical acceptance in the exactness lab: a draft passes whenever the target finds it typical enough,
p(x) > min(ε, δ·e^(−H(p))), with no random draw; a rejection draws from p. It is lossy by design, and the lab's χ²
must say so at a fixed seed while the exact sampler passes the same check."""

from __future__ import annotations

import math

import pytest
import torch

from specviz.core import lab
from specviz.core.verify import typical_threshold

TYPICAL = lab.get_variant(lab.TYPICAL)


def test_the_threshold_is_medusas_min_of_epsilon_and_delta_times_exp_minus_entropy():
    flat = torch.full((4,), 0.25, dtype=torch.float64)  # H = ln 4: δ e^(−H) = 0.3 / 4 = 0.075 < ε
    sharp = torch.tensor([0.97, 0.01, 0.01, 0.01], dtype=torch.float64)  # low entropy: ε = 0.09 is the smaller
    bars = typical_threshold(torch.stack([flat, sharp]))
    h_flat = -4 * 0.25 * math.log(0.25 + 1e-5)
    assert bars.tolist() == pytest.approx([0.3 * math.exp(-h_flat), 0.09])


def test_first_token_worked_by_hand():
    p = torch.tensor([0.5, 0.3, 0.15, 0.05], dtype=torch.float64)  # H ≈ 1.14: bar = min(0.09, 0.096) = 0.09
    q = torch.tensor([0.2, 0.4, 0.3, 0.1], dtype=torch.float64)
    out = lab.first_token_distribution(p, q, TYPICAL)
    # drafts 0, 1, 2 pass whenever proposed (p > 0.09); draft 3 (p = 0.05) never does: its 0.1 is drawn from p
    assert out.tolist() == pytest.approx([0.2 + 0.1 * 0.5, 0.4 + 0.1 * 0.3, 0.3 + 0.1 * 0.15, 0.1 * 0.05])
    assert (out - p).abs().sum() / 2 == pytest.approx(0.295)  # far from p: the draft's preferences leak through


@pytest.mark.parametrize("draft", ["poor", "close"])
def test_typical_acceptance_fails_chi2_on_the_shop_model_while_the_exact_sampler_passes(draft):
    p, q = lab.shop_models(lab.POOR_DRAFT if draft == "poor" else lab.SHOP_DRAFT)
    checks = {
        c.variant.key: c
        for c in lab.bug_checks(p, q, k=4, samples=20_000, seed=0, variants=(lab.EXACT_VARIANT, TYPICAL))
    }
    typical, exact = checks[lab.TYPICAL], checks["exact"]
    assert typical.tv > 0.05 and typical.detected and typical.chi2.p_value < 1e-6
    assert lab.verdict(typical.tv, typical.chi2.p_value) == lab.DETECTED_VERDICT
    assert exact.tv < 1e-9 and not exact.detected
    if draft == "poor":  # what it buys with the lost exactness: a poor draft's tokens pass far more often
        assert typical.acceptance_fraction > exact.acceptance_fraction + 0.1


def test_the_page_says_why_it_is_not_lossless():
    assert "Not lossless by design" in TYPICAL.explanation
    assert "Medusa" in TYPICAL.label and "2401.10774" in TYPICAL.seen_in
