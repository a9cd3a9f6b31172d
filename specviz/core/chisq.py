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


def chi2_p_value(statistic: float, dof: int) -> float:
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
