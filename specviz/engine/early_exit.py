"""Self-speculation by early exit (LayerSkip-style): the target's own first E layers, its final norm and its LM head
draft; the full target verifies. Re-implemented from the idea of facebookresearch/LayerSkip `self_speculation/`
(CC BY-NC: no code taken), on transformers' Llama-family decoder layers called one by one.

KV reuse, both halves of LayerSkip's:
1. The draft reads the target's own cache. Layers 0..E-1 of the draft ARE layers 0..E-1 of the target, so their keys
   and values for the committed tokens are the target's: the draft never re-reads the prompt or any committed token
   (transformers' `assistant_early_exit` keeps a second cache for the same layers and fills it again).
2. The verify pass skips layers 0..E-1 for every token the draft already ran through them. The draft appends its
   layer 0..E-1 keys and values to the target's cache (for the pending token and the drafts x_1..x_{n-1}) and keeps
   their layer-E hidden states; the verify pass runs layers 0..E-1 on x_n alone (the one token the draft never fed
   back), then layers E..L-1 on all 1 + n rows from those hidden states. A round of n drafts thus costs
   (n + pending) token-passes of E layers and 1 + n of L - E layers, against n + (1 + n) of all L layers without reuse.
The caches of layers < E and >= E hold the same tokens again after the verify pass, so the loop's one rollback
(`CachedModel.advance`, cropping every layer) drops the rejected drafts from both halves.

Exactness does not depend on the reuse, only the cost does: the keys and values the draft wrote are those the target
computes for the same tokens at the same positions in the same layers. The drafts are sampled from q, the exit's
processed distribution, and judged by the usual min(1, p/q) test; greedy output equals plain decoding.
"""

from __future__ import annotations

import torch
from transformers import PreTrainedModel

from specviz.engine.forward import masks
from specviz.engine.forward.kv import CachedModel
from specviz.errors import SettingsError


def check_exit_layer(model: PreTrainedModel, exit_layer: int) -> None:
    """Refuse an exit layer the model does not have, or a model whose decoder this engine cannot split."""
    base = model.base_model
    if not all(hasattr(base, part) for part in ("embed_tokens", "layers", "norm", "rotary_emb")):
        raise SettingsError(
            f"Early exit splits a Llama-style decoder (embed_tokens, layers, norm, rotary_emb); "
            f"{type(model).__name__} is not one. Use another method with this target."
        )
    n_layers = len(base.layers)
    if not 1 <= exit_layer <= n_layers - 1:
        raise SettingsError(
            f"The exit layer E must be from 1 to {n_layers - 1}: this target has L = {n_layers} layers, and the draft "
            f"is its first E (E = L would be the target itself); got E = {exit_layer}."
        )


class SplitTarget:
    """The target's decoder in two halves over its own per-run cache: layers [0, E) and [E, L), then norm and head.

    Each call gives positions explicitly and builds its own causal mask over the cache of the layers it runs, so the
    two halves may hold different numbers of tokens between a draft and its verify pass."""

    def __init__(self, state: CachedModel, exit_layer: int):
        self.state = state
        self.model = state.model
        self.base = state.model.base_model
        self.exit_layer = exit_layer
        self.n_layers = len(self.base.layers)

    def lower_length(self) -> int:
        """Tokens the cache of layers < E holds (the committed ones plus the draft's scratch)."""
        return self.state.cache.get_seq_length(0)

    def upper_length(self) -> int:
        """Tokens the cache of layers >= E holds (the committed ones only, between a draft and its verify)."""
        return self.state.cache.get_seq_length(self.exit_layer)

    def lower(self, ids: torch.Tensor) -> torch.Tensor:
        """Embed ids (n,) and run layers 0..E-1 over them after what those layers' cache holds; (n, H) at layer E."""
        hidden = self.base.embed_tokens(ids.view(1, -1))  # (1, n, H)
        return self._layers(hidden, 0, self.exit_layer, self.lower_length())[0]

    def upper(self, hidden: torch.Tensor) -> torch.Tensor:
        """Run layers E..L-1 over layer-E states (n, H) after what those layers' cache holds; (n, H) pre-norm."""
        return self._layers(hidden[None], self.exit_layer, self.n_layers, self.upper_length())[0]

    def logits(self, hidden: torch.Tensor, norm: bool = True) -> torch.Tensor:
        """The final norm and LM head on residual states (n, H) -> (n, V) over the shared vocabulary (norm=False:
        the LM head on the raw residual, the exactness lab's switch)."""
        exit_states = self.base.norm(hidden) if norm else hidden  # (n, H)
        return self.model.get_output_embeddings()(exit_states)[:, : self.state.vocab_size]

    def _layers(self, hidden: torch.Tensor, first: int, last: int, past: int) -> torch.Tensor:
        """hidden (1, n, H) through layers [first, last), the tokens at positions past..past+n-1 (causal)."""
        n = hidden.shape[1]
        positions = torch.arange(past, past + n, device=hidden.device)[None]  # (1, n)
        rotary = self.base.rotary_emb(hidden, position_ids=positions)  # (cos, sin), each (1, n, head_dim)
        mask = causal_mask(n, past, hidden.dtype, hidden.device)  # (1, 1, n, past + n) or None for one token
        for layer in self.base.layers[first:last]:
            hidden = layer(
                hidden,
                attention_mask=mask,
                position_ids=positions,
                cache=self.state.cache,
                use_cache=True,
                position_embeddings=rotary,
            )
        return hidden


def causal_mask(n: int, past: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor | None:
    """The additive mask of n new tokens after `past` cached ones, each seeing the cache and itself and those before
    it (0 = attend, the dtype's minimum = blocked); None for one token, which sees everything (as transformers
    passes it). Additive, so eager and sdpa attention both take it as given."""
    if n == 1:
        return None
    return masks.causal_mask(past, n, dtype, device)  # (1, 1, n, past + n)
