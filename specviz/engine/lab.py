"""The exactness lab on a real model pair: run the real engine many times and compare with plain decoding.

- `two_token_samples`: N independent runs of the next two tokens at a prompt, plain vs speculative (each run is a full
  `decode_rounds` call with its own seed), compared with a χ² two-sample test. Stops early at a time budget.
- `greedy_equivalence`: target-only greedy vs speculative greedy, token for token; at the first divergence, the
  target's top-2 logit margin there (a near-tie is a float-rounding divergence, not a bug).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from specviz.core.lab import Chi2Result, chi2_homogeneity
from specviz.core.sampling import SamplingSettings
from specviz.core.settings import RunSettings
from specviz.engine.decode import decode_rounds, encode_prompt, generate
from specviz.engine.models import ModelPair
from specviz.errors import SettingsError

Progress = Callable[[int, int], None]  # (runs done, runs asked for)


@dataclass(frozen=True)
class TwoTokenSamples:
    """Counts of the next two tokens from plain and from speculative decoding, and the χ² comparison."""

    prompt: str
    k: int
    sampling: SamplingSettings
    requested: int
    plain: dict[tuple[int, int], int]
    speculative: dict[tuple[int, int], int]
    chi2: Chi2Result
    elapsed_s: float
    stopped_early: bool  # the time budget ran out before `requested` samples per side

    @property
    def samples(self) -> int:
        return sum(self.plain.values())

    def table(self, token_texts: tuple[str, ...], top: int = 15) -> list[dict]:
        """The most frequent two-token outcomes with both frequencies (for a chart or a table)."""
        n_plain, n_spec = max(1, sum(self.plain.values())), max(1, sum(self.speculative.values()))
        both = Counter(self.plain) + Counter(self.speculative)
        rows = []
        for pair, _ in both.most_common(top):
            text = "".join(token_texts[t] if t < len(token_texts) else f"<{t}>" for t in pair)
            rows.append(
                {"tokens": repr(text), "plain": self.plain.get(pair, 0) / n_plain,
                 "speculative": self.speculative.get(pair, 0) / n_spec}
            )  # fmt: skip
        return rows


def two_token_samples(
    pair: ModelPair,
    prompt: str,
    samples: int = 300,
    k: int = 2,
    sampling: SamplingSettings = SamplingSettings(temperature=1.0, top_k=8),
    seed: int = 0,
    time_budget_s: float = 20.0,
    on_progress: Progress | None = None,
) -> TwoTokenSamples:
    """Sample the next two tokens `samples` times each way (alternating plain and speculative runs, so a time budget
    cuts both sides equally) and compare the two samples with a χ² homogeneity test."""
    if pair.draft is None:
        raise SettingsError("The speculative side needs a draft model: load a pair with a draft.")
    if sampling.greedy:
        raise SettingsError("Sampling at temperature 0 is deterministic: set a temperature > 0 to compare distributions.")
    if not isinstance(samples, int) or not 10 <= samples <= 100_000:
        raise SettingsError(f"the number of samples must be from 10 to 100,000; got {samples!r}.")
    if not time_budget_s > 0:
        raise SettingsError("the time budget must be positive.")
    ids = encode_prompt(pair, prompt)
    plain: Counter = Counter()
    spec: Counter = Counter()
    start = time.perf_counter()
    done = 0
    # Well-mixed, independent seeds for every run (consecutive integers would also do; this leaves no doubt).
    seeds = np.random.SeedSequence(seed).generate_state(2 * samples, dtype=np.uint32).tolist()
    for i in range(samples):
        if i and time.perf_counter() - start > time_budget_s:
            break
        for method, counts, offset in (("plain", plain, 0), ("draft", spec, 1)):
            settings = RunSettings(
                method=method, k=k, sampling=sampling, max_new_tokens=2, seed=seeds[2 * i + offset], stop_at_eos=False
            )
            tokens = tuple(t for r in decode_rounds(pair, ids, settings) for t in r.committed)
            counts[tokens] += 1
        done = i + 1
        if on_progress:
            on_progress(done, samples)
    keys = sorted(plain.keys() | spec.keys())
    chi2 = chi2_homogeneity(
        torch.tensor([plain[key] for key in keys], dtype=torch.float64),
        torch.tensor([spec[key] for key in keys], dtype=torch.float64),
    )
    return TwoTokenSamples(
        prompt, k, sampling, samples, dict(plain), dict(spec), chi2, time.perf_counter() - start, done < samples
    )


@dataclass(frozen=True)
class GreedyCheck:
    """Plain greedy vs speculative greedy on one prompt."""

    prompt: str
    k: int
    plain_ids: tuple[int, ...]
    speculative_ids: tuple[int, ...]
    first_divergence: int | None  # index into the output; None when identical
    plain_token: str | None  # what each produced at the divergence
    speculative_token: str | None
    top2_margin: float | None  # the target's top-1 minus top-2 logit at the divergence

    @property
    def identical(self) -> bool:
        return self.first_divergence is None


@torch.inference_mode()
def greedy_equivalence(pair: ModelPair, prompt: str, k: int = 4, max_new_tokens: int = 32) -> GreedyCheck:
    """Run target-only greedy and speculative greedy; report 'identical' or the first divergent token and its margin."""
    if pair.draft is None:
        raise SettingsError("The speculative side needs a draft model: load a pair with a draft.")
    plain = generate(pair, prompt, RunSettings(method="plain", k=k, max_new_tokens=max_new_tokens)).output_ids
    spec = generate(pair, prompt, RunSettings(method="draft", k=k, max_new_tokens=max_new_tokens)).output_ids
    index = next((i for i, (a, b) in enumerate(zip(plain, spec)) if a != b), None)
    if index is None and len(plain) != len(spec):
        index = min(len(plain), len(spec))
    if index is None:
        return GreedyCheck(prompt, k, plain, spec, None, None, None, None)
    texts = pair.token_texts
    show = lambda ids: texts[ids[index]] if index < len(ids) else "(end)"  # noqa: E731
    context = encode_prompt(pair, prompt) + list(plain[:index])
    logits = pair.target(input_ids=torch.tensor([context], device=pair.device)).logits[0, -1, : pair.vocab_size]
    top2 = logits.float().topk(2).values
    return GreedyCheck(prompt, k, plain, spec, index, show(plain), show(spec), float(top2[0] - top2[1]))
