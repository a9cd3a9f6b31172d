"""χ² tests of sampled counts: against exact probabilities (goodness of fit) and against another sample.

The exactness lab and its tests judge samplers with them; torch's regularised incomplete gamma gives the p-value, so no
statistics package is needed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from specviz.errors import SettingsError


@dataclass(frozen=True)
class Chi2Result:
    statistic: float
    dof: int
    p_value: float
    pooled: int  # categories merged into one bucket because their expected count was small


def chi2_p_value(statistic: float, dof: float) -> float:
    """Survival function of χ²(dof): the regularised upper incomplete gamma Q(dof/2, x/2)."""
    if dof <= 0:
        return 1.0
    return float(torch.special.gammaincc(torch.tensor(dof / 2.0, dtype=torch.float64), torch.tensor(statistic / 2.0)))


def chi2_goodness_of_fit(counts: torch.Tensor, probs: torch.Tensor, min_expected: float = 5.0) -> Chi2Result:
    """Pearson's test of observed counts against exact probabilities; cells expected below min_expected are pooled.

    Observations in a cell of probability 0 make the statistic infinite (p-value 0): that outcome is impossible.
    """
    counts, probs = counts.to(torch.float64), probs.to(torch.float64)
    n = float(counts.sum())
    expected = probs * n
    if bool(((probs <= 0) & (counts > 0)).any()):
        return Chi2Result(math.inf, max(int((probs > 0).sum()) - 1, 1), 0.0, 0)
    small = (expected < min_expected) & (probs > 0)
    obs = counts[(~small) & (probs > 0)]
    exp = expected[(~small) & (probs > 0)]
    pooled = int(small.sum())
    if pooled:
        obs = torch.cat([obs, counts[small].sum().view(1)])
        exp = torch.cat([exp, expected[small].sum().view(1)])
    stat = float(((obs - exp) ** 2 / exp).sum())
    dof = len(obs) - 1
    return Chi2Result(stat, dof, chi2_p_value(stat, dof), pooled)


def chi2_homogeneity(a: torch.Tensor, b: torch.Tensor, min_expected: float = 5.0) -> Chi2Result:
    """Two-sample test: do counts a and b (same categories) come from the same distribution? Rare cells pooled."""
    a, b = a.to(torch.float64), b.to(torch.float64)
    total = a + b
    keep = total > 0
    a, b, total = a[keep], b[keep], total[keep]
    na, nb = float(a.sum()), float(b.sum())
    if na == 0 or nb == 0:
        raise SettingsError("both samples need at least one observation for a χ² comparison.")
    n = na + nb
    small = total * min(na, nb) / n < min_expected
    pooled = int(small.sum())
    if pooled:
        a = torch.cat([a[~small], a[small].sum().view(1)])
        b = torch.cat([b[~small], b[small].sum().view(1)])
        total = a + b
    ea, eb = total * na / n, total * nb / n
    stat = float(((a - ea) ** 2 / ea).sum() + ((b - eb) ** 2 / eb).sum())
    dof = len(total) - 1
    return Chi2Result(stat, dof, chi2_p_value(stat, dof), pooled)


def chi2_critical(dof: float, level: float) -> float:
    """The statistic at which χ²(dof) has `level` left in its upper tail (the test's threshold), by bisection."""
    low, high = 0.0, max(10.0, 10.0 * dof)
    while chi2_p_value(high, dof) > level:
        high *= 2
    for _ in range(100):
        mid = (low + high) / 2
        low, high = (mid, high) if chi2_p_value(mid, dof) > level else (low, mid)
    return high


def chi2_power(noncentrality: float, dof: float, level: float) -> float:
    """The chance that the χ² test at `level` rejects when its statistic is noncentral χ²(dof, λ): Patnaik's
    approximation, c·χ²(ν) with c = (dof + 2λ)/(dof + λ) and ν = (dof + λ)²/(dof + 2λ) (within a few hundredths of
    the exact value for the sizes here)."""
    lam = max(0.0, noncentrality)
    scale = (dof + 2 * lam) / (dof + lam)
    nu = (dof + lam) ** 2 / (dof + 2 * lam)
    return chi2_p_value(chi2_critical(dof, level) / scale, nu)


def detectable_tv(samples_each: int, dof: int, level: float = 1e-3, power: float = 0.8) -> float:
    """The smallest total-variation distance the two-sample χ² test (`samples_each` draws from each side, `dof`
    degrees of freedom, rejecting at `level`) catches with probability `power`, whatever the two distributions.

    With n draws a side the statistic is about noncentral χ²(dof, λ) with λ = (n/2)·Σ (p−q)²/π, π the pooled
    distribution; by Cauchy-Schwarz Σ (p−q)²/π ≥ (Σ |p−q|)² = 4·TV², so λ ≥ 2n·TV², and the λ that gives `power`
    bounds the TV that is caught: TV ≥ sqrt(λ / 2n). An approximation for counts that are not tiny; rare outcomes
    pooled into one bucket make the real test a little weaker."""
    if samples_each < 1 or dof < 1:
        return 1.0
    low, high = 0.0, 1.0
    while chi2_power(high, dof, level) < power:
        high *= 2
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if chi2_power(mid, dof, level) < power else (low, mid)
    return min(1.0, math.sqrt(high / (2 * samples_each)))
