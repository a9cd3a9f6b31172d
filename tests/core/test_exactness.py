"""Speculative sampling emits exactly the target's distribution: by enumeration, and by a chi-squared test on samples.

The negative controls (skip the residual; emit the draft's sample) must fail the same checks, so the checks can fail.
"""

import pytest
import torch

from specviz.core.sampling import sample, uniforms
from specviz.core.toy import MarkovModel, speculative_distribution, target_distribution, total_variation
from specviz.core.verify import EXACT, Rule, acceptance_probability, next_token_distribution, residual, verify

SKIP_RESIDUAL = Rule(resample=lambda p, q: p)  # bug: on rejection resample from p instead of the residual
SAMPLE_FROM_Q = Rule(acceptance=lambda p_x, q_x: torch.ones_like(p_x))  # bug: always keep the draft's sample


def random_pair(vocab, seed, sharpness=1.5):
    g = torch.Generator().manual_seed(seed)
    return MarkovModel.random(vocab, g, sharpness), MarkovModel.random(vocab, g, sharpness)


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_enumerated_output_distribution_equals_the_target(k, seed):
    p, q = random_pair(vocab=3, seed=seed)
    spec = speculative_distribution(p, q, context=(0,), k=k, length=4)
    assert abs(sum(spec.values()) - 1) < 1e-12
    assert total_variation(spec, target_distribution(p, (0,), 4)) < 1e-9


@pytest.mark.parametrize("rule", [SKIP_RESIDUAL, SAMPLE_FROM_Q], ids=["skip_residual", "sample_from_q"])
def test_enumeration_exposes_the_buggy_rules(rule):
    p, q = random_pair(vocab=3, seed=0)
    spec = speculative_distribution(p, q, context=(0,), k=2, length=3, rule=rule)
    assert total_variation(spec, target_distribution(p, (0,), 3)) > 1e-2


def test_next_token_distribution_is_p_for_random_pairs():
    g = torch.Generator().manual_seed(0)
    p = torch.rand(200, 7, generator=g, dtype=torch.float64).softmax(-1) ** 3
    q = torch.rand(200, 7, generator=g, dtype=torch.float64).softmax(-1) ** 3
    p, q = p / p.sum(-1, keepdim=True), q / q.sum(-1, keepdim=True)
    assert torch.allclose(next_token_distribution(p, q), p, atol=1e-12)


def chi2_statistic(counts: torch.Tensor, expected_probs: torch.Tensor) -> tuple[float, int]:
    """Pearson's chi-squared statistic and its degrees of freedom for observed counts against probabilities."""
    expected = expected_probs * counts.sum()
    keep = expected > 0
    return float(((counts[keep] - expected[keep]) ** 2 / expected[keep]).sum()), int(keep.sum()) - 1


def chi2_p_value(stat: float, dof: int) -> float:
    """Survival function of chi-squared(dof), via the regularised upper incomplete gamma."""
    return float(torch.special.gammaincc(torch.tensor(dof / 2.0, dtype=torch.float64), torch.tensor(stat / 2.0)))


def pooled_p_value(rule, pairs=12, vocab=10, samples=3000) -> float:
    """One chi-squared test over many random (p, q) pairs: statistics and degrees of freedom add up."""
    g = torch.Generator().manual_seed(1234)
    stats = [chi2_statistic(first_token_counts(p, q, rule, samples, g), p) for p, q in random_distributions(pairs, vocab, 7)]
    return chi2_p_value(sum(s for s, _ in stats), sum(d for _, d in stats))


def first_token_counts(p, q, rule, samples, generator):
    """Draw x ~ q, run the real `verify` with K = 1, count the first committed token."""
    vocab = p.shape[0]
    counts = torch.zeros(vocab, dtype=torch.float64)
    for _ in range(samples):
        u = uniforms(generator, 3)
        x = sample(q, u[0])
        v = verify(torch.stack([p, p]), q[None], x.view(1), u[1:2], u[2], rule)
        counts[x if int(v.n_accepted) == 1 else v.next_token] += 1
    return counts


def random_distributions(count, vocab, seed):
    g = torch.Generator().manual_seed(seed)
    for _ in range(count):
        p = (torch.rand(vocab, generator=g, dtype=torch.float64) * 3).softmax(-1)
        q = (torch.rand(vocab, generator=g, dtype=torch.float64) * 3).softmax(-1)
        yield p, q


def test_chi_squared_accepts_the_exact_rule_on_many_random_pairs():
    assert pooled_p_value(EXACT) > 1e-6


@pytest.mark.parametrize("rule", [SKIP_RESIDUAL, SAMPLE_FROM_Q], ids=["skip_residual", "sample_from_q"])
def test_chi_squared_rejects_the_negative_controls(rule):
    assert pooled_p_value(rule) < 1e-6


def test_the_exact_rule_functions_are_the_ones_verify_uses():
    assert EXACT.acceptance is acceptance_probability and EXACT.resample is residual
