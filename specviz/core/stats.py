"""Every statistic of measured runs, in one place: each view (pages, CLI, JSON, bench) calls these.

Definitions (counts summed over the runs given, so a figure over many runs is a pooled ratio, not a mean of ratios):
    alpha            accepted / judged: the per-token acceptance probability of the paper. "Judged" drafts met the
                     accept test (the accepted ones and the one rejected); drafts after a rejection never do. Given a
                     prefix, its expectation is the overlap sum_x min(p(x), q(x)) of the processed distributions
                     (argmax agreement at T = 0); over a run, alpha-hat is a ratio estimator of it.
    acceptance_rate  accepted / proposed: vLLM's "draft acceptance rate"; counts unjudged drafts, so it falls with K.
    tau              committed / target passes: tokens per round, the correction or bonus token included.
    predicted speedup  tau / (drafts per round * c + v): what the model passes alone allow, from measured tau, the
                     measured draft cost c and verify cost v (both in target steps). E(alpha, K) assumes K drafts every
                     round and lives in core/theory.py, for the calculator's what-ifs only.
Records are anything with the RunRecord fields (`per_round_*`, `overlap_by_position`, `k`, `totals`); counts a source
did not report are None and make the statistics that need them None. A record whose source reports only totals (a
serving engine's counters, or its per-request summary) carries them as a `Tally` in `totals`; every total then comes
from there, and the per-position statistics, which need rounds, leave it out.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np


class Counts(Protocol):
    """What the rates read from a run (a RunRecord, a trace): read-only, so a frozen dataclass matches it."""

    @property
    def k(self) -> int: ...

    @property
    def per_round_committed(self) -> Sequence[int]: ...

    @property
    def per_round_drafted(self) -> Sequence[int] | None: ...

    @property
    def per_round_accepted(self) -> Sequence[int] | None: ...

    @property
    def per_round_judged(self) -> Sequence[int] | None: ...

    @property
    def overlap_by_position(self) -> Sequence[float | None]: ...

    @property
    def totals(self) -> Tally | None: ...


def total(values: Sequence[int] | None) -> int | None:
    return None if values is None else sum(values)


def ratio(num: float | None, den: float | None) -> float | None:
    return num / den if num is not None and den else None


@dataclass(frozen=True)
class Tally:
    """Counts summed over rounds (of one run or many); a count a source did not report is None."""

    proposed: int | None
    accepted: int | None
    judged: int | None
    rounds: int | None  # target passes (None: the source does not say)
    committed: int
    drafting_rounds: int | None = None  # rounds that drafted at least one token: vLLM's "num_drafts"

    @property
    def alpha(self) -> float | None:
        """accepted / judged (None when nothing was judged or it was not reported)."""
        return ratio(self.accepted, self.judged)

    @property
    def acceptance_rate(self) -> float | None:
        """accepted / proposed (vLLM's draft acceptance rate)."""
        return ratio(self.accepted, self.proposed)

    @property
    def tau(self) -> float | None:
        """Tokens committed per target pass."""
        return ratio(self.committed, self.rounds)

    @property
    def drafts_per_round(self) -> float | None:
        """Mean drafts proposed per round: K for a draft model, fewer for a lookup that often finds nothing."""
        return ratio(self.proposed, self.rounds)


def counts(record: Counts) -> Tally:
    """One record's totals: the `totals` it carries when its source reports only those, else its per-round sums."""
    given = getattr(record, "totals", None)
    if given is not None:
        return given
    drafted = record.per_round_drafted
    return Tally(
        total(drafted),
        total(record.per_round_accepted),
        total(record.per_round_judged),
        len(record.per_round_committed),
        sum(record.per_round_committed),
        None if drafted is None else sum(d > 0 for d in drafted),
    )


def tally(records: Iterable[Counts]) -> Tally:
    """Sum every count over all rounds of all records (None when any record lacks it)."""
    parts = [counts(r) for r in records]

    def pooled(field: str) -> int | None:
        values = [getattr(p, field) for p in parts]
        return None if any(v is None for v in values) else sum(values)

    return Tally(
        pooled("proposed"),
        pooled("accepted"),
        pooled("judged"),
        pooled("rounds"),
        pooled("committed"),
        pooled("drafting_rounds"),
    )


def alpha(records: Iterable[Counts]) -> float | None:
    return tally(records).alpha


def acceptance_rate(records: Iterable[Counts]) -> float | None:
    return tally(records).acceptance_rate


def tau(records: Iterable[Counts]) -> float | None:
    return tally(records).tau


def tokens_per_s(committed: int, wall_s: float) -> float:
    return committed / wall_s if wall_s > 0 else 0.0


def inter_token_latencies_ms(arrivals: Iterable[tuple[float, int]]) -> list[float]:
    """Gap before each token after the first, from (seconds, tokens that arrived then): a burst of n tokens is one gap
    then n - 1 zeros."""
    gaps, previous = [], None
    for t, n in arrivals:
        if previous is not None:
            gaps.append((t - previous) * 1e3)
        gaps += [0.0] * (n - 1)
        previous = t
    return gaps


def first_divergence(reference: Sequence[int], other: Sequence[int]) -> int | None:
    """Index of the first differing token (or of the shorter end), None when identical."""
    for i, (a, b) in enumerate(zip(reference, other)):
        if a != b:
            return i
    return None if len(reference) == len(other) else min(len(reference), len(other))


def per_position(records: Iterable[Counts]) -> list[dict]:
    """Per draft position i (1-based): rounds that reached it (every earlier draft accepted), that accepted it, the
    conditional rate accepted / reached, the cumulative rate accepted / rounds that drafted it, and the mean overlap
    sum min(p, q) where reached (in-process runs only; None elsewhere)."""
    records = [r for r in records if r.per_round_judged is not None and r.per_round_accepted is not None]
    width = max((max(r.k, max(r.per_round_drafted or [0], default=0)) for r in records), default=0)
    rows = []
    for i in range(width):
        reached = accepted = drafted = 0
        overlap_sum, overlap_weight = 0.0, 0
        for rec in records:
            hits = sum(j > i for j in rec.per_round_judged)
            reached += hits
            accepted += sum(a > i for a in rec.per_round_accepted)
            drafted += sum(d > i for d in rec.per_round_drafted or ())
            if i < len(rec.overlap_by_position) and rec.overlap_by_position[i] is not None:
                overlap_sum += rec.overlap_by_position[i] * hits
                overlap_weight += hits
        rows.append(
            {
                "position": i + 1,
                "reached": reached,
                "accepted": accepted,
                "rate": ratio(accepted, reached),
                "cumulative": ratio(accepted, drafted),
                "overlap": ratio(overlap_sum, overlap_weight),
            }
        )
    return rows


def conditional_rates(records: Iterable[Counts]) -> tuple[tuple[float, ...], tuple[int, ...]]:
    """Per-position P(accept | reached) and how many drafts reached each position, up to the first position no
    round reached: the alpha_1, alpha_2, ... of the positional model."""
    rates, counts = [], []
    for row in per_position(records):
        if not row["reached"]:
            break
        rates.append(row["rate"])
        counts.append(row["reached"])
    return tuple(rates), tuple(counts)


def accepted_length_histogram(records: Iterable[Counts]) -> list[int]:
    """Rounds that drafted something, by how many drafts they accepted: index n counts rounds accepting n."""
    records = [r for r in records if r.per_round_drafted is not None and r.per_round_accepted is not None]
    width = max((max(r.k, max(r.per_round_drafted, default=0)) for r in records), default=0)
    counts = [0] * (width + 1)
    for rec in records:
        for drafted, accepted in zip(rec.per_round_drafted, rec.per_round_accepted):
            if drafted:
                counts[min(accepted, width)] += 1
    return counts


def vllm_metrics(records: Iterable[Counts]) -> dict:
    """The records' counts under vLLM's names (its Prometheus counters and per-request metrics)."""
    records = list(records)
    lengths = accepted_length_histogram(records)
    pooled = tally(records)
    drafts, accepted = pooled.drafting_rounds, pooled.accepted
    return {
        "num_drafts": drafts,
        "num_draft_tokens": pooled.proposed,
        "num_accepted_tokens": accepted,
        "num_accepted_tokens_per_pos": [row["accepted"] for row in per_position(records)],
        "mean_acceptance_length": 1 + accepted / drafts if drafts and accepted is not None else 1.0,
        "draft_acceptance_rate": pooled.acceptance_rate,
        "acceptance_length_histogram": lengths,
    }


def verify_cost_at(verify_relative: Sequence[float], drafts: float) -> float:
    """v for a round of `drafts` drafts (rounded to the nearest measured K; 1 target step for none)."""
    return (1.0, *verify_relative)[min(round(drafts), len(verify_relative))]


def predicted_speedup(tau_: float, drafts: float, c: float, verify_cost: float) -> float:
    """tau / (drafts per round * c + v): the speedup the model passes allow, before any loop overhead."""
    return tau_ / (drafts * c + verify_cost)


def bootstrap_ci(
    values: Sequence[float | None],
    weights: Sequence[float] | None = None,
    seed: int = 0,
    draws: int = 2000,
    level: float = 0.95,
) -> tuple[float, float]:
    """Percentile bootstrap interval over prompts of the (weighted) mean; seeded, so the same values give the same.

    With weights it is the interval of a pooled ratio: sum(value * weight) / sum(weight), e.g. alpha pooled over
    prompts with value = per-prompt alpha and weight = drafts judged.
    """
    pairs = [(v, 1.0 if weights is None else w) for v, w in zip(values, weights or values)]
    pairs = [(v, w) for v, w in pairs if v is not None and not math.isnan(v) and w and w > 0]
    if not pairs:
        return (math.nan, math.nan)
    data, weight = np.asarray(pairs, dtype=float).T
    picks = np.random.default_rng(seed).integers(0, data.size, size=(draws, data.size))  # (draws, prompts)
    estimates = (data[picks] * weight[picks]).sum(axis=1) / weight[picks].sum(axis=1)
    tail = (1 - level) / 2
    return float(np.quantile(estimates, tail)), float(np.quantile(estimates, 1 - tail))


def bootstrap_ci_nested(
    groups: Sequence[Sequence[float]], seed: int = 0, draws: int = 2000, level: float = 0.95
) -> tuple[float, float]:
    """Percentile bootstrap of a mean over prompts that also carries the noise within each prompt: every draw picks
    prompts with replacement, then one of each picked prompt's repeats at random. groups: per prompt, its repeats."""
    groups = [[v for v in g if v is not None and not math.isnan(v)] for g in groups]
    groups = [g for g in groups if g]
    if not groups:
        return (math.nan, math.nan)
    width = max(len(g) for g in groups)
    values = np.array([g + [g[0]] * (width - len(g)) for g in groups])  # (prompts, repeats), padded
    sizes = np.array([len(g) for g in groups])  # (prompts,)
    rng = np.random.default_rng(seed)
    prompts = rng.integers(0, len(groups), size=(draws, len(groups)))  # (draws, prompts)
    repeats = (rng.random((draws, len(groups))) * sizes[prompts]).astype(int)  # one repeat of each picked prompt
    estimates = values[prompts, repeats].mean(axis=1)
    tail = (1 - level) / 2
    return float(np.quantile(estimates, tail)), float(np.quantile(estimates, 1 - tail))


def spread(values: Sequence[float]) -> tuple[float, float]:
    """(lowest, highest) of repeated measurements: an interval that holds every repeat by construction. With one
    value it is that value twice; with none, (nan, nan)."""
    known = [v for v in values if v is not None and not math.isnan(v)]
    return (min(known), max(known)) if known else (math.nan, math.nan)


def repeat_means(groups: Sequence[Sequence[float]]) -> list[float]:
    """The whole workload's mean as each timing repeat alone measured it: repeat r's value of every prompt that has
    an r-th repeat, averaged over those prompts. groups: per prompt, its repeats in the order they ran."""
    width = max((len(g) for g in groups), default=0)
    return [float(np.mean([g[r] for g in groups if len(g) > r])) for r in range(width)]


def speedup_interval(
    groups: Sequence[Sequence[float]], seed: int = 0, draws: int = 2000, level: float = 0.95
) -> tuple[float, float]:
    """The interval of a workload's mean speedup: the nested bootstrap over prompts and their repeats, widened where
    needed to hold the mean of every single repeat. The bootstrap alone treats repeats as independent draws; on a
    machine whose load drifts, a whole repeat runs faster or slower together, and the figure a second measurement
    gives moves by that much: the interval must cover it. groups: per prompt, the speedup of each repeat."""
    groups = [[v for v in g if v is not None and not math.isnan(v)] for g in groups]
    groups = [g for g in groups if g]
    low, high = bootstrap_ci_nested(groups, seed, draws, level)
    if math.isnan(low):
        return low, high
    means = repeat_means(groups)
    return min(low, *means), max(high, *means)


def bootstrap_statistic(
    n: int, statistic: Callable[[np.ndarray], float], seed: int = 0, draws: int = 2000, level: float = 0.95
) -> tuple[float, float]:
    """Percentile bootstrap interval of any statistic of n items (prompts): each draw picks n item indices with
    replacement and passes them to `statistic` (an array of indices -> a number; NaN draws are left out). For figures
    that are not a mean, such as a ratio of two servers' medians over the same prompts."""
    if n <= 0:
        return (math.nan, math.nan)
    picks = np.random.default_rng(seed).integers(0, n, size=(draws, n))  # (draws, items)
    estimates = np.array([statistic(pick) for pick in picks], dtype=float)
    estimates = estimates[~np.isnan(estimates)]
    if estimates.size == 0:
        return (math.nan, math.nan)
    tail = (1 - level) / 2
    return float(np.quantile(estimates, tail)), float(np.quantile(estimates, 1 - tail))
