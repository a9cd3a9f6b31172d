"""The exactness lab on a real model pair: run the real engine many times and compare with plain decoding.

- `two_token_samples`: N independent runs of the next two tokens at a prompt, plain vs speculative (each run is a full
  `decode_rounds` call with its own seed), compared with a χ² two-sample test. Stops early at a time budget.
- `exit_variants_at`: the early-exit switches (with or without the final norm, for the drafts and for the q the
  verifier is told) at one position, exactly: the chance of acceptance and the first token's distance from p.
- `greedy_equivalence`: target-only greedy vs speculative greedy, token for token; at the first divergence, how far
  each path's own pass put its token ahead of the other's, judged against the precision's resolution there (a
  near-tie within rounding is not a bug; a wider gap is).
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import torch

from specviz import methods
from specviz.core.chisq import Chi2Result, chi2_homogeneity
from specviz.core.lab.exits import EXIT_VARIANTS, EXIT_VARIANTS_BY_KEY, ExitVariant
from specviz.core.sampling import SamplingSettings, logits_to_probs
from specviz.core.settings import DEFAULT_EXIT_LAYER, RunSettings
from specviz.core.stats import first_divergence
from specviz.core.verify import residual
from specviz.engine.decode import decode_rounds, encode_prompt
from specviz.engine.early_exit import check_exit_layer
from specviz.engine.loading.models import ModelPair
from specviz.engine.proposers import EarlyExitProposer, RunContext
from specviz.errors import SettingsError

Progress = Callable[[int, int], None]  # (runs done, runs asked for)
TWO_TOKEN_SAMPLING = SamplingSettings(temperature=1.0, top_k=8)


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
                {
                    "tokens": repr(text),
                    "plain": self.plain.get(pair, 0) / n_plain,
                    "speculative": self.speculative.get(pair, 0) / n_spec,
                }
            )
        return rows


def two_token_samples(
    pair: ModelPair,
    prompt: str,
    samples: int = 300,
    k: int = 2,
    sampling: SamplingSettings = TWO_TOKEN_SAMPLING,
    seed: int = 0,
    time_budget_s: float = 20.0,
    on_progress: Progress | None = None,
    exit_variant: str | None = None,
    exit_layer: int = DEFAULT_EXIT_LAYER,
    method: str | None = None,
) -> TwoTokenSamples:
    """Sample the next two tokens `samples` times each way (alternating plain and speculative runs, so a time budget
    cuts both sides equally) and compare the two samples with a χ² homogeneity test. The speculative side is the
    draft model, or with exit_variant (a key of engine/early_exit.py EXIT_VARIANTS) early exit at exit_layer with
    that exit: the real exit, or one of the lab's switches; method names another speculative side (TLI or SLEM for a
    draft with its own tokenizer)."""
    variant = _exit_variant(exit_variant)
    if variant is None and pair.draft is None:
        raise SettingsError("The speculative side needs a draft model: load a pair with a draft.")
    if sampling.greedy:
        raise SettingsError(
            "Sampling at temperature 0 is deterministic: set a temperature > 0 to compare distributions."
        )
    if not isinstance(samples, int) or not 10 <= samples <= 100_000:
        raise SettingsError(f"the number of samples must be from 10 to 100,000; got {samples!r}.")
    if not time_budget_s > 0:
        raise SettingsError("the time budget must be positive.")
    ids = encode_prompt(pair, prompt)
    side = method or (methods.DRAFT if variant is None else methods.EARLY_EXIT)
    proposer = None
    if variant is not None:  # one proposer for every run: its settings (sampling, E) are the same in each
        exit_settings = RunSettings(method=side, k=k, sampling=sampling, exit_layer=exit_layer)
        proposer = replace(EarlyExitProposer.for_run(RunContext(pair, exit_settings)), variant=variant)
    plain: Counter = Counter()
    spec: Counter = Counter()
    start = time.perf_counter()
    done = 0
    # Well-mixed, independent seeds for every run (consecutive integers would also do; this leaves no doubt).
    seeds = np.random.SeedSequence(seed).generate_state(2 * samples, dtype=np.uint32).tolist()
    for i in range(samples):
        if i and time.perf_counter() - start > time_budget_s:
            break
        for method, counts, offset in ((methods.PLAIN, plain, 0), (side, spec, 1)):
            settings = RunSettings(
                method=method,
                k=k,
                sampling=sampling,
                max_new_tokens=2,
                seed=seeds[2 * i + offset],
                stop_at_eos=False,
                exit_layer=exit_layer,
            )
            chosen = proposer if method == side else None
            tokens = tuple(t for r in decode_rounds(pair, ids, settings, proposer=chosen) for t in r.committed)
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


def _exit_variant(key: str | None) -> ExitVariant | None:
    """The early-exit variant named by key (None: the speculative side is the draft model)."""
    if key is None:
        return None
    if key not in EXIT_VARIANTS_BY_KEY:
        raise SettingsError(f"unknown early-exit variant {key!r}; choose one of {', '.join(EXIT_VARIANTS_BY_KEY)}.")
    return EXIT_VARIANTS_BY_KEY[key]


ROUNDING_ULPS = 16  # two passes of different shapes may differ by this many units in the last place of a logit


@dataclass(frozen=True)
class GreedyCheck:
    """Plain greedy vs speculative greedy on one prompt; at a divergence, each path's own top-2 logits there."""

    prompt: str
    k: int
    dtype: str
    plain_ids: tuple[int, ...]
    speculative_ids: tuple[int, ...]
    first_divergence: int | None  # index into the output; None when identical
    plain_token: str | None  # what each produced at the divergence
    speculative_token: str | None
    plain_margin: float | None = None  # logit(plain's token) - logit(speculative's token), in the plain path's pass
    speculative_margin: float | None = None  # the reverse, in the speculative path's verify pass
    tolerance: float | None = None  # ROUNDING_ULPS units in the last place of the precision at those logits' size

    rounding_ulps: int = ROUNDING_ULPS

    @property
    def identical(self) -> bool:
        return self.first_divergence is None

    @property
    def within_rounding(self) -> bool | None:
        """The two passes order the two tokens differently by less than the precision can resolve: rounding, not a
        bug. (margin + margin is how far the two passes' logits of the two tokens moved apart.)"""
        if self.plain_margin is None or self.speculative_margin is None:
            return None
        return self.plain_margin + self.speculative_margin <= self.tolerance


