"""Monte Carlo on the shop model: many runs at once, vectorised over runs, through the real `verify`; and the
sequence indexing that turns samples and exact distributions into comparable vectors."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from specviz.core.lab.shop import EVENTS
from specviz.core.lab.variants import EXACT_VARIANT, Variant
from specviz.core.sampling import sample, uniforms
from specviz.core.toy import Context, MarkovModel
from specviz.core.verify import Verdict, verify


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


def sample_plain(p: MarkovModel, runs: int, length: int, generator: torch.Generator) -> RunStats:
    """Target-only decoding: one target step per token."""
    rows = p.rows  # (V + 1, V)
    state = torch.full((runs,), rows.shape[0] - 1, dtype=torch.long)  # the START row
    out = torch.empty(runs, length, dtype=torch.long)
    for t in range(length):
        state = sample(rows[state], uniforms(generator, runs))
        out[:, t] = state
    return RunStats(out, runs * length, 0, 0)


def sample_speculative(
    p: MarkovModel,
    q: MarkovModel,
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


def sequence_labels(length: int, names: Sequence[str] = EVENTS) -> list[str]:
    """'view → click → cart' labels in the index order of `sequence_counts`."""
    return [" → ".join(names[t] for t in s) for s in all_sequences(len(names), length)]
