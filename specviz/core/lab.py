"""The exactness lab: small models where speculative sampling's output distribution is known exactly.

- The two-token example: where each token's final probability comes from (accepted drafts + residual corrections).
- The four-event shop model (view, click, cart, buy), a first-order Markov chain with a start row: Monte-Carlo
  samples of plain and speculative decoding next to the exact distribution by enumeration.
- Bug switches: real variants of the sampler that shipped in real code. Each is a `Variant`: the acceptance /
  resample `Rule`, plus which distribution the drafter actually samples from (`propose`) versus which q it reports
  for the ratio and the residual (`ratio_q`). The exact variant proposes from and reports the same q.
- Trees: the shop model with a draft tree per round (children with or without replacement, or top-b one-hot), the
  real verify_tree on sampled trees next to the exact enumeration (core/toy.py), and two broken switches.

Everything here is pure: numbers in, numbers out, randomness from an explicit torch.Generator.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from specviz.core.sampling import sample, uniforms
from specviz.core.toy import (
    Context,
    LanguageModel,
    speculative_distribution,
    target_distribution,
    total_variation,
    tree_speculative_distribution,
)
from specviz.core.verify import (
    EXACT,
    TOP_B,
    WITH_REPLACEMENT,
    WITHOUT_REPLACEMENT,
    Rule,
    Verdict,
    acceptance_probability,
    draw_children,
    next_token_distribution,
    residual,
    tree_parents,
    verify,
    verify_tree,
)
from specviz.errors import SettingsError

Dist = Callable[[torch.Tensor], torch.Tensor]  # (..., V) q -> (..., V) a distribution derived from it
_TINY = torch.finfo(torch.float64).tiny


# ---------------------------------------------------------------------------------------------------------------------
# The two-token example


@dataclass(frozen=True)
class TwoTokenFlow:
    """Where the final probability of A and B comes from when x ~ q is judged against p (one position)."""

    tokens: tuple[str, str]
    p: tuple[float, float]
    q: tuple[float, float]
    accept_prob: tuple[float, float]  # min(1, p/q) per token
    accepted: tuple[float, float]  # q(x) · min(1, p/q): emitted as an accepted draft
    rejected_mass: float  # 1 − Σ accepted: how often the draft is rejected
    residual: tuple[float, float]  # norm(max(0, p − q))
    corrected: tuple[float, float]  # rejected_mass · residual: emitted as a correction
    final: tuple[float, float]  # accepted + corrected (= p)
    alpha: float  # Σ min(p, q)


def two_token_flow(p_a: float = 0.7, q_a: float = 0.9, tokens: tuple[str, str] = ("A", "B")) -> TwoTokenFlow:
    """p = (p_a, 1 − p_a), q = (q_a, 1 − q_a). The default is the seed's worked example."""
    for name, value in (("p(A)", p_a), ("q(A)", q_a)):
        if not (isinstance(value, (int, float)) and 0 <= value <= 1):
            raise SettingsError(f"{name} must be a probability from 0 to 1; got {value!r}.")
    p = torch.tensor([p_a, 1 - p_a], dtype=torch.float64)
    q = torch.tensor([q_a, 1 - q_a], dtype=torch.float64)
    accept = torch.where(q > 0, acceptance_probability(p, q.clamp(min=_TINY)), torch.ones_like(q))  # (2,)
    accepted = q * accept
    rejected = 1.0 - float(accepted.sum())
    res = residual(p, q)
    corrected = rejected * res
    final = next_token_distribution(p, q)
    pair = lambda t: (float(t[0]), float(t[1]))  # noqa: E731
    return TwoTokenFlow(
        tokens,
        pair(p),
        pair(q),
        pair(accept),
        pair(accepted),
        rejected,
        pair(res),
        pair(corrected),
        pair(final),
        float(torch.minimum(p, q).sum()),
    )


# ---------------------------------------------------------------------------------------------------------------------
# The shop model


EVENTS = ("view", "click", "cart", "buy")
START = "START"
ROWS = (START,) + EVENTS  # the row labels of an editable transition table