def ulp(value: float, dtype: torch.dtype) -> float:
    """One unit in the last place of `dtype` at the size of `value`."""
    exponent = math.floor(math.log2(max(abs(value), torch.finfo(dtype).tiny)))
    return torch.finfo(dtype).eps * 2.0**exponent


@torch.inference_mode()
def greedy_equivalence(pair: ModelPair, prompt: str, k: int = 4, max_new_tokens: int = 32) -> GreedyCheck:
    """Run target-only greedy and speculative greedy, keeping each path's own target logits; report 'identical' or
    the first divergent token with both paths' margins there, judged against the precision's resolution."""
    if pair.draft is None:
        raise SettingsError("The speculative side needs a draft model: load a pair with a draft.")
    ids = encode_prompt(pair, prompt)
    runs = {}
    for method in (methods.PLAIN, methods.DRAFT):
        passes: list[torch.Tensor] = []
        settings = RunSettings(method=method, k=k, max_new_tokens=max_new_tokens)
        rounds = list(decode_rounds(pair, ids, settings, on_target_logits=passes.append))
        rows = [logits[j].float() for r, logits in zip(rounds, passes) for j in range(len(r.committed))]  # (V,) each
        runs[method] = (tuple(t for r in rounds for t in r.committed), rows)
    (plain, plain_rows), (spec, spec_rows) = runs[methods.PLAIN], runs[methods.DRAFT]
    dtype = str(pair.dtype).removeprefix("torch.")
    index = first_divergence(plain, spec)
    if index is None:
        return GreedyCheck(prompt, k, dtype, plain, spec, None, None, None)
    texts = pair.token_texts
    show = lambda out: texts[out[index]] if index < len(out) else "(end)"  # noqa: E731
    if index >= min(len(plain), len(spec)):  # one stopped (EOS) where the other went on: no logits to compare
        return GreedyCheck(prompt, k, dtype, plain, spec, index, show(plain), show(spec))
    a, b = plain[index], spec[index]
    lp, ls = plain_rows[index], spec_rows[index]
    size = max(abs(float(lp[a])), abs(float(lp[b])))
    return GreedyCheck(
        prompt,
        k,
        dtype,
        plain,
        spec,
        index,
        show(plain),
        show(spec),
        plain_margin=float(lp[a] - lp[b]),
        speculative_margin=float(ls[b] - ls[a]),
        tolerance=ROUNDING_ULPS * ulp(size, pair.dtype),
    )


