"""One model's per-run KV cache: what it has seen, what it still has to read, and rollback to a committed prefix."""

from __future__ import annotations

import torch
from transformers import DynamicCache, PreTrainedModel

from specviz.core.settings import FORWARD_HF, FORWARD_LEAN
from specviz.engine.forward.lean import LeanCache, LeanWeights, Matrix, lean_forward, lean_weights, packed_copy
from specviz.engine.forward.masks import additive_mask


class CachedModel:
    """A read-only model plus this run's own cache; the model itself never holds per-run state.

    Invariant: cache + pending = the committed sequence. Each forward reads pending + any extra (draft) tokens.
    """

    def __init__(
        self,
        model: PreTrainedModel,
        vocab_size: int,
        prompt_ids: list[int],
        vocab_ids: torch.Tensor | None = None,
        hidden_layers: tuple[int, ...] = (),
        forward: str = FORWARD_HF,
        lean: LeanWeights | None = None,
    ):
        """vocab_ids (N,) long: a trimmed vocabulary (engine/loading/vocab.py); logits are computed for these tokens
        only and the others get -inf (probability 0). None: the model's whole head. hidden_layers: the `hidden_states`
        each forward keeps in `self.hidden` (layers, rows read, H), for a drafter that reads the target's features.
        forward: "hf" (Hugging Face's, the reference) or "lean" (engine/forward/lean.py; the same function, less
        overhead). lean: weights the lean forward runs instead of the model's own (the target's low-bit copy,
        engine/forward/quantized.py), which also means forward lean."""
        self.model = model
        self.vocab_size = vocab_size
        self.device = model.device
        self.vocab_ids = None if vocab_ids is None else vocab_ids.to(self.device)
        if forward == FORWARD_LEAN or lean is not None:
            self.lean = lean if lean is not None else lean_weights(model)
            self.cache = LeanCache(self.lean)
            self.head = self.lean.head if vocab_ids is None else _trimmed(self.lean.head, self.vocab_ids)  # (H, V or N)
        else:
            self.lean = None
            self.cache = DynamicCache(config=model.config)
            self.head = None if vocab_ids is None else model.get_output_embeddings().weight[self.vocab_ids]  # (N, H)
        self.pending: list[int] = list(prompt_ids)
        self.fed_extra = 0  # extra tokens read by the last forward, not yet confirmed
        self.hidden_layers = tuple(hidden_layers)
        self.hidden: torch.Tensor | None = None  # (layers, rows, H) of the last forward's tokens, if layers were asked

    @property
    def length(self) -> int:
        return self.cache.get_seq_length()

    def prefill(self) -> None:
        """Read all of the prompt but its last token, which the first step reads (so its logits come from a step)."""
        self.hidden = None
        if len(self.pending) > 1:
            ids = self._ids(self.pending[:-1])
            self._logits(ids, self._last(ids, 1))
            self.pending = self.pending[-1:]

    def forward(self, extra: torch.Tensor | None = None, logits_to_keep: int = 1) -> torch.Tensor:
        """Read pending tokens (+ extra (n,) tokens already on the device); return (logits_to_keep, V) logits."""
        ids = self._ids(self.pending)  # (1, P)
        if extra is not None and extra.numel():
            ids = torch.cat([ids, extra.view(1, -1)], dim=1)  # (1, P + n)
        logits = self._logits(ids, self._last(ids, logits_to_keep))  # (logits_to_keep, V)
        self.pending, self.fed_extra = [], 0 if extra is None else extra.numel()
        return logits

    def step(self, token: torch.Tensor) -> torch.Tensor:
        """Read one more (unconfirmed) token already on the device; return its (V,) next-token logits."""
        logits = self._logits(token.view(1, 1), None)
        self.fed_extra += 1
        return logits[-1]

    def forward_tree(self, nodes: torch.Tensor, depth: torch.Tensor, sees: torch.Tensor) -> torch.Tensor:
        """Read pending tokens (causally) plus n tree nodes in one pass, each node seeing only the committed sequence
        and its own ancestors (tree attention); return the logits of the last pending token (if any) and every node.

        nodes (n,) long; depth (n,) long, 1 = a child of the last committed token; sees (n, E + n) bool: node i may
        attend to tree token j, over the E tree tokens this cache read earlier in the round, then these n (each must
        see itself). Positions are the committed length - 1 + depth, as in the chain each node would sit in. The mask is
        a 4D additive mask (0 = attend, the dtype's minimum = blocked) of shape (1, 1, P + n, cache + P + n), which
        transformers passes to eager and sdpa attention as given (masking_utils: a 4D mask is used as-is). Rows:
        (P + n, V) logits when P > 0, else (n, V). Nodes count as unconfirmed extra tokens: `advance(committed, 0)`
        crops them all and queues the committed path, which the next pass re-reads.
        """
        p_len, n, e_len = len(self.pending), nodes.numel(), self.fed_extra
        if p_len and e_len:
            raise RuntimeError("pending tokens are read before any tree node of the round")
        committed = self.length - e_len  # tokens of the committed sequence in the cache
        dev = self.device
        allowed = torch.zeros(p_len + n, committed + e_len + p_len + n, dtype=torch.bool, device=dev)  # (P+n, total)
        allowed[:, :committed] = True
        allowed[:p_len, committed + e_len : committed + e_len + p_len] = torch.ones(p_len, p_len, device=dev).tril() > 0
        allowed[p_len:, committed : committed + e_len] = sees[:, :e_len]
        allowed[p_len:, committed + e_len : committed + e_len + p_len] = True
        allowed[p_len:, committed + e_len + p_len :] = sees[:, e_len:]
        length = committed + p_len  # the committed sequence's length
        positions = torch.cat([torch.arange(committed, length, device=dev), length - 1 + depth.to(dev)])  # (P+n,)
        ids = torch.cat([self._ids(self.pending).view(-1), nodes.to(dev)]).view(1, -1)  # (1, P+n)
        keep = torch.arange(max(p_len - 1, 0), p_len + n, device=dev)
        logits = self._logits(ids, keep, positions=positions, allowed=allowed)
        self.pending, self.fed_extra = [], e_len + n
        return logits  # (P>0) + n rows

    def advance(self, committed: list[int], n_accepted: int) -> None:
        """After a round: keep the cached drafts that were accepted, drop the rest, queue the committed tokens unseen.

        `committed` starts with the round's accepted drafts (the first `n_accepted`), the drafts this cache read first.
        """
        confirmed = min(n_accepted, self.fed_extra)
        if self.fed_extra > confirmed:
            self.cache.crop(confirmed - self.fed_extra)  # negative: tokens to remove from the end
        self.fed_extra = 0
        self.pending.extend(committed[confirmed:])

    def rewind(self, keep: int, pending: list[int]) -> None:
        """Re-base the committed sequence: keep the first `keep` tokens the cache read (drafts it read this round count
        as read), drop the rest, and queue `pending` unseen (a drafter over another tokenizer realigns this way)."""
        if keep < self.length:
            self.cache.crop(keep - self.length)  # negative: tokens to remove from the end (every cache layer takes it)
        self.fed_extra = 0
        self.pending = list(pending)

    def _logits(
        self,
        ids: torch.Tensor,
        keep: torch.Tensor | None,
        positions: torch.Tensor | None = None,
        allowed: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """(rows, V) next-token logits at positions `keep` of ids (1, L) (every position when None); the cache reads
        ids. positions (L,) and allowed (L, cache + L) bool: a tree's positions and attention (default: in order,
        causal). With a trimmed vocabulary only the kept rows of the head are computed; the other tokens get -inf."""
        if self.lean is not None:
            return self._lean_logits(ids, keep, positions, allowed)
        inputs = {}
        if allowed is not None:  # a 4D additive mask, which transformers passes to eager and sdpa attention as given
            dtype = self.model.dtype
            mask = additive_mask(allowed, dtype)
            inputs = {"attention_mask": mask, "position_ids": positions[None]}  # (1, 1, L, total), (1, L)
        if self.hidden_layers:
            inputs["output_hidden_states"] = True
        if self.head is None:
            to_keep = 0 if keep is None else keep  # 0: every position
            out = self.model(input_ids=ids, cache=self.cache, use_cache=True, logits_to_keep=to_keep, **inputs)
            self._keep_hidden(out)
            return out.logits[0, :, : self.vocab_size]  # wider logits are padding
        out = self.model.base_model(input_ids=ids, cache=self.cache, use_cache=True, **inputs)
        self._keep_hidden(out)
        hidden = out.last_hidden_state[0]
        if keep is not None:
            hidden = hidden[keep]  # (rows, H)
        return self._widened(torch.nn.functional.linear(hidden, self.head))  # (rows, N) -> (rows, V)

    def _lean_logits(self, ids, keep, positions, allowed) -> torch.Tensor:
        """The lean forward's logits: the final hidden states of the kept rows times the (input-major) head."""
        hidden, self.hidden = lean_forward(self.lean, self.cache, ids[0], positions, allowed, self.hidden_layers)
        if keep is not None:
            hidden = hidden[keep]  # (rows, H)
        logits = self.head.times(hidden)  # (rows, V_head or N)
        return logits[:, : self.vocab_size] if self.vocab_ids is None else self._widened(logits)

    def _widened(self, small: torch.Tensor) -> torch.Tensor:
        """(rows, N) logits of the kept tokens as (rows, V), -inf for the rest."""
        full = torch.full((small.shape[0], self.vocab_size), float("-inf"), dtype=small.dtype, device=small.device)
        return full.index_copy_(1, self.vocab_ids, small)

    def _keep_hidden(self, out) -> None:
        if self.hidden_layers:
            self.hidden = torch.stack([out.hidden_states[layer][0] for layer in self.hidden_layers])  # (layers, L, H)

    def _last(self, ids: torch.Tensor, n: int) -> torch.Tensor:
        """Positions of the last n of ids (1, L), for `logits_to_keep`.

        Given as indices, not as the int n: an int makes the model slice its hidden states into a strided view, and
        on CPU the LM head then takes a batched-matmul path that copies the whole head matrix (~2 ms per pass here in
        bfloat16, about a draft step), while indices give it a plain contiguous copy of the n rows.
        """
        return torch.arange(ids.shape[1] - n, ids.shape[1], device=self.device)

    def _ids(self, tokens: list[int]) -> torch.Tensor:
        return torch.tensor([tokens], dtype=torch.long, device=self.device)


def _trimmed(head: Matrix, vocab_ids: torch.Tensor) -> Matrix:
    """The kept columns of an input-major LM head (H, N), this run's own copy, packed as the whole head is."""
    weight = head.weight[:, vocab_ids]
    return Matrix(weight, None, packed_copy(weight) if head.packed is not None else None)
