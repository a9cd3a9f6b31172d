"""Logits -> the processed distribution that is actually sampled from, and sampling with an explicit uniform.

Draft and target go through the same `logits_to_probs` with the same `SamplingSettings`, so q and p are always
comparable: the ratio p(x)/q(x) uses exactly the distributions the tokens were drawn from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from specviz.core.lazy import lazy
from specviz.errors import SettingsError

if TYPE_CHECKING:
    import torch
else:
    torch = lazy("torch")

# The smallest temperature that samples. Below it sampling is greedy in all but name (a logit gap of 0.01 already
# makes a probability ratio below e^-10), and far below it logits / T overflow float32: 1e-40 gave NaN everywhere.
MIN_TEMPERATURE = 1e-3


@dataclass(frozen=True)
class SamplingSettings:
    """Temperature, top-k and top-p; temperature 0 means greedy (a one-hot distribution on the argmax)."""

    temperature: float = 0.0
    top_k: int = 0  # 0 = no top-k filter
    top_p: float = 1.0  # 1 = no nucleus filter

    def __post_init__(self) -> None:
        if not (isinstance(self.temperature, (int, float)) and math.isfinite(self.temperature)):
            raise SettingsError(f"temperature must be a number, got {self.temperature!r}.")
        if self.temperature < 0:
            raise SettingsError(
                f"temperature must be >= 0 (0 = greedy), got {self.temperature}. "
                "Use 0 for greedy or e.g. 1.0 to sample."
            )
        if 0 < self.temperature < MIN_TEMPERATURE:
            raise SettingsError(
                f"temperature must be 0 (greedy) or at least {MIN_TEMPERATURE:g}, got {self.temperature:g}. "
                f"Below {MIN_TEMPERATURE:g} sampling is greedy in all but name, and far below it the logits divided by "
                "the temperature overflow float32 (NaN probabilities): use 0 for greedy."
            )
        if not isinstance(self.top_k, int) or isinstance(self.top_k, bool) or self.top_k < 0:
            raise SettingsError(f"top-k must be a whole number >= 0 (0 turns it off), got {self.top_k!r}.")
        if not (isinstance(self.top_p, (int, float)) and 0 < self.top_p <= 1):
            raise SettingsError(f"top-p must be in (0, 1] (1 turns it off), got {self.top_p!r}.")
        if self.greedy and (self.top_p < 1 or self.top_k > 0):
            raise SettingsError(
                "top-k and top-p have no effect at temperature 0 (greedy always takes the most likely token): "
                "set temperature > 0 to sample, or leave top-k at 0 and top-p at 1."
            )

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


def logits_to_probs(logits: torch.Tensor, sampling: SamplingSettings) -> torch.Tensor:
    """(..., V) logits -> (..., V) float32 probabilities after temperature, top-k and top-p (one-hot when greedy)."""
    logits = logits.float()
    if sampling.greedy:
        return one_hot(logits.argmax(-1), logits.shape[-1])
    logits = _scaled(logits, sampling.temperature)
    if sampling.top_k and sampling.top_k < logits.shape[-1]:
        kth_largest = logits.topk(sampling.top_k, dim=-1).values[..., -1:]  # (..., 1)
        logits = logits.masked_fill(logits < kth_largest, float("-inf"))  # ties with the k-th survive
    probs = logits.softmax(-1)
    if sampling.top_p < 1:
        probs = _nucleus(probs, sampling.top_p)
    return probs


def _scaled(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """(..., V) logits / T; a row whose largest value overflows to inf is shifted by its max first (never NaN)."""
    scaled = logits / temperature
    overflow = scaled.amax(-1, keepdim=True).isposinf()  # (..., 1): huge logits at a small T
    return torch.where(overflow, (logits - logits.amax(-1, keepdim=True)) / temperature, scaled)


def _nucleus(probs: torch.Tensor, top_p: float) -> torch.Tensor:
    """Keep the smallest set of most likely tokens whose mass reaches top_p, renormalised."""
    sorted_probs, order = probs.sort(-1, descending=True)  # (..., V)
    mass_before = sorted_probs.cumsum(-1) - sorted_probs
    sorted_probs = sorted_probs.masked_fill(mass_before >= top_p, 0.0)
    kept = torch.zeros_like(probs).scatter(-1, order, sorted_probs)
    return kept / kept.sum(-1, keepdim=True)


def one_hot(tokens: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """(...) token ids -> (..., V) float32 one-hot distributions: the q of a deterministic drafter."""
    return torch.nn.functional.one_hot(tokens, vocab_size).float()


def sample(probs: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Inverse-CDF draw with an explicit uniform: the first token whose cumulative probability reaches u.

    probs (..., V), u (...) in (0, 1] -> (...) long. Tokens of probability zero are never returned.
    """
    cdf = probs.cumsum(-1)  # (..., V)
    threshold = (u.to(cdf.dtype) * cdf[..., -1]).unsqueeze(-1)  # (..., 1); scaled so rounding never overshoots
    return torch.searchsorted(cdf, threshold).squeeze(-1).clamp_max(probs.shape[-1] - 1)


def draw(logits: torch.Tensor, sampling: SamplingSettings, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A token drawn with u from the processed distribution of logits (V,), and that distribution: `sample` of
    `logits_to_probs`, except that greedy takes the argmax directly (what sampling its one-hot gives for every u),
    which spares a draft step a cumulative sum and a search over the vocabulary."""
    if sampling.greedy:
        token = logits.float().argmax(-1)
        return token, one_hot(token, logits.shape[-1])
    probs = logits_to_probs(logits, sampling)
    return sample(probs, u), probs


def uniforms(generator: torch.Generator, n: int) -> torch.Tensor:
    """n float64 draws in (0, 1] from a CPU generator: u = 0 would accept a token of probability 0."""
    return 1.0 - torch.rand(n, generator=generator, dtype=torch.float64)