@dataclass(frozen=True)
class ExitCheck:
    """One early-exit variant at one position, computed exactly from the target's p and the exit's two q's (with and
    without the final norm): how often its draft is accepted and how far its first committed token's distribution
    is from p."""

    variant: ExitVariant
    accepted: float  # sum_x q_drawn(x) min(1, p(x) / q_told(x)): the chance the first draft is kept
    tv_from_p: float  # total variation between the first committed token's distribution and p (0 when exact)
    tv_between_exits: float  # total variation between the q the drafts come from and the q the verifier is told

    @property
    def exact(self) -> bool:
        return self.tv_from_p <= EXACT_TV


EXACT_TV = 1e-9  # float64 sums of 8192 terms: an exact variant's distance is rounding, far below this


def _float64(dist: torch.Tensor) -> torch.Tensor:
    """A float32 distribution in float64, renormalised, so its own rounding (its sum is 1 only to ~1e-7) does not
    read as a distance from p."""
    dist = dist.double()
    return dist / dist.sum()


@torch.inference_mode()
def exit_variants_at(
    pair: ModelPair, prompt: str, exit_layer: int, sampling: SamplingSettings = TWO_TOKEN_SAMPLING
) -> list[ExitCheck]:
    """Every early-exit variant (engine/early_exit.py EXIT_VARIANTS) at the prompt's next token, exactly: one target
    pass gives p and the residual h_E after layer E; the exit with the final norm and without it give the two q's.
    The first committed token is x ~ q_drawn kept with min(1, p/q_told), else drawn from norm(max(0, p - q_told))."""
    check_exit_layer(pair.target, exit_layer)
    ids = torch.tensor([encode_prompt(pair, prompt)], device=pair.device)  # (1, n)
    out = pair.target(input_ids=ids, output_hidden_states=True)
    h = out.hidden_states[exit_layer][0, -1]  # (H,) the residual after layer E (index 0 is the embeddings)
    head, norm, v = pair.target.get_output_embeddings(), pair.target.base_model.norm, pair.vocab_size
    exact = lambda logits: _float64(logits_to_probs(logits, sampling))  # noqa: E731
    p = exact(out.logits[0, -1, :v])  # (V,)
    q = {True: exact(head(norm(h))[:v]), False: exact(head(h)[:v])}  # with the final norm, and without
    checks = []
    for variant in EXIT_VARIANTS:
        drawn, told = q[variant.norm_drafts], q[variant.norm_q]  # (V,) each
        kept = drawn * (p / told.clamp(min=torch.finfo(told.dtype).tiny)).clamp(max=1.0) * (drawn > 0)  # (V,)
        first = kept + (1.0 - kept.sum()) * residual(p, told)  # (V,) the first committed token's distribution
        checks.append(
            ExitCheck(
                variant,
                float(kept.sum()),
                0.5 * float((first - p).abs().sum()),
                0.5 * float((drawn - told).abs().sum()),
            )
        )
    return checks
