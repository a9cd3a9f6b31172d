"""The power of the two-sample χ² test (core.chisq): the smallest total-variation distance it catches at a given
sample size, checked against simulated tests."""

import pytest
import torch

from specviz.core.chisq import chi2_critical, chi2_homogeneity, chi2_p_value, chi2_power, detectable_tv


def test_critical_values_match_the_tables():
    assert chi2_critical(1, 0.05) == pytest.approx(3.841, abs=1e-3)
    assert chi2_critical(10, 1e-3) == pytest.approx(29.588, abs=1e-3)
    assert chi2_p_value(chi2_critical(7, 0.01), 7) == pytest.approx(0.01, rel=1e-6)


def test_power_is_the_level_with_no_difference_and_grows_with_it():
    assert chi2_power(0.0, 5, 1e-3) == pytest.approx(1e-3, rel=1e-3)
    powers = [chi2_power(lam, 5, 1e-3) for lam in (1, 5, 20, 50)]
    assert powers == sorted(powers)
    assert powers[-1] > 0.99


def test_the_detectable_distance_shrinks_as_one_over_the_root_of_the_samples():
    small, large = detectable_tv(70, 10), detectable_tv(280, 10)
    assert large == pytest.approx(small / 2, rel=1e-6)  # four times the samples: half the distance
    assert detectable_tv(70, 10) > detectable_tv(70, 2)  # more categories, a weaker test at equal distance
    assert detectable_tv(0, 10) == 1.0
    assert detectable_tv(100, 0) == 1.0


def rejection_rate(p: torch.Tensor, q: torch.Tensor, n: int, trials: int, level: float) -> float:
    gen = torch.Generator().manual_seed(0)
    rejected = 0
    for _ in range(trials):
        a = torch.bincount(torch.multinomial(p, n, replacement=True, generator=gen), minlength=len(p))
        b = torch.bincount(torch.multinomial(q, n, replacement=True, generator=gen), minlength=len(q))
        rejected += chi2_homogeneity(a, b).p_value <= level
    return rejected / trials


def shifted(tv: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Two outcomes, each side moved by tv / 2 from even: total variation tv, |p − q| proportional to the pooled
    distribution (the case the bound is tight for)."""
    p = torch.tensor([0.5 + tv / 2, 0.5 - tv / 2], dtype=torch.float64)
    return p, p.flip(0)


def test_a_difference_of_the_detectable_distance_is_caught_about_four_times_in_five():
    n, level = 300, 1e-3
    tv = detectable_tv(n, 1, level, 0.8)
    p, q = shifted(tv)
    assert 0.5 * (p - q).abs().sum().item() == pytest.approx(tv)
    rate = rejection_rate(p, q, n, 400, level)
    assert 0.7 <= rate <= 0.9, (tv, rate)
    assert rejection_rate(*shifted(tv / 2), n, 400, level) < 0.4  # half the distance mostly passes unseen