# The seed's synthetic shopping-event transition probabilities (rows: previous event, START first).
SHOP_TARGET = (
    (0.60, 0.25, 0.10, 0.05),
    (0.30, 0.55, 0.12, 0.03),
    (0.20, 0.25, 0.45, 0.10),
    (0.10, 0.10, 0.25, 0.55),
    (0.70, 0.20, 0.08, 0.02),
)
SHOP_DRAFT = (
    (0.58, 0.27, 0.10, 0.05),
    (0.33, 0.51, 0.13, 0.03),
    (0.22, 0.23, 0.43, 0.12),
    (0.12, 0.10, 0.23, 0.55),
    (0.66, 0.23, 0.09, 0.02),
)
# A deliberately poor draft for the same target (α ≈ 0.6): every bug's bias is large enough to see in 20,000 samples.
POOR_DRAFT = (
    (0.25, 0.25, 0.25, 0.25),
    (0.60, 0.20, 0.10, 0.10),
    (0.10, 0.60, 0.20, 0.10),
    (0.40, 0.10, 0.10, 0.40),
    (0.30, 0.30, 0.20, 0.20),
)


@dataclass(frozen=True, eq=False)
class MarkovChain:
    """A first-order model with a start distribution: the first event from `start`, then transitions[last]."""

    start: torch.Tensor  # (V,)
    transitions: torch.Tensor  # (V, V), row = previous event

    def __call__(self, context: Context) -> torch.Tensor:
        return self.start if not context else self.transitions[context[-1]]

    @property
    def rows(self) -> torch.Tensor:
        """(V + 1, V): transitions with the start distribution appended as row V (the state before any event)."""
        return torch.cat([self.transitions, self.start[None]])

    @classmethod
    def from_rows(cls, rows: Sequence[Sequence[float]], name: str = "table", normalise: bool = True) -> MarkovChain:
        """Rows START, view, click, cart, buy (as in the editor); each row is normalised to sum to 1."""
        table = _check_table(rows, name)
        if normalise:
            table = table / table.sum(-1, keepdim=True)
        elif not torch.allclose(table.sum(-1), torch.ones(len(table), dtype=torch.float64), atol=1e-9):
            raise SettingsError(f"every row of the {name} must sum to 1.")
        return cls(table[0], table[1:])


def _check_table(rows: Sequence[Sequence[float]], name: str) -> torch.Tensor:
    try:
        table = torch.tensor([[float(x) for x in row] for row in rows], dtype=torch.float64)  # (V + 1, V)
    except (TypeError, ValueError) as exc:
        raise SettingsError(f"the {name} must contain only numbers.") from exc
    if table.dim() != 2 or table.shape[0] != table.shape[1] + 1 or table.shape[1] < 2:
        raise SettingsError(f"the {name} must have a START row and one row per event, one column per event.")
    if not torch.isfinite(table).all() or (table < 0).any():
        raise SettingsError(f"the {name} must contain probabilities >= 0 (no blanks, no negative numbers).")
    empty = [ROWS[i] if i < len(ROWS) else str(i) for i, s in enumerate(table.sum(-1).tolist()) if s <= 0]
    if empty:
        raise SettingsError(f"the {name} row(s) {', '.join(empty)} are all zero: each row needs some probability.")
    return table


def shop_models(draft: Sequence[Sequence[float]] = SHOP_DRAFT) -> tuple[MarkovChain, MarkovChain]:
    return MarkovChain.from_rows(SHOP_TARGET, "target table"), MarkovChain.from_rows(draft, "draft table")


def chain_alpha(p: MarkovChain, q: MarkovChain) -> list[float]:
    """Per-row acceptance rate Σ_x min(p, q), in the order of ROWS (START first)."""
    return torch.minimum(p.rows, q.rows).sum(-1).roll(1).tolist()  # rows has START last


# ---------------------------------------------------------------------------------------------------------------------
# Sampler variants (the bug switches)


def _same(q: torch.Tensor) -> torch.Tensor:
    return q


def greedy_proposal(q: torch.Tensor) -> torch.Tensor:
    """One-hot argmax of q: a drafter that decodes greedily."""
    return torch.nn.functional.one_hot(q.argmax(-1), q.shape[-1]).to(q.dtype)


def top_k_proposal(k: int) -> Dist:
    """q restricted to its k most likely tokens and renormalised: a drafter that samples after top-k."""

    def propose(q: torch.Tensor) -> torch.Tensor:
        kth = q.topk(min(k, q.shape[-1]), dim=-1).values[..., -1:]  # (..., 1)
        kept = torch.where(q >= kth, q, torch.zeros_like(q))
        return kept / kept.sum(-1, keepdim=True)

    return propose


CLASSIC = "a classic mistake (no public report cited)"


