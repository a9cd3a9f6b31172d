"""Bug switches: real variants of the sampler that shipped in real code, and the exact output distribution of each.

Each is a `Variant`: the acceptance / resample `Rule`, plus which distribution the drafter actually samples from
(`propose`) versus which q it reports for the ratio and the residual (`ratio_q`). The exact variant proposes from and
reports the same q."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from specviz.core.toy import Context, LanguageModel, speculative_distribution
from specviz.core.verify import EXACT, Rule, typical_threshold
from specviz.errors import SettingsError

Dist = Callable[[torch.Tensor], torch.Tensor]  # (..., V) q -> (..., V) a distribution derived from it
_TINY = torch.finfo(torch.float64).tiny


def _same(q: torch.Tensor) -> torch.Tensor:
    return q


def greedy_proposal(q: torch.Tensor) -> torch.Tensor:
    """One-hot argmax of q: a drafter that decodes greedily."""
    return torch.nn.functional.one_hot(q.argmax(-1), q.shape[-1]).to(q.dtype)


def top_k_proposal(k: int) -> Dist:
    """q restricted to its k most likely tokens and renormalised: a drafter that samples after top-k."""

    def propose(q: torch.Tensor) -> torch.Tensor:
        kth = q.topk(min(k, q.shape[-1]), dim=-1).values[..., -1:]  # (..., 1)
        kept = torch.where(q >= kth, q, torch.zeros_like(q))
        return kept / kept.sum(-1, keepdim=True)

    return propose


CLASSIC = "a classic mistake (no public report cited)"
TYPICAL = "typical_acceptance"  # Medusa's lossy shortcut, a variant the lab shows failing on purpose


@dataclass(frozen=True)
class Variant:
    """One sampler: how tokens are proposed, which q the verifier is told about, and the accept/resample rule."""

    key: str
    label: str
    explanation: str
    rule: Rule = EXACT
    propose: Dist = _same  # what the drafter really samples x from, given its q
    ratio_q: Dist = _same  # the q used in min(1, p/q) and in the residual
    seen_in: str = CLASSIC  # a public report of the bug in real code, or CLASSIC when none is cited


EXACT_VARIANT = Variant(
    "exact", "exact (Leviathan / Chen)", "accept with min(1, p/q), correct from norm(max(0, p − q))"
)
VARIANTS = (
    EXACT_VARIANT,
    Variant(
        "skip_residual",
        "skip the residual",
        "on a rejection, resample from p instead of norm(max(0, p − q))",
        rule=Rule(resample=lambda p, q: p),
        seen_in="reported in SafeAILab/EAGLE issue #329: its non-greedy path resampled from the target's p "
        "(https://github.com/SafeAILab/EAGLE/issues/329)",
    ),
    Variant(
        "correction_from_q",
        "correction drawn from q",
        "on a rejection, draw the correction from the draft's q",
        rule=Rule(resample=lambda p, q: q),
    ),
    Variant(
        "accept_if_p_ge_q",
        "accept when p ≥ q",
        "keep a draft only if p(x) ≥ q(x), never with probability p/q",
        rule=Rule(acceptance=lambda p_x, q_x: (p_x >= q_x).to(p_x.dtype)),
    ),
    Variant(
        "greedy_soft_q",
        "greedy draft with soft q",
        "the draft takes argmax q, but the ratio uses its soft q(x) < 1",
        propose=greedy_proposal,
        seen_in="acknowledged in jaymody/speculative-sampling issue #3: argmax drafts judged with softmax "
        "probabilities (https://github.com/jaymody/speculative-sampling/issues/3)",
    ),
    Variant(
        "q_before_top_k",
        "q before top-k, sampled after",
        "the draft samples from top-2 of q, the ratio uses q before top-k",
        propose=top_k_proposal(2),
        seen_in="reported in huggingface/transformers issue #47932: candidate generators returned a q they did not "
        "sample from (https://github.com/huggingface/transformers/issues/47932)",
    ),
    Variant(
        TYPICAL,
        "Medusa's typical acceptance",
        "keep a draft whenever p(x) > min(ε, δ·e^(−H(p))) (ε = 0.09, δ = 0.3), with no random draw and no q, and on "
        "a rejection draw the next token from p itself. Not lossless by design: it trades the exact distribution for "
        "longer accepted runs, so every draft the target finds typical enough passes and the tokens the draft "
        "proposes often gain probability, while the rest lose it",
        rule=Rule(resample=lambda p, q: p, threshold=typical_threshold),
        seen_in="the default sampling of FasterDecoding/Medusa, offered by its paper (arXiv 2401.10774, section "
        "2.3.1) as a lossy alternative to rejection sampling "
        "(https://github.com/FasterDecoding/Medusa/blob/main/medusa/model/utils.py, evaluate_posterior)",
    ),
)
VARIANTS_BY_KEY = {v.key: v for v in VARIANTS}


def get_variant(key: str) -> Variant:
    try:
        return VARIANTS_BY_KEY[key]
    except KeyError:
        raise SettingsError(f"unknown sampler variant {key!r}; choose one of {', '.join(VARIANTS_BY_KEY)}.") from None


def first_token_distribution(p: torch.Tensor, q: torch.Tensor, variant: Variant = EXACT_VARIANT) -> torch.Tensor:
    """Exact distribution of the first committed token at one position: (V,) p and q -> (V,)."""
    kept, rejected, resample = _position(p, q, variant)
    return kept + rejected * resample


def _position(p: torch.Tensor, q: torch.Tensor, variant: Variant) -> tuple[torch.Tensor, float, torch.Tensor]:
    """Mass emitted as each accepted draft, total rejected mass, and the correction distribution."""
    proposal, told = variant.propose(q), variant.ratio_q(q)  # (V,), (V,)
    accept = variant.rule.accept(p, p, told.clamp(min=_TINY))  # (V,)
    kept = proposal * accept * (proposal > 0)
    return kept, 1.0 - float(kept.sum()), variant.rule.resample(p, told)


def variant_distribution(
    p: LanguageModel, q: LanguageModel, context: Context, k: int, length: int, variant: Variant = EXACT_VARIANT
) -> dict[Context, float]:
    """Exact distribution of the first `length` tokens under `variant` (K shrinks at the end, as in the engine)."""
    return speculative_distribution(p, q, context, k, length, judge=lambda p_i, q_i: _position(p_i, q_i, variant))
