"""The lab's experiments: plain vs speculative on the shop model, and every sampler variant against the target, each
by exact enumeration and by a χ² test on samples."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from specviz.core.chisq import Chi2Result, chi2_goodness_of_fit
from specviz.core.lab.monte_carlo import as_vector, sample_plain, sample_speculative, sequence_counts
from specviz.core.lab.variants import VARIANTS, Variant, variant_distribution
from specviz.core.toy import MarkovModel, target_distribution, total_variation
from specviz.errors import SettingsError


@dataclass(frozen=True)
class ShopExperiment:
    """Plain vs speculative on the shop model: Monte-Carlo joint distribution of `length` events and the exact one."""

    length: int
    k: int
    samples: int
    plain_freq: torch.Tensor  # (V^length,)
    spec_freq: torch.Tensor
    exact_target: torch.Tensor  # by enumeration of the target alone
    exact_spec: torch.Tensor  # by enumeration of the speculative procedure
    largest_gap: float  # max |plain − spec| frequency (the seed's statistic)
    largest_gap_exact: float  # max |exact spec − exact target|: 0 up to rounding
    chi2_spec: Chi2Result  # speculative samples against the exact target
    chi2_plain: Chi2Result
    passes_per_64: float  # target passes per 64 events (plain: 64)
    acceptance_fraction: float


def shop_experiment(
    p: MarkovModel,
    q: MarkovModel,
    k: int = 4,
    samples: int = 20_000,
    length: int = 3,
    seed: int = 0,
    throughput_runs: int = 1000,
) -> ShopExperiment:
    """The seed's experiment, plus the exact distributions: the Monte-Carlo gap is sampling noise."""
    check_counts(k, samples, length)
    vocab = p.table.shape[-1]
    plain = sample_plain(p, samples, length, torch.Generator().manual_seed(seed))
    spec = sample_speculative(p, q, k, samples, length, torch.Generator().manual_seed(seed + 1))
    plain_freq = sequence_counts(plain, vocab) / samples
    spec_freq = sequence_counts(spec, vocab) / samples
    exact_target = as_vector(target_distribution(p, (), length), vocab, length)
    exact_spec = as_vector(variant_distribution(p, q, (), k, length), vocab, length)
    long = sample_speculative(p, q, k, throughput_runs, 64, torch.Generator().manual_seed(seed + 2))
    return ShopExperiment(
        length,
        k,
        samples,
        plain_freq,
        spec_freq,
        exact_target,
        exact_spec,
        float((plain_freq - spec_freq).abs().max()),
        float((exact_spec - exact_target).abs().max()),
        chi2_goodness_of_fit(spec_freq * samples, exact_target),
        chi2_goodness_of_fit(plain_freq * samples, exact_target),
        long.passes_per_run,
        long.acceptance_fraction,
    )


EXACT_VERDICT, DETECTED_VERDICT, UNSEEN_VERDICT = "exact", "bias detected", "biased, not detected at this N"


def verdict(distance: float, p_value: float) -> str:
    """Exact when the enumerated output is p to 1e-9; otherwise whether a χ² test at p < 1e-6 sees the bias."""
    if distance < 1e-9:
        return EXACT_VERDICT
    return DETECTED_VERDICT if p_value < 1e-6 else UNSEEN_VERDICT


def pass_fail(outcome: str) -> str:
    """The verdict as pass / fail: only an exact sampler passes."""
    return "pass: exact" if outcome == EXACT_VERDICT else f"fail: {outcome}"


@dataclass(frozen=True)
class BugCheck:
    """One sampler variant: its exact output distribution, its distance from the target's, and a test on samples."""

    variant: Variant
    exact: torch.Tensor  # (V^length,) exact output distribution of the variant
    tv: float  # total variation from the target's exact distribution
    chi2: Chi2Result  # the variant's samples against the target's exact distribution
    acceptance_fraction: float

    @property
    def detected(self) -> bool:
        return self.chi2.p_value < 1e-6


def bug_checks(
    p: MarkovModel,
    q: MarkovModel,
    k: int = 4,
    samples: int = 20_000,
    length: int = 3,
    seed: int = 0,
    variants: Sequence[Variant] = VARIANTS,
) -> list[BugCheck]:
    """Every variant against the target: exact TV by enumeration and a χ² p-value on `samples` runs (fixed seed)."""
    check_counts(k, samples, length)
    vocab = p.table.shape[-1]
    target = target_distribution(p, (), length)
    target_vec = as_vector(target, vocab, length)
    checks = []
    for index, variant in enumerate(variants):
        exact = variant_distribution(p, q, (), k, length, variant)
        runs = sample_speculative(p, q, k, samples, length, torch.Generator().manual_seed(seed + index), variant)
        checks.append(
            BugCheck(
                variant,
                as_vector(exact, vocab, length),
                total_variation(exact, target),
                chi2_goodness_of_fit(sequence_counts(runs, vocab), target_vec),
                runs.acceptance_fraction,
            )
        )
    return checks


def check_counts(k: int, samples: int, length: int) -> None:
    if not isinstance(k, int) or not 1 <= k <= 16:
        raise SettingsError(f"K must be a whole number from 1 to 16; got {k!r}.")
    if not isinstance(samples, int) or not 100 <= samples <= 1_000_000:
        raise SettingsError(f"the number of samples must be from 100 to 1,000,000; got {samples!r}.")
    if not isinstance(length, int) or not 1 <= length <= 5:
        raise SettingsError(f"the sequence length must be from 1 to 5 events; got {length!r}.")