@dataclass(frozen=True)
class Variant:
    """One sampler: how tokens are proposed, which q the verifier is told about, and the accept/resample rule."""

    key: str
    label: str
    explanation: str
    rule: Rule = EXACT
    propose: Dist = _same  # what the drafter really samples x from, given its q
    ratio_q: Dist = _same  # the q used in min(1, p/q) and in the residual
    seen_in: str = CLASSIC  # a public report of the bug in real code, or CLASSIC when none is cited


EXACT_VARIANT = Variant(
    "exact", "exact (Leviathan / Chen)", "accept with min(1, p/q), correct from norm(max(0, p − q))"
)
VARIANTS = (
    EXACT_VARIANT,
    Variant(
        "skip_residual",
        "skip the residual",
        "on a rejection, resample from p instead of norm(max(0, p − q))",
        rule=Rule(resample=lambda p, q: p),
        seen_in="reported in SafeAILab/EAGLE issue #329: its non-greedy path resampled from the target's p "
        "(https://github.com/SafeAILab/EAGLE/issues/329)",
    ),
    Variant(
        "correction_from_q",
        "correction drawn from q",
        "on a rejection, draw the correction from the draft's q",
        rule=Rule(resample=lambda p, q: q),
    ),
    Variant(
        "accept_if_p_ge_q",
        "accept when p ≥ q",
        "keep a draft only if p(x) ≥ q(x), never with probability p/q",
        rule=Rule(acceptance=lambda p_x, q_x: (p_x >= q_x).to(p_x.dtype)),
    ),
    Variant(
        "greedy_soft_q",
        "greedy draft with soft q",
        "the draft takes argmax q, but the ratio uses its soft q(x) < 1",
        propose=greedy_proposal,
        seen_in="acknowledged in jaymody/speculative-sampling issue #3: argmax drafts judged with softmax "
        "probabilities (https://github.com/jaymody/speculative-sampling/issues/3)",
    ),
    Variant(
        "q_before_top_k",
        "q before top-k, sampled after",
        "the draft samples from top-2 of q, the ratio uses q before top-k",
        propose=top_k_proposal(2),
        seen_in="reported in huggingface/transformers issue #47932: candidate generators returned a q they did not "
        "sample from (https://github.com/huggingface/transformers/issues/47932)",
    ),
)
VARIANTS_BY_KEY = {v.key: v for v in VARIANTS}


def get_variant(key: str) -> Variant:
    try:
        return VARIANTS_BY_KEY[key]
    except KeyError:
        raise SettingsError(f"unknown sampler variant {key!r}; choose one of {', '.join(VARIANTS_BY_KEY)}.") from None


# ---------------------------------------------------------------------------------------------------------------------
# Exact enumeration for any variant


def first_token_distribution(p: torch.Tensor, q: torch.Tensor, variant: Variant = EXACT_VARIANT) -> torch.Tensor:
    """Exact distribution of the first committed token at one position: (V,) p and q -> (V,)."""
    kept, rejected, resample = _position(p, q, variant)
    return kept + rejected * resample


def _position(p: torch.Tensor, q: torch.Tensor, variant: Variant) -> tuple[torch.Tensor, float, torch.Tensor]:
    """Mass emitted as each accepted draft, total rejected mass, and the correction distribution."""
    proposal, told = variant.propose(q), variant.ratio_q(q)  # (V,), (V,)
    accept = variant.rule.acceptance(p, told.clamp(min=_TINY))  # (V,)
    kept = proposal * accept * (proposal > 0)
    return kept, 1.0 - float(kept.sum()), variant.rule.resample(p, told)


def variant_distribution(
    p: LanguageModel, q: LanguageModel, context: Context, k: int, length: int, variant: Variant = EXACT_VARIANT
) -> dict[Context, float]:
    """Exact distribution of the first `length` tokens under `variant` (K shrinks at the end, as in the engine)."""
    return speculative_distribution(p, q, context, k, length, judge=lambda p_i, q_i: _position(p_i, q_i, variant))


# ---------------------------------------------------------------------------------------------------------------------
# Monte Carlo: many runs at once, vectorised over runs


