"""The two-token example: where each token's final probability comes from (accepted drafts + residual corrections)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from specviz.core.verify import acceptance_probability, next_token_distribution, residual
from specviz.errors import SettingsError

_TINY = torch.finfo(torch.float64).tiny


@dataclass(frozen=True)
class TwoTokenFlow:
    """Where the final probability of A and B comes from when x ~ q is judged against p (one position)."""

    tokens: tuple[str, str]
    p: tuple[float, float]
    q: tuple[float, float]
    accept_prob: tuple[float, float]  # min(1, p/q) per token
    accepted: tuple[float, float]  # q(x) · min(1, p/q): emitted as an accepted draft
    rejected_mass: float  # 1 − Σ accepted: how often the draft is rejected
    residual: tuple[float, float]  # norm(max(0, p − q))
    corrected: tuple[float, float]  # rejected_mass · residual: emitted as a correction
    final: tuple[float, float]  # accepted + corrected (= p)
    alpha: float  # Σ min(p, q)


def two_token_flow(p_a: float = 0.7, q_a: float = 0.9, tokens: tuple[str, str] = ("A", "B")) -> TwoTokenFlow:
    """p = (p_a, 1 − p_a), q = (q_a, 1 − q_a). The default is the seed's worked example."""
    for name, value in (("p(A)", p_a), ("q(A)", q_a)):
        if not (isinstance(value, (int, float)) and 0 <= value <= 1):
            raise SettingsError(f"{name} must be a probability from 0 to 1; got {value!r}.")
    p = torch.tensor([p_a, 1 - p_a], dtype=torch.float64)
    q = torch.tensor([q_a, 1 - q_a], dtype=torch.float64)
    accept = torch.where(q > 0, acceptance_probability(p, q.clamp(min=_TINY)), torch.ones_like(q))  # (2,)
    accepted = q * accept
    rejected = 1.0 - float(accepted.sum())
    res = residual(p, q)
    corrected = rejected * res
    final = next_token_distribution(p, q)
    pair = lambda t: (float(t[0]), float(t[1]))  # noqa: E731
    return TwoTokenFlow(
        tokens,
        pair(p),
        pair(q),
        pair(accept),
        pair(accepted),
        rejected,
        pair(res),
        pair(corrected),
        pair(final),
        float(torch.minimum(p, q).sum()),
    )
