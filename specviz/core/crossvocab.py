"""Drafting across two tokenizers (Timor et al., ICML 2025, arXiv 2502.05202) as pure functions.

Names: V_t the target's vocabulary, V_d the draft's, I = V_t ∩ V_d the tokens both spell the same way.

- TLI (token-level intersection): the draft's processed distribution restricted to I and renormalised is a
  distribution q′ over target tokens (zero outside I); a draft x ~ q′ is judged by the ordinary rule min(1, p/q′),
  residual and bonus (core/verify.py), so the output is exactly p. What it costs: the mass q puts outside I each step.
- SLEM (string-level exact match): the draft's tokens are decoded to text, the text re-tokenized into target tokens,
  and those are judged as a deterministic proposal (one-hot q: accept x with probability p(x); greedy: exact match).
  The draft's own tokens never meet p, so any text it writes is allowed; what is kept is where the two tokenizations
  agree, and the draft realigns its context to the committed text after a mismatch.

No tokenizer is read here: strings in, ids and tensors out (engine/loading/vocab_map.py builds the map from real
tokenizers)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from specviz.core.sampling import SamplingSettings, logits_to_probs

REPLACEMENT = "\ufffd"  # what a token holding part of a UTF-8 character decodes to alone: no spelling to match


@dataclass(frozen=True)
class Intersection:
    """The tokens two vocabularies spell the same way, as (draft id, target id) pairs in target-id order."""

    draft_ids: tuple[int, ...]
    target_ids: tuple[int, ...]
    draft_vocab: int  # V_d
    target_vocab: int  # V_t

    @property
    def size(self) -> int:
        return len(self.target_ids)

    @property
    def share(self) -> float:
        """|I| / |V_t|: the part of the target's vocabulary a TLI draft can propose."""
        return self.size / self.target_vocab if self.target_vocab else 0.0

    def to_target(self) -> dict[int, int]:
        """Draft id -> target id, for the tokens in I."""
        return dict(zip(self.draft_ids, self.target_ids))

    def to_draft(self) -> dict[int, int]:
        """Target id -> draft id, for the tokens in I."""
        return dict(zip(self.target_ids, self.draft_ids))


def spellable(strings: Sequence[str]) -> dict[str, int]:
    """String -> id for the tokens whose spelling names them alone: non-empty, whole characters, said once."""
    counts = Counter(strings)
    return {s: i for i, s in enumerate(strings) if s and REPLACEMENT not in s and counts[s] == 1}


def intersect(draft_strings: Sequence[str], target_strings: Sequence[str]) -> Intersection:
    """Pair the tokens of two vocabularies by their decoded strings (each list indexed by token id)."""
    draft, target = spellable(draft_strings), spellable(target_strings)
    shared = sorted((target[s], draft[s]) for s in draft.keys() & target.keys())
    return Intersection(
        draft_ids=tuple(d for _, d in shared),
        target_ids=tuple(t for t, _ in shared),
        draft_vocab=len(draft_strings),
        target_vocab=len(target_strings),
    )


@dataclass(frozen=True)
class TliStep:
    """One TLI draft position: q′ over the target's tokens, and what the restriction to I threw away."""

    q: torch.Tensor  # (..., V_t) the distribution the draft is sampled from (zero outside I)
    lost: torch.Tensor  # (...) the processed draft mass outside I: 1 − Σ_{x ∈ I} q(x)
    full: torch.Tensor  # (..., V_d) the draft's processed distribution before the restriction


def tli_step(
    draft_logits: torch.Tensor,
    draft_index: torch.Tensor,
    target_index: torch.Tensor,
    target_vocab: int,
    sampling: SamplingSettings,
) -> TliStep:
    """The draft's logits (..., V_d) -> q′ (..., V_t): the tokens outside I masked before processing (so top-k, top-p
    and greedy choose among I; with temperature alone this is q restricted to I and renormalised), scattered into the
    target's ids. draft_index, target_index (n,): I's pairs, as Intersection holds them."""
    full = logits_to_probs(draft_logits, sampling)  # (..., V_d)
    lost = (1.0 - full[..., draft_index].sum(-1)).clamp(min=0.0)  # (...)
    masked = torch.full_like(draft_logits, float("-inf"))
    masked[..., draft_index] = draft_logits[..., draft_index]
    inside = logits_to_probs(masked, sampling)[..., draft_index]  # (..., n)
    q = inside.new_zeros(*inside.shape[:-1], target_vocab)  # (..., V_t)
    q[..., target_index] = inside
    return TliStep(q, lost, full)


def restrict(q: torch.Tensor, draft_index: torch.Tensor, target_index: torch.Tensor, target_vocab: int) -> torch.Tensor:
    """A draft distribution (..., V_d) restricted to I and renormalised, in the target's ids (..., V_t), in q's own
    dtype: what tli_step computes at temperature 1 with no top-k or top-p (the exactness lab enumerates it in
    float64)."""
    inside = q[..., draft_index]  # (..., n)
    out = q.new_zeros(*q.shape[:-1], target_vocab)  # (..., V_t)
    out[..., target_index] = inside / inside.sum(-1, keepdim=True)
    return out


def masked_top(full: torch.Tensor, draft_index: torch.Tensor, n: int = 3) -> list[tuple[int, float]]:
    """The n most likely draft tokens outside I, (draft id, probability) with probability > 0: what TLI threw away."""
    outside = full.clone()  # (V_d,)
    outside[draft_index] = 0.0
    top = outside.topk(min(n, outside.numel()))
    return [(int(i), float(v)) for i, v in zip(top.indices, top.values) if v > 0]


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading ids two sequences share."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


@dataclass(frozen=True)
class Realignment:
    """The draft's context brought back in line with the committed text: what it keeps, what it reads again."""

    kept: int  # draft tokens of its old context still valid (a prefix)
    dropped: int  # draft tokens of its old context thrown away (0: it only reads new text)
    fresh: tuple[int, ...]  # draft tokens it reads now: the rest of the committed text, re-tokenized


def realign(cached: Sequence[int], retokenized: Sequence[int]) -> Realignment:
    """cached: the draft tokens its cache holds; retokenized: the committed text as the draft's tokenizer reads it.
    Keep their common prefix, drop the rest of the cache, read the rest of the new tokens."""
    kept = common_prefix(cached, retokenized)
    return Realignment(kept, len(cached) - kept, tuple(retokenized[kept:]))


def slem_tokens(window: Sequence[int], retokenized: Sequence[int]) -> list[int] | None:
    """SLEM's proposal in target ids: the window (the last committed target tokens) plus the draft's text,
    re-tokenized (retokenized), must start with the window itself; then the tokens after it are the proposal. If the
    draft's text merged into the window's last token (the two tokenizations disagree at the seam): None, and the caller
    tokenizes the draft's text alone."""
    if list(retokenized[: len(window)]) != list(window):
        return None
    return list(retokenized[len(window) :])