@dataclass(frozen=True)
class RunStats:
    """Monte-Carlo output: the sequences and the counts the seed's demo reports."""

    sequences: torch.Tensor  # (N, length) long
    passes: int  # target passes (rounds) over all runs
    proposed: int  # drafts judged (as the engine's `judged`: a draft after a rejection is never judged)
    accepted: int

    @property
    def runs(self) -> int:
        return self.sequences.shape[0]

    @property
    def length(self) -> int:
        return self.sequences.shape[1]

    @property
    def acceptance_fraction(self) -> float:
        return self.accepted / self.proposed if self.proposed else float("nan")

    @property
    def passes_per_run(self) -> float:
        return self.passes / self.runs


def sample_plain(p: MarkovChain, runs: int, length: int, generator: torch.Generator) -> RunStats:
    """Target-only decoding: one target step per token."""
    rows = p.rows  # (V + 1, V)
    state = torch.full((runs,), rows.shape[0] - 1, dtype=torch.long)  # the START row
    out = torch.empty(runs, length, dtype=torch.long)
    for t in range(length):
        state = sample(rows[state], uniforms(generator, runs))
        out[:, t] = state
    return RunStats(out, runs * length, 0, 0)


def sample_speculative(
    p: MarkovChain,
    q: MarkovChain,
    k: int,
    runs: int,
    length: int,
    generator: torch.Generator,
    variant: Variant = EXACT_VARIANT,
) -> RunStats:
    """Speculative decoding of `runs` sequences of `length` events, all unfinished runs advancing one round at a time.

    Same procedure as the engine: draft k' = min(K, events left − 1), score them with the target, and let the real
    `verify` accept a prefix and draw the correction or bonus token. Same 2K + 1 uniforms per run and round as well.
    """
    p_rows, q_rows = p.rows, q.rows  # (V + 1, V)
    state = torch.full((runs,), p_rows.shape[0] - 1, dtype=torch.long)  # the last event of each run; START first
    out = torch.full((runs, length), -1, dtype=torch.long)
    filled = torch.zeros(runs, dtype=torch.long)
    passes = judged = accepted = 0
    while (active := (filled < length).nonzero().squeeze(1)).numel():
        n = active.numel()
        u = uniforms(generator, n * (2 * k + 1)).view(n, 2 * k + 1)  # (n, 2K+1): draft | accept | next-token draws
        k_run = (length - filled[active] - 1).clamp(max=k)  # (n,) never draft past the length limit
        drafts, told, states = _draft(q_rows, state[active], int(k_run.max()), u, variant)  # (n, k'), (n, k', V)
        k_round = drafts.shape[1]
        v = verify(p_rows[states], told, drafts, u[:, k : k + k_round], u[:, 2 * k], variant.rule, k_run)
        _commit(out, filled, active, drafts, v)
        state[active] = v.next_token
        passes += n
        judged += int((v.n_accepted + (v.n_accepted < k_run)).sum())  # the drafts after a rejection are not judged
        accepted += int(v.n_accepted.sum())
    return RunStats(out, passes, judged, accepted)


