"""The sampled-exactness check several method tests share: the first two committed tokens of seeded runs against the
target's own distribution (χ²), the second after the most common first."""

from __future__ import annotations

import torch

from specviz.core.chisq import chi2_goodness_of_fit
from specviz.core.sampling import SamplingSettings, logits_to_probs
from specviz.core.settings import RunSettings
from specviz.engine.decode import generate


def first_two(pair, prompt: str, seeds: int, sampling: SamplingSettings, **run) -> list[tuple[int, int]]:
    """The first two committed tokens of sampled runs over `seeds` seeds; `run` holds the RunSettings fields (method,
    tree, ...; K = 3 unless given: one round drafts both)."""
    run = {"k": 3, "max_new_tokens": 4, "stop_at_eos": False} | run
    pairs = []
    for seed in range(seeds):
        out = generate(pair, prompt, RunSettings(sampling=sampling, seed=seed, **run)).output_ids
        pairs.append((out[0], out[1]))
    return pairs


def target_p(pair, ids: list[int], sampling: SamplingSettings) -> torch.Tensor:
    """The target's next-token distribution after `ids` under `sampling`."""
    with torch.inference_mode():
        logits = pair.target(input_ids=torch.tensor([ids])).logits[0, -1, : pair.vocab_size]
    return logits_to_probs(logits, sampling)  # (V,)


def fits(pair, prompt: str, seeds: int, sampling: SamplingSettings, **run) -> tuple[float, float]:
    """χ² p-values: the first committed token against p(. | prompt), the second (after the most common first)
    against p(. | prompt, first)."""
    ids = pair.tokenizer.encode(prompt)
    pairs = first_two(pair, prompt, seeds, sampling, **run)
    firsts = torch.bincount(torch.tensor([a for a, _ in pairs]), minlength=pair.vocab_size)
    mode = int(firsts.argmax())
    seconds = torch.bincount(torch.tensor([b for a, b in pairs if a == mode]), minlength=pair.vocab_size)
    first = chi2_goodness_of_fit(firsts, target_p(pair, ids, sampling))
    second = chi2_goodness_of_fit(seconds, target_p(pair, ids + [mode], sampling))
    return first.p_value, second.p_value
