"""Hand-built EAGLE-3 heads whose drafts can be worked out by hand, for the tests of engine/heads/eagle3.py and its
proposer.

The degenerate head zeroes the decoder layer's attention and MLP outputs (o_proj, down_proj), so its output s is its
input h; fc = [I | 0 | ...] makes h the target's state at the first layer read; its final norm and LM head are the
target's final norm and the target's LM head rows of the draft vocabulary. So every draft of a round is the target's
greedy token over the draft vocabulary read off that layer's state at the last committed pair's row (the later steps
feed s = h back unchanged).
"""

from __future__ import annotations

from pathlib import Path

import torch

from specviz.engine.heads.eagle3 import Eagle3Head, new_head3, save_head3


def every_third(pair) -> torch.Tensor:
    """A draft vocabulary of every third token id (ascending), so d2t is not the identity."""
    return torch.arange(0, pair.vocab_size, 3)


def degenerate_head3(target, vocab_ids: torch.Tensor) -> Eagle3Head:
    head = new_head3(target, vocab_ids, seed=5)
    width = target.config.hidden_size
    n = len(head.layers_read)
    with torch.no_grad():
        head.fc.weight.copy_(torch.cat([torch.eye(width)] + [torch.zeros(width, width)] * (n - 1), dim=1))
        head.midlayer.self_attn.o_proj.weight.zero_()
        head.midlayer.mlp.down_proj.weight.zero_()
        head.norm.weight.copy_(target.model.norm.weight)
        head.lm_head.weight.copy_(target.get_output_embeddings().weight[vocab_ids])
    return head.eval()


def save_degenerate3(target, vocab_ids: torch.Tensor, directory: Path) -> Path:
    return save_head3(degenerate_head3(target, vocab_ids), directory, dtype=torch.float32)


def echo_draft(pair, head: Eagle3Head, ids: list[int]) -> int:
    """By hand: the degenerate head's draft after the committed ids (x_0..x_n), read off the target's state at the
    first layer read, row n - 1: the kept token of largest lm_head(norm(state))."""
    with torch.no_grad():
        states = pair.target(input_ids=torch.tensor([ids[:-1]]), output_hidden_states=True).hidden_states
        state = states[head.layers_read[0]][0, -1]  # (H,)
        logits = pair.target.get_output_embeddings()(pair.target.model.norm(state))  # (V',)
    vocab_ids = head.target_ids
    return int(vocab_ids[logits[vocab_ids].argmax()])