def _draft(
    q_rows: torch.Tensor, state: torch.Tensor, k: int, u: torch.Tensor, variant: Variant
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Draw k events per run from the draft chain (x_i ~ variant.propose(q_i)), with u[:, i] for the i-th.

    Returns the drafts (N, k), the q the verifier is told (N, k, V) and the state before each position (N, k+1).
    """
    states, drafts, told = [state], [], []
    for i in range(k):
        q_i = q_rows[states[-1]]  # (N, V)
        drafts.append(sample(variant.propose(q_i), u[:, i]))
        told.append(variant.ratio_q(q_i))
        states.append(drafts[-1])
    if not k:
        return state.new_empty(len(state), 0), q_rows.new_empty(len(state), 0, q_rows.shape[-1]), state[:, None]
    return torch.stack(drafts, 1), torch.stack(told, 1), torch.stack(states, 1)


def _commit(out: torch.Tensor, filled: torch.Tensor, active: torch.Tensor, drafts: torch.Tensor, v: Verdict) -> None:
    """Append to each active run its accepted drafts, then its correction or bonus token (out and filled in place)."""
    tokens = torch.cat([drafts, v.next_token[:, None]], 1)  # (n, k'+1)
    tokens.scatter_(1, v.n_accepted[:, None], v.next_token[:, None])  # the accepted prefix, then the next token
    rows, cols = (torch.arange(tokens.shape[1]) <= v.n_accepted[:, None]).nonzero(as_tuple=True)
    out[active[rows], filled[active[rows]] + cols] = tokens[rows, cols]
    filled[active] += v.n_accepted + 1


def sequence_counts(stats: RunStats, vocab: int) -> torch.Tensor:
    """(V^length,) counts of each sequence, indexed in the order of `all_sequences`."""
    weights = vocab ** torch.arange(stats.length - 1, -1, -1)
    index = (stats.sequences * weights).sum(-1)
    return torch.bincount(index, minlength=vocab**stats.length).to(torch.float64)


def all_sequences(vocab: int, length: int) -> list[Context]:
    """Every sequence of `length` tokens, in the index order of `sequence_counts` (lexicographic)."""
    seqs: list[Context] = [()]
    for _ in range(length):
        seqs = [s + (t,) for s in seqs for t in range(vocab)]
    return seqs


def as_vector(dist: dict[Context, float], vocab: int, length: int) -> torch.Tensor:
    return torch.tensor([dist.get(s, 0.0) for s in all_sequences(vocab, length)], dtype=torch.float64)


# ---------------------------------------------------------------------------------------------------------------------
# Chi-squared tests


@dataclass(frozen=True)
class Chi2Result:
    statistic: float
    dof: int
    p_value: float
    pooled: int  # categories merged into one bucket because their expected count was small


def chi2_p_value(statistic: float, dof: int) -> float:
    """Survival function of χ²(dof): the regularised upper incomplete gamma Q(dof/2, x/2)."""
    if dof <= 0:
        return 1.0
    return float(torch.special.gammaincc(torch.tensor(dof / 2.0, dtype=torch.float64), torch.tensor(statistic / 2.0)))


def chi2_goodness_of_fit(counts: torch.Tensor, probs: torch.Tensor, min_expected: float = 5.0) -> Chi2Result:
    """Pearson's test of observed counts against exact probabilities; cells expected below min_expected are pooled.

    Observations in a cell of probability 0 make the statistic infinite (p-value 0): that outcome is impossible.
    """
    counts, probs = counts.to(torch.float64), probs.to(torch.float64)
    n = float(counts.sum())
    expected = probs * n
    if bool(((probs <= 0) & (counts > 0)).any()):
        return Chi2Result(math.inf, max(int((probs > 0).sum()) - 1, 1), 0.0, 0)
    small = (expected < min_expected) & (probs > 0)
    obs = counts[(~small) & (probs > 0)]
    exp = expected[(~small) & (probs > 0)]
    pooled = int(small.sum())
    if pooled:
        obs = torch.cat([obs, counts[small].sum().view(1)])
        exp = torch.cat([exp, expected[small].sum().view(1)])
    stat = float(((obs - exp) ** 2 / exp).sum())
    dof = len(obs) - 1
    return Chi2Result(stat, dof, chi2_p_value(stat, dof), pooled)


def chi2_homogeneity(a: torch.Tensor, b: torch.Tensor, min_expected: float = 5.0) -> Chi2Result:
    """Two-sample test: do counts a and b (same categories) come from the same distribution? Rare cells pooled."""
    a, b = a.to(torch.float64), b.to(torch.float64)
    total = a + b
    keep = total > 0
    a, b, total = a[keep], b[keep], total[keep]
    na, nb = float(a.sum()), float(b.sum())
    if na == 0 or nb == 0:
        raise SettingsError("both samples need at least one observation for a χ² comparison.")
    n = na + nb
    small = total * min(na, nb) / n < min_expected
    pooled = int(small.sum())
    if pooled:
        a = torch.cat([a[~small], a[small].sum().view(1)])
        b = torch.cat([b[~small], b[small].sum().view(1)])
        total = a + b
    ea, eb = total * na / n, total * nb / n
    stat = float(((a - ea) ** 2 / ea).sum() + ((b - eb) ** 2 / eb).sum())
    dof = len(total) - 1
    return Chi2Result(stat, dof, chi2_p_value(stat, dof), pooled)


# ---------------------------------------------------------------------------------------------------------------------
# The lab's experiments


@dataclass(frozen=True)
class ShopExperiment:
    """Plain vs speculative on the shop model: Monte-Carlo joint distribution of `length` events and the exact one."""

    length: int
    k: int
    samples: int
    plain_freq: torch.Tensor  # (V^length,)
    spec_freq: torch.Tensor
    exact_target: torch.Tensor  # by enumeration of the target alone
    exact_spec: torch.Tensor  # by enumeration of the speculative procedure
    largest_gap: float  # max |plain − spec| frequency (the seed's statistic)
    largest_gap_exact: float  # max |exact spec − exact target|: 0 up to rounding
    chi2_spec: Chi2Result  # speculative samples against the exact target
    chi2_plain: Chi2Result
    passes_per_64: float  # target passes per 64 events (plain: 64)
    acceptance_fraction: float


def shop_experiment(
    p: MarkovChain,
    q: MarkovChain,
    k: int = 4,
    samples: int = 20_000,
    length: int = 3,
    seed: int = 0,
    throughput_runs: int = 1000,
) -> ShopExperiment:
    """The seed's experiment, plus the exact distributions: the Monte-Carlo gap is sampling noise."""
    _check_counts(k, samples, length)
    vocab = p.start.shape[0]
    plain = sample_plain(p, samples, length, torch.Generator().manual_seed(seed))
    spec = sample_speculative(p, q, k, samples, length, torch.Generator().manual_seed(seed + 1))
    plain_freq = sequence_counts(plain, vocab) / samples
    spec_freq = sequence_counts(spec, vocab) / samples
    exact_target = as_vector(target_distribution(p, (), length), vocab, length)
    exact_spec = as_vector(variant_distribution(p, q, (), k, length), vocab, length)
    long = sample_speculative(p, q, k, throughput_runs, 64, torch.Generator().manual_seed(seed + 2))
    return ShopExperiment(
        length,
        k,
        samples,
        plain_freq,
        spec_freq,
        exact_target,
        exact_spec,
        float((plain_freq - spec_freq).abs().max()),
        float((exact_spec - exact_target).abs().max()),
        chi2_goodness_of_fit(spec_freq * samples, exact_target),
        chi2_goodness_of_fit(plain_freq * samples, exact_target),
        long.passes_per_run,
        long.acceptance_fraction,
    )


EXACT_VERDICT, DETECTED_VERDICT, UNSEEN_VERDICT = "exact", "bias detected", "biased, not detected at this N"


def verdict(distance: float, p_value: float) -> str:
    """Exact when the enumerated output is p to 1e-9; otherwise whether a χ² test at p < 1e-6 sees the bias."""
    if distance < 1e-9:
        return EXACT_VERDICT
    return DETECTED_VERDICT if p_value < 1e-6 else UNSEEN_VERDICT


def pass_fail(outcome: str) -> str:
    """The verdict as pass / fail: only an exact sampler passes."""
    return "pass: exact" if outcome == EXACT_VERDICT else f"fail: {outcome}"


@dataclass(frozen=True)
class BugCheck:
    """One sampler variant: its exact output distribution, its distance from the target's, and a test on samples."""

    variant: Variant
    exact: torch.Tensor  # (V^length,) exact output distribution of the variant
    tv: float  # total variation from the target's exact distribution
    chi2: Chi2Result  # the variant's samples against the target's exact distribution
    acceptance_fraction: float

    @property
    def detected(self) -> bool:
        return self.chi2.p_value < 1e-6


def bug_checks(
    p: MarkovChain,
    q: MarkovChain,
    k: int = 4,
    samples: int = 20_000,
    length: int = 3,
    seed: int = 0,
    variants: Sequence[Variant] = VARIANTS,
) -> list[BugCheck]:
    """Every variant against the target: exact TV by enumeration and a χ² p-value on `samples` runs (fixed seed)."""
    _check_counts(k, samples, length)
    vocab = p.start.shape[0]
    target = target_distribution(p, (), length)
    target_vec = as_vector(target, vocab, length)
    checks = []
    for index, variant in enumerate(variants):
        exact = variant_distribution(p, q, (), k, length, variant)
        runs = sample_speculative(p, q, k, samples, length, torch.Generator().manual_seed(seed + index), variant)
        checks.append(
            BugCheck(
                variant,
                as_vector(exact, vocab, length),
                total_variation(exact, target),
                chi2_goodness_of_fit(sequence_counts(runs, vocab), target_vec),
                runs.acceptance_fraction,
            )
        )
    return checks


def _check_counts(k: int, samples: int, length: int) -> None:
    if not isinstance(k, int) or not 1 <= k <= 16:
        raise SettingsError(f"K must be a whole number from 1 to 16; got {k!r}.")
    if not isinstance(samples, int) or not 100 <= samples <= 1_000_000:
        raise SettingsError(f"the number of samples must be from 100 to 1,000,000; got {samples!r}.")
    if not isinstance(length, int) or not 1 <= length <= 5:
        raise SettingsError(f"the sequence length must be from 1 to 5 events; got {length!r}.")


# ---------------------------------------------------------------------------------------------------------------------
# Trees: several children per node, judged one after another (core/verify.py verify_tree)


@dataclass(frozen=True)
class TreeVariant:
    """One tree sampler: how children are drawn (core/verify.py TREE_SAMPLINGS), and the two broken switches."""

    key: str
    label: str
    how: str  # WITH_REPLACEMENT, WITHOUT_REPLACEMENT or TOP_B
    why: str  # why it is exact, or where its bias comes from
    update_residual: bool = True  # False: every sibling is judged against the unchanged p (broken)
    soft_q_for_top_b: bool = False  # True: deterministic top-b children judged with the draft's soft q (broken)

    @property
    def broken(self) -> dict:
        """The switches as toy.tree_round_outcomes takes them."""
        return {"update_residual": self.update_residual, "soft_q_for_top_b": self.soft_q_for_top_b}


TREE_VARIANTS = (
    TreeVariant(
        "with_replacement",
        "sampled with replacement (SpecInfer)",
        WITH_REPLACEMENT,
        "each child is drawn from q; after a rejected child the target becomes the residual norm(max(0, p − q)) and "
        "the next child is judged against it, so every rejection hands on exactly the mass still owed",
    ),
    TreeVariant(
        "without_replacement",
        "sampled without replacement (Sequoia)",
        WITHOUT_REPLACEMENT,
        "each child is drawn from q with its elder siblings removed and renormalised, and judged against that q: the "
        "ratio always uses the distribution the child really came from",
    ),
    TreeVariant(
        "top_b",
        "top-b children, one-hot q (greedy draft)",
        TOP_B,
        "the b most likely draft tokens are certain picks, so each counts as a one-hot q: kept with probability r(x), "
        "and a rejection removes x from the target r",
    ),
    TreeVariant(
        "no_residual",
        "no residual update between siblings",
        WITH_REPLACEMENT,
        "every sibling is judged against the unchanged p: a token the first child already had its chance at gets a "
        "second full chance, so tokens the draft likes are emitted too often",
        update_residual=False,
    ),
    TreeVariant(
        "soft_q_top_b",
        "top-b children judged with the soft q",
        TOP_B,
        "the children are the draft's top tokens, chosen with certainty, but min(1, p/q) uses their soft q(x) < 1: "
        "the ratio is not the probability the child was proposed with, so the draft's favourites are over-kept",
        soft_q_for_top_b=True,
    ),
)
TREE_VARIANTS_BY_KEY = {v.key: v for v in TREE_VARIANTS}


def tree_variant(how: str, update_residual: bool = True, soft_q_for_top_b: bool = False) -> TreeVariant:
    """The sampler for one setting of the page's controls: a listed variant, or the listed broken one(s) combined.
    The soft q only matters for top-b children (sampled children are judged with the q they came from anyway)."""
    soft = soft_q_for_top_b and how == TOP_B
    exact = next(v for v in TREE_VARIANTS[:3] if v.how == how)
    broken = [
        v for v in TREE_VARIANTS[3:] if (not update_residual and not v.update_residual) or (soft and v.soft_q_for_top_b)
    ]
    if not broken:
        return exact
    if len(broken) == 1 and broken[0].how == how:
        return broken[0]
    return TreeVariant(
        "+".join([how] + [v.key for v in broken]),
        f"{exact.label}, " + " and ".join(v.label for v in broken),
        how,
        "; ".join(v.why for v in broken),
        update_residual,
        soft,
    )


TREE_SHAPES = ((2,), (2, 1), (3, 1), (2, 2), (3, 2, 1))  # small enough to enumerate over four events in a moment


def tree_variant_distribution(
    p: LanguageModel, q: LanguageModel, shape: tuple[int, ...], length: int, variant: TreeVariant
) -> dict[Context, float]:
    """Exact distribution of the first `length` tokens from repeated tree rounds of `variant` (by enumeration)."""
    return tree_speculative_distribution(p, q, (), shape, variant.how, length, **variant.broken)


def tree_round(
    p: LanguageModel, q: LanguageModel, context: Context, shape: tuple[int, ...], variant: TreeVariant, u: torch.Tensor
) -> Context:
    """One tree round by the real pure functions: draw_children per node, then verify_tree. u (2N + 1,) uniforms:
    N for the draws, N for the accept tests, one for the correction or bonus. Returns the tokens it commits."""
    parents = tree_parents(shape)
    n = len(parents)
    tokens: list[int] = []
    q_rows: list[torch.Tensor] = []
    contexts = [context]  # contexts[i + 1]: the context after node i
    level = [-1]  # the nodes of the previous depth (-1: the root)
    for b in shape:
        below = []
        for parent in level:
            q_node = q(contexts[parent + 1])  # (V,)
            x, rows = draw_children(q_node, b, u[len(tokens) : len(tokens) + b], variant.how)  # (b,), (b, V)
            if variant.soft_q_for_top_b:
                rows = q_node.expand(b, -1)  # the broken variant: the soft q, not what the child was drawn from
            for token, row in zip(x.tolist(), rows):
                tokens.append(token)
                q_rows.append(row)
                contexts.append(contexts[parent + 1] + (token,))
                below.append(len(tokens) - 1)
        level = below
    p_rows = torch.stack([p(c) for c in contexts])  # (N + 1, V)
    q_all = torch.stack(q_rows) if q_rows else p_rows[:0]  # (N, V)
    v = verify_tree(
        parents,
        torch.tensor(tokens, dtype=torch.long),
        p_rows,
        q_all,
        u[n : 2 * n],
        u[2 * n],
        update_residual=variant.update_residual,
    )
    return tuple(tokens[i] for i in v.path) + (v.next_token,)


def sample_tree(
    p: LanguageModel,
    q: LanguageModel,
    shape: tuple[int, ...],
    variant: TreeVariant,
    runs: int,
    length: int,
    generator: torch.Generator,
) -> RunStats:
    """`runs` sequences of `length` tokens from repeated tree rounds (the tree cut to depth length − 1 at the end, as
    the engine and the enumeration do). One run at a time: each round is the real verify_tree on one small tree."""
    out = torch.empty(runs, length, dtype=torch.long)
    passes = 0
    for run in range(runs):
        seq: Context = ()
        while len(seq) < length:
            cut = shape[: length - len(seq) - 1]
            n = len(tree_parents(cut))
            seq += tree_round(p, q, seq, cut, variant, uniforms(generator, 2 * n + 1))
            passes += 1
        out[run] = torch.tensor(seq[:length])
    return RunStats(out, passes, 0, 0)


@dataclass(frozen=True)
class TreeCheck:
    """One tree sampler against the target: exact distance by enumeration, and a χ² test on samples."""

    variant: TreeVariant
    exact: torch.Tensor  # (V^length,) the variant's exact output distribution
    max_abs_diff: float  # max over sequences of |exact − p|
    tv: float  # total variation from p
    chi2: Chi2Result  # the variant's samples against p's exact distribution
    passes_per_token: float  # target passes per committed token in the samples (plain decoding: 1)

    @property
    def verdict(self) -> str:
        return verdict(self.max_abs_diff, self.chi2.p_value)


def tree_checks(
    p: MarkovChain,
    q: MarkovChain,
    shape: tuple[int, ...],
    samples: int = 4000,
    seed: int = 0,
    variants: Sequence[TreeVariant] = TREE_VARIANTS,
) -> tuple[torch.Tensor, list[TreeCheck]]:
    """p's exact distribution over sequences of depth + 1 events (the most one round commits), and every variant's
    exact distance from it and χ² p-value on `samples` runs (fixed seed per variant)."""
    length = len(shape) + 1
    _check_counts(1, samples, length)
    vocab = p.start.shape[0]
    target = as_vector(target_distribution(p, (), length), vocab, length)
    checks = []
    for index, variant in enumerate(variants):
        exact = as_vector(tree_variant_distribution(p, q, shape, length, variant), vocab, length)
        runs = sample_tree(p, q, shape, variant, samples, length, torch.Generator().manual_seed(seed + index))
        checks.append(
            TreeCheck(
                variant,
                exact,
                float((exact - target).abs().max()),
                0.5 * float((exact - target).abs().sum()),
                chi2_goodness_of_fit(sequence_counts(runs, vocab), target),
                runs.passes / (runs.runs * length),
            )
        )
    return target, checks


def sequence_labels(length: int, names: Sequence[str] = EVENTS) -> list[str]:
    """'view → click → cart' labels in the index order of `sequence_counts`."""
    return [" → ".join(names[t] for t in s) for s in all_sequences(len(names), length)]
