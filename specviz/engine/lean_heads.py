"""The feature heads' draft step on the lean forward (engine/lean.py): EAGLE-1's head, EAGLE-3's head and the MTP
module each run their one decoder layer through `lean.layer_forward` over a preallocated LeanCache, with their
matrices and LM head as lean Matrices and the rotary rows from a table, so a draft step costs roughly its matrix
products (through Hugging Face's modules, c was 0.34-0.52 of a target step on a float32 CPU; the draft model's 0.15).

The modules (engine/heads.py, eagle3.py, mtp.py) stay the reference and run whenever the run's forward is Hugging
Face's; tests hold the two paths' logits together and their greedy tokens equal (tests/engine/test_lean_heads.py).
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
from specviz.engine.eagle3 import Eagle3Head
from specviz.engine.heads import EagleHead
from specviz.engine.lean import (
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
from specviz.engine.masks import causal_allowed
from specviz.engine.mtp import MtpModule

EAGLE1, EAGLE3, MTP = "eagle", "eagle3", "mtp"  # which head a LeanHead applies


@dataclass(frozen=True, eq=False)
class LeanHead:
    """One loaded head as the lean step applies it; built once per head (lean_head), read-only, shared by every run.

    EAGLE-1: g = layer(fc([emb; f])), no input norm, logits = the target's head on g.
    MTP:     h' = block(eh_proj([enorm(emb); hnorm(h)])), logits = the target's head on norm(h').
    EAGLE-3: s = h + attn([input_layernorm(emb); hidden_norm(h)]) + mlp(...), logits = its own head on norm(s),
             over its draft vocabulary placed at the target's ids (fc fuses the target's states before the first step).
    """

    kind: str  # EAGLE1, EAGLE3 or MTP
    weights: LeanWeights  # the one layer, shapes and rotary table; embed: the target's; head: the LM head drafted with
    project: Matrix  # EAGLE-1's fc and MTP's eh_proj (2H, H) over [emb; h]; EAGLE-3's fc (layers·H, H) over the states
    emb_norm: torch.Tensor | None  # (H,) MTP's enorm, EAGLE-3's input_layernorm; None: EAGLE-1 reads emb as it is
    state_norm: torch.Tensor | None  # (H,) MTP's hnorm, EAGLE-3's hidden_norm
    target_ids: torch.Tensor | None = None  # (N,) EAGLE-3: each draft id's target id; None: the head is the target's
    placed_vocab: int = 0  # EAGLE-3: the width its logits are placed into (its config's vocab_size)

    def new_cache(self) -> LeanCache:
        """One run's cache of the head's layer (one layer of keys and values)."""
        return LeanCache(self.weights)

    def forward(self, tokens: torch.Tensor, states: torch.Tensor, cache: LeanCache, positions=None, mask=None):
        """Pairs (state_t, x_{t+1}): tokens (n,) with states (n, H) (the target's features, or the head's own output)
        -> EAGLE-1 g, MTP h' (n, H); EAGLE-3 (normed, s), each (n, H). positions (1, n) and the additive mask
        (1, 1, n, cached + n) are a tree pass's, as the module takes them; default: causal, after the cache."""
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
        if self.kind == EAGLE3:  # q, k and v read both halves normed (2H); the residual is h itself
            reads = torch.cat([self._norm(emb, self.emb_norm), self._norm(states, self.state_norm)], dim=-1)
            s = layer_forward(w, layer, 0, cache, states, cos, sin, mask, reads)
            out = (self._norm(s, w.final_norm), s)
        else:
            if self.emb_norm is not None:  # MTP norms both halves; EAGLE-1 projects them as they are
                emb, states = self._norm(emb, self.emb_norm), self._norm(states, self.state_norm)
            x = self.project.times(torch.cat([emb, states], dim=-1))  # (n, H)
            out = layer_forward(w, layer, 0, cache, x, cos, sin, mask)
        cache.length = cached + n
        return out

    def logits(self, out, vocab_size: int) -> torch.Tensor:
        """(..., V) draft logits from the head's output(s) (..., H): EAGLE-1's g; MTP's h' through its output norm;
        EAGLE-3's normed state through its own head, placed at the target's ids and -inf elsewhere (q = 0 there)."""
        x = out[0] if self.kind == EAGLE3 else out
        if self.kind == MTP:
            x = self._norm(x, self.weights.final_norm)
        rows = x.reshape(-1, x.shape[-1])  # (rows, H)
        logits = self.weights.head.times(rows)  # (rows, V_head), or (rows, N) over EAGLE-3's draft vocabulary
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
    """Copies of the head's weights; the embedding and (but for EAGLE-3) the LM head are the target's."""
    if isinstance(head, Eagle3Head):
        kind, layer, project, final_norm = EAGLE3, head.midlayer, head.fc, head.norm.weight
        norms = (head.midlayer.input_layernorm.weight, head.midlayer.hidden_norm.weight)
        lm_head = input_major(head.lm_head)  # (H, N) its own, over the draft vocabulary
    elif isinstance(head, MtpModule):
        kind, layer, project, final_norm = MTP, head.mtp_block, head.eh_proj, head.shared_head.norm.weight
        norms, lm_head = (head.enorm.weight, head.hnorm.weight), lean_weights(target).head  # (H, V) shared
    elif isinstance(head, EagleHead):
        kind, layer, project, final_norm = EAGLE1, head.layers[0], head.fc, None
        norms, lm_head = (None, None), lean_weights(target).head
    else:
        raise TypeError(f"no lean step for a {type(head).__name__}")
    config, heads = head.config, head.config.num_attention_heads
    embed = target.get_input_embeddings().weight.detach()  # (V, H) the target's, shared
    weights = LeanWeights(
        rotary_emb=head.rotary_emb,
        layers=(layer_weights(layer),),
        embed=embed,
        final_norm=_detached(final_norm),
        head=lm_head,
        eps=float(config.rms_norm_eps),
        heads=heads,
        kv_heads=getattr(config, "num_key_value_heads", None) or heads,
        head_dim=getattr(config, "head_dim", None) or config.hidden_size // heads,
        rotary_table=rotary_table(config, head.rotary_emb, embed),
    )
    eagle3 = kind == EAGLE3
    return LeanHead(
        kind=kind,
        weights=weights,
        project=input_major(project),
        emb_norm=_detached(norms[0]),
        state_norm=_detached(norms[1]),
        target_ids=head.target_ids.detach().clone() if eagle3 else None,
        placed_vocab=int(config.vocab_size) if eagle3 else 0,
    )


def _detached(t: torch.Tensor | None) -> torch.Tensor | None:
    return None if t is None else t.detach()
