"""One model's per-run KV cache: what it has seen, what it still has to read, and rollback to a committed prefix."""

from __future__ import annotations

import torch
from transformers import DynamicCache, PreTrainedModel


class CachedModel:
    """A read-only model plus this run's own cache; the model itself never holds per-run state.

    Invariant: cache + pending = the committed sequence. Each forward reads pending + any extra (draft) tokens.
    """

    def __init__(self, model: PreTrainedModel, vocab_size: int, prompt_ids: list[int]):
        self.model = model
        self.vocab_size = vocab_size
        self.cache = DynamicCache(config=model.config)
        self.device = model.device
        self.pending: list[int] = list(prompt_ids)
        self.fed_extra = 0  # extra tokens read by the last forward, not yet confirmed

    @property
    def length(self) -> int:
        return self.cache.get_seq_length()

    def prefill(self) -> None:
        """Read all of the prompt but its last token, which the first step reads (so its logits come from a step)."""
        if len(self.pending) > 1:
            ids = self._ids(self.pending[:-1])
            self.model(input_ids=ids, cache=self.cache, use_cache=True, logits_to_keep=self._last(ids, 1))
            self.pending = self.pending[-1:]

    def forward(self, extra: torch.Tensor | None = None, logits_to_keep: int = 1) -> torch.Tensor:
        """Read pending tokens (+ extra (n,) tokens already on the device); return (logits_to_keep, V) logits."""
        ids = self._ids(self.pending)  # (1, P)
        if extra is not None and extra.numel():
            ids = torch.cat([ids, extra.view(1, -1)], dim=1)  # (1, P + n)
        keep = self._last(ids, logits_to_keep)
        out = self.model(input_ids=ids, cache=self.cache, use_cache=True, logits_to_keep=keep)
        self.pending, self.fed_extra = [], 0 if extra is None else extra.numel()
        return out.logits[0, :, : self.vocab_size]  # (logits_to_keep, V); wider logits are padding

    def step(self, token: torch.Tensor) -> torch.Tensor:
        """Read one more (unconfirmed) token already on the device; return its (V,) next-token logits."""
        out = self.model(input_ids=token.view(1, 1), cache=self.cache, use_cache=True)
        self.fed_extra += 1
        return out.logits[0, -1, : self.vocab_size]

    def advance(self, committed: list[int], n_accepted: int) -> None:
        """After a round: keep the cached drafts that were accepted, drop the rest, queue the committed tokens unseen.

        `committed` starts with the round's accepted drafts (the first `n_accepted`), the drafts this cache read first.
        """
        confirmed = min(n_accepted, self.fed_extra)
        if self.fed_extra > confirmed:
            self.cache.crop(confirmed - self.fed_extra)  # negative: tokens to remove from the end
        self.fed_extra = 0
        self.pending.extend(committed[confirmed:])

    def _last(self, ids: torch.Tensor, n: int) -> torch.Tensor:
        """Positions of the last n of ids (1, L), for `logits_to_keep`.

        Given as indices, not as the int n: an int makes the model slice its hidden states into a strided view, and
        on CPU the LM head then takes a batched-matmul path that copies the whole head matrix (~2 ms per pass here in
        bfloat16, about a draft step), while indices give it a plain contiguous copy of the n rows.
        """
        return torch.arange(ids.shape[1] - n, ids.shape[1], device=self.device)

    def _ids(self, tokens: list[int]) -> torch.Tensor:
        return torch.tensor([tokens], dtype=torch.long, device=self.device)
