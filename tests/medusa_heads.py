"""Hand-built Medusa heads whose drafts can be worked out by hand, for the tests of engine/heads/medusa.py and its
proposer.

Every block is the identity (W = 0, b = 0: x + SiLU(0) = x), so each head applies its LM head to the target's feature
h_t itself. "echo": one shared LM head, the target's own, so every head drafts a = argmax p(. | h_t), the token the
target predicted at that row. "shifted": head i has its own LM head, the target's with its rows rolled by i + 1, so
head i drafts (a + 1 + i) mod V (V: the rows rolled).
"""

from __future__ import annotations

from pathlib import Path

import torch

from specviz.engine.heads.medusa import MedusaHeads, new_medusa, save_medusa


def degenerate_medusa(target, kind: str, num_heads: int = 4, vocab: int | None = None) -> MedusaHeads:
    """vocab: roll only the first `vocab` rows (the real tokens of a pair whose LM head is padded past them), so that
    every shifted draft is a real token; None: every row."""
    heads = new_medusa(target, num_heads)  # identity blocks, one shared LM head = the target's
    if kind == "shifted":
        config = target.config.get_text_config()
        heads = MedusaHeads(config.hidden_size, config.vocab_size, num_heads, shared_lm_head=False)
        lm = target.get_output_embeddings().weight[: config.vocab_size].detach()  # (V, H)
        with torch.no_grad():
            for i in range(num_heads):
                heads.blocks[i].layers[0].weight.zero_()
                heads.blocks[i].layers[0].bias.zero_()
                rolled = lm.clone()
                rolled[:vocab] = torch.roll(lm[:vocab], shifts=i + 1, dims=0)  # row y + i + 1 = row y
                heads.lm_heads[i].weight.copy_(rolled)
    return heads.eval()


def random_medusa(target, seed: int, num_heads: int = 4) -> MedusaHeads:
    """Heads of random weights, each with its own LM head: they prove plumbing and exactness, not acceptance."""
    config = target.config.get_text_config()
    torch.manual_seed(seed)
    heads = MedusaHeads(config.hidden_size, config.vocab_size, num_heads, shared_lm_head=False)
    with torch.no_grad():
        for lm in heads.lm_heads:
            lm.weight.normal_(std=0.5)
    return heads.eval()


def save_degenerate_medusa(target, kind: str, directory: Path, num_heads: int = 4, vocab: int | None = None) -> Path:
    return save_medusa(degenerate_medusa(target, kind, num_heads, vocab), directory, dtype=torch.float32)


def shifted_drafts(a: int, k: int, vocab: int) -> list[int]:
    """The shifted head's k drafts when the target's argmax at the feature row is a."""
    return [(a + 1 + i) % vocab for i in range(k)]
