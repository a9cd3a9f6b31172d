"""Hand-built EAGLE-1 heads whose drafts can be worked out by hand, for the tests of engine/heads/eagle.py and its
proposer.

Both zero the decoder layer's attention and MLP outputs (o_proj, down_proj), so the layer is its residual path and the
head's prediction is fc's output: fc = [I | 0] echoes the embedding of x_{t+1}, fc = [0 | I] echoes the feature f_t.
"""

from __future__ import annotations

from pathlib import Path

import torch

from specviz.engine.heads.eagle import EagleHead, new_eagle_head, save_eagle_head


def degenerate_head(target, echo: str) -> EagleHead:
    """echo="embedding": g_{t+1} = emb(x_{t+1}); echo="feature": g_{t+1} = f_t."""
    head = new_eagle_head(target, seed=5)
    width = target.config.hidden_size
    eye, zero = torch.eye(width), torch.zeros(width, width)
    with torch.no_grad():
        head.fc.weight.copy_(torch.cat([eye, zero] if echo == "embedding" else [zero, eye], dim=1))  # (H, 2H)
        head.layers[0].self_attn.o_proj.weight.zero_()
        head.layers[0].mlp.down_proj.weight.zero_()
    return head.eval()


def save_degenerate(target, echo: str, directory: Path) -> Path:
    return save_eagle_head(degenerate_head(target, echo), directory, dtype=torch.float32)


def embedding_chain(pair, last: int, k: int) -> list[int]:
    """The embedding-echo head's k drafts after `last`, by hand: d_{i+1} = argmax_y lm_head(emb(d_i))_y."""
    embed = pair.target.get_input_embeddings().weight  # (V', H)
    lm_head = pair.target.get_output_embeddings().weight[: pair.vocab_size]  # (V, H)
    drafts = []
    for _ in range(k):
        last = int((lm_head @ embed[last]).argmax())
        drafts.append(last)
    return drafts
