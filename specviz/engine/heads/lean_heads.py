"""The feature heads' draft step on the lean forward (engine/forward/lean.py): a head with one decoder layer runs it
through `lean.layer_forward` over a preallocated LeanCache, with its matrices and LM head as lean Matrices and the
rotary rows from a table, so a draft step costs roughly its matrix products (through Hugging Face's modules, c was
0.34-0.52 of a target step on a float32 CPU; the draft model's 0.15). Each head says what its step is built from
(`lean_parts`, a HeadParts); this module names none of them.

The heads' own modules stay the reference and run whenever the run's forward is Hugging Face's; tests hold the two
paths' logits together and their greedy tokens equal (tests/engine/test_lean_heads.py).
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers import PreTrainedModel

from specviz.core.settings import FORWARD_LEAN
from specviz.engine.forward.lean import (
    LeanCache,
    LeanWeights,
    Matrix,
    chosen_forward,
    input_major,
    layer_forward,
    layer_weights,
    lean_weights,
    rotary_table,
)
from specviz.engine.forward.masks import causal_allowed


@dataclass(frozen=True)
class HeadParts:
    """What a head's lean step is built from, as the head gives it (its `lean_parts()`): two ways a one-layer head
    reads the pair (state h, next token's embedding e), and how its logits come out.

    projected: x = project([norm_e(e); norm_h(h)]) enters the layer (no norm where one is None).
    read whole: the layer's q, k and v read [norm_e(e); norm_h(h)] (2H) and its residual is h; the output is
    (final_norm(s), s), and `project` fuses the target's states before the first step."""

    layer: nn.Module  # the one decoder layer
    project: nn.Linear  # [e; h] (2H) -> H, or the target's states side by side (layers·H) -> H
    emb_norm: torch.Tensor | None  # (H,)
    state_norm: torch.Tensor | None  # (H,)
    final_norm: torch.Tensor | None  # (H,) the output's norm, where it has one
    lm_head: nn.Linear | None = None  # its own LM head; None: the target's
    reads_whole: bool = False  # the layer reads [norm_e(e); norm_h(h)] itself (see above)
    norms_output: bool = False  # logits read final_norm(out) before the LM head
    target_ids: torch.Tensor | None = None  # (N,) its own head's draft ids at the target's ids


@dataclass(frozen=True, eq=False)
class LeanHead:
    """One loaded head as the lean step applies it (HeadParts says how); built once per head (lean_head), read-only,
    shared by every run."""

    weights: LeanWeights  # the one layer, shapes and rotary table; embed: the target's; head: the LM head drafted with
    project: Matrix  # (2H, H) over [e; h], or (layers·H, H) fusing the target's states (reads_whole)
    emb_norm: torch.Tensor | None  # (H,)
    state_norm: torch.Tensor | None  # (H,)
    reads_whole: bool = False  # HeadParts.reads_whole
    norms_output: bool = False  # HeadParts.norms_output
    target_ids: torch.Tensor | None = None  # (N,) each draft id's target id; None: the head is the target's
    placed_vocab: int = 0  # the width its logits are placed into where it drafts over ids of its own

    def new_cache(self) -> LeanCache:
        """One run's cache of the head's layer (one layer of keys and values)."""
        return LeanCache(self.weights)

    def forward(self, tokens: torch.Tensor, states: torch.Tensor, cache: LeanCache, positions=None, mask=None):
        """Pairs (state_t, x_{t+1}): tokens (n,) with states (n, H) (the target's features, or the head's own output)
        -> its output (n, H), or (normed, s), each (n, H), for a head that reads the pair whole. positions (1, n) and
        the additive mask (1, 1, n, cached + n) are a tree pass's, as the module takes them; default: causal, after
        the cache."""
        w, layer = self.weights, self.weights.layers[0]
        cached, n, device = cache.length, tokens.numel(), tokens.device
        at = torch.arange(cached, cached + n, device=device) if positions is None else positions[0]  # (n,)
        if mask is not None:
            mask = mask[0, 0] == 0  # (n, cached + n) bool: may attend
        elif n > 1:
            mask = causal_allowed(cached, n, device)
        cache.reserve(cached + n)
        cos, sin = w.rotary(at, cached + n)  # (n, d); every position is below cached + n
        emb = F.embedding(tokens, w.embed)  # (n, H)
        if self.reads_whole:  # q, k and v read both halves normed (2H); the residual is h itself
            reads = torch.cat([self._norm(emb, self.emb_norm), self._norm(states, self.state_norm)], dim=-1)
            s = layer_forward(w, layer, 0, cache, states, cos, sin, mask, reads)
            out = (self._norm(s, w.final_norm), s)
        else:
            if self.emb_norm is not None:  # some heads norm both halves, others project them as they are
                emb, states = self._norm(emb, self.emb_norm), self._norm(states, self.state_norm)
            x = self.project.times(torch.cat([emb, states], dim=-1))  # (n, H)
            out = layer_forward(w, layer, 0, cache, x, cos, sin, mask)
        cache.length = cached + n
        return out

    def logits(self, out, vocab_size: int) -> torch.Tensor:
        """(..., V) draft logits from the head's output(s) (..., H), through its output norm where it has one; a head
        with ids of its own places them at the target's ids, -inf elsewhere (q = 0 there)."""
        x = out[0] if self.reads_whole else out
        if self.norms_output:
            x = self._norm(x, self.weights.final_norm)
        rows = x.reshape(-1, x.shape[-1])  # (rows, H)
        logits = self.weights.head.times(rows)  # (rows, V), or (rows, N) over a draft vocabulary of its own
        if self.target_ids is not None:
            full = logits.new_full((rows.shape[0], self.placed_vocab), float("-inf"))
            logits = full.index_copy_(1, self.target_ids, logits)
        return logits[:, :vocab_size].reshape(*x.shape[:-1], -1)

    def _norm(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(x, x.shape[-1:], weight, self.weights.eps)


def head_refusal(head: nn.Module) -> str | None:
    """Why the lean step cannot run this head (None: it can): its layer computes SiLU gates, as layer_forward does."""
    act = getattr(head.config, "hidden_act", "silu")
    return None if act == "silu" else f"the lean head step computes SiLU gates; this head uses {act!r}"


def lean_step(head: nn.Module, target: PreTrainedModel, choice: str) -> LeanHead | None:
    """The head's lean step where the run's forward is lean (lean.chosen_forward on the target, which also gives the
    embedding and LM head); None where it is Hugging Face's: the head's own modules run, the reference."""
    forward = chosen_forward(choice, target, head_refusal(head))
    return lean_head(head, target) if forward == FORWARD_LEAN else None


_BUILT: weakref.WeakKeyDictionary[nn.Module, LeanHead] = weakref.WeakKeyDictionary()
_BUILDING = threading.Lock()


def lean_head(head: nn.Module, target: PreTrainedModel) -> LeanHead:
    """The head's lean weights, built once per loaded head (keyed weakly; the head is loaded for this target) and
    shared, read-only, by every run and session. The head is never changed: its matrices are copied, not shared."""
    with _BUILDING:
        if head not in _BUILT:
            _BUILT[head] = _build(head, target)
        return _BUILT[head]


def _build(head: nn.Module, target: PreTrainedModel) -> LeanHead:
    """Copies of the head's weights; the embedding and (unless it has its own) the LM head are the target's."""
    if not hasattr(head, "lean_parts"):
        raise TypeError(f"no lean step for a {type(head).__name__}")
    parts: HeadParts = head.lean_parts()
    config, heads = head.config, head.config.num_attention_heads
    embed = target.get_input_embeddings().weight.detach()  # (V, H) the target's, shared
    weights = LeanWeights(
        rotary_emb=head.rotary_emb,
        layers=(layer_weights(parts.layer),),
        embed=embed,
        final_norm=_detached(parts.final_norm),
        head=lean_weights(target).head if parts.lm_head is None else input_major(parts.lm_head),  # (H, V) or (H, N)
        eps=float(config.rms_norm_eps),
        heads=heads,
        kv_heads=getattr(config, "num_key_value_heads", None) or heads,
        head_dim=getattr(config, "head_dim", None) or config.hidden_size // heads,
        rotary_table=rotary_table(config, head.rotary_emb, embed),
    )
    own_ids = parts.target_ids is not None
    return LeanHead(
        weights=weights,
        project=input_major(parts.project),
        emb_norm=_detached(parts.emb_norm),
        state_norm=_detached(parts.state_norm),
        reads_whole=parts.reads_whole,
        norms_output=parts.norms_output,
        target_ids=parts.target_ids.detach().clone() if own_ids else None,
        placed_vocab=int(config.vocab_size) if own_ids else 0,
    )


def _detached(t: torch.Tensor | None) -> torch.Tensor | None:
    return None if t is None else t.detach()
