"""Text the target writes itself: data for a second distillation of the draft (sequence-level KD, as in DistillSpec).

A draft distilled on human-written code meets another distribution when it drafts: the target's own continuations,
which follow the target's habits (and repeat themselves). Distilling on those raises the acceptance rate where it is
measured, in decoding from the target; agreement on human-written text may fall a little.
"""

from __future__ import annotations

import numpy as np
import torch


@torch.inference_mode()
def target_continuations(
    target,
    data: np.ndarray,
    *,
    tokens: int,
    prefix_len: int,
    new_tokens: int,
    batch: int,
    seed: int,
    eos: int,
    pad: int,
    device,
    log,
) -> np.ndarray:
    """About `tokens` tokens of prefix + continuation + EOS rows, as one flat uint16 stream like the other splits.

    Prefixes are random windows of `data`; batches alternate between greedy continuations (what greedy speculative
    decoding verifies against) and samples at temperature 1 (what sampling verifies against).
    """
    rng = np.random.default_rng(seed)
    rows: list[np.ndarray] = []
    total, greedy_batch = 0, True
    while total < tokens:
        starts = rng.integers(0, len(data) - prefix_len, size=batch)
        x = torch.from_numpy(np.stack([data[s : s + prefix_len].astype(np.int64) for s in starts])).to(device)
        sampling = {} if greedy_batch else {"temperature": 1.0, "top_k": 0, "top_p": 1.0}
        out = target.generate(
            x,
            attention_mask=torch.ones_like(x),
            max_new_tokens=new_tokens,
            do_sample=not greedy_batch,
            eos_token_id=eos,
            pad_token_id=pad,
            **sampling,
        )
        for row in out.cpu().numpy():  # (prefix_len + new,)
            rows.append(_through_first_eos(row, prefix_len, eos))
            total += len(rows[-1])
        greedy_batch = not greedy_batch
        log(f"generated: {total} / {tokens} tokens")
    return np.concatenate(rows).astype(np.uint16)


def _through_first_eos(row: np.ndarray, prefix_len: int, eos: int) -> np.ndarray:
    """The prefix and the continuation up to its first EOS (padding after it dropped), ending in one EOS."""
    ends = np.flatnonzero(row[prefix_len:] == eos)
    body = row[: prefix_len + ends[0]] if len(ends) else row
    return np.append(body, eos)
