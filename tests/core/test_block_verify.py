"""Block verification (core/verify.py verify_block), with hand-built distributions: the paper's binary example keeps
11/9 tokens against token by token's 10/9, the output is the target's exactly (enumerated over every draft block and
stopping point on context-dependent models), it never keeps fewer than token by token, and greedy keeps what greedy
token-by-token keeps."""

from __future__ import annotations

import itertools

import pytest
import torch

from specviz.core.verify import verify, verify_block

V, K = 3, 3


def expected_kept(h: torch.Tensor) -> float:
    """E[τ] for stopping probabilities h (K,): τ = the last i with u_i <= h_i, every u independent."""
    total = 0.0
    for i in range(1, h.shape[-1] + 1):
        later = torch.prod(1 - h[i:]) if i < h.shape[-1] else torch.tensor(1.0)
        total += i * float(h[i - 1] * later)
    return total


def token_kept(accept: torch.Tensor) -> float:
    """E[leading run of passes] for acceptance probabilities (K,)."""
    return float(torch.cumprod(accept, 0).sum())


def test_the_papers_binary_example_keeps_11_9_tokens_against_10_9():
    target, draft = torch.tensor([1 / 3, 2 / 3]), torch.tensor([2 / 3, 1 / 3])  # context-free models over {a, b}
    block = token = 0.0
    for x in itertools.product(range(2), repeat=2):
        chance = float(draft[x[0]] * draft[x[1]])
        p, q, drafts = target.expand(3, 2), draft.expand(2, 2), torch.tensor(x)
        u = torch.zeros(2)
        block += chance * expected_kept(verify_block(p, q, drafts, u, torch.tensor(0.5)).accept_prob)
        token += chance * token_kept(verify(p, q, drafts, u, torch.tensor(0.5)).accept_prob)
    assert token == pytest.approx(10 / 9) and block == pytest.approx(11 / 9)


def model(seed: int):
    """A distribution over V tokens for every prefix, fixed by the prefix (a context-dependent toy model)."""

    def dist(prefix: tuple[int, ...]) -> torch.Tensor:
        g = torch.Generator().manual_seed(hash((seed, prefix)) % 2**31)
        return torch.softmax(2.0 * torch.randn(V, generator=g, dtype=torch.float64), -1)

    return dist


def output_distribution(target, draft) -> dict[tuple[int, ...], float]:
    """The exact distribution of the first K + 1 tokens a block round emits, every draft block and stopping point
    enumerated; a round that emits fewer is continued from the target itself (as the next rounds are, if exact)."""
    out: dict[tuple[int, ...], float] = {}
    for x in itertools.product(range(V), repeat=K):
        chance = float(torch.prod(torch.stack([draft(x[:i])[x[i]] for i in range(K)])))
        p = torch.stack([target(x[:i]) for i in range(K + 1)])  # (K+1, V)
        q = torch.stack([draft(x[:i]) for i in range(K)])  # (K, V)
        h = verify_block(p, q, torch.tensor(x), torch.zeros(K, dtype=torch.float64), torch.tensor(0.5)).accept_prob
        for tau in range(K + 1):
            stop = float(h[tau - 1]) if tau else 1.0
            stop *= float(torch.prod(1 - h[tau:]))  # no later stop passed
            if stop == 0:
                continue
            u = torch.tensor([0.0 if i + 1 == tau else 1.0 for i in range(K)], dtype=torch.float64)  # τ exactly
            verdict = verify_block(p, q, torch.tensor(x), u, torch.tensor(0.5))
            assert int(verdict.n_accepted) == tau
            for y in range(V):
                emitted = (*x[:tau], y)
                mass = chance * stop * float(verdict.next_dist[y])
                for rest in itertools.product(range(V), repeat=K - tau):
                    seq = emitted + rest
                    tail = [float(target(seq[:j])[seq[j]]) for j in range(len(emitted), K + 1)]
                    out[seq] = out.get(seq, 0.0) + mass * float(torch.tensor(tail, dtype=torch.float64).prod())
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_output_is_exactly_the_targets_over_every_block_and_stopping_point(seed):
    target, draft = model(100 + seed), model(200 + seed)
    got = output_distribution(target, draft)
    for seq in itertools.product(range(V), repeat=K + 1):
        expected = float(
            torch.tensor([float(target(seq[:j])[seq[j]]) for j in range(K + 1)], dtype=torch.float64).prod()
        )
        assert got.get(seq, 0.0) == pytest.approx(expected, abs=1e-9), seq


@pytest.mark.parametrize("seed", range(6))
def test_it_never_keeps_fewer_tokens_in_expectation_than_token_by_token(seed):
    target, draft = model(300 + seed), model(400 + seed)
    block = token = 0.0
    for x in itertools.product(range(V), repeat=K):
        chance = float(torch.prod(torch.stack([draft(x[:i])[x[i]] for i in range(K)])))
        p = torch.stack([target(x[:i]) for i in range(K + 1)])
        q = torch.stack([draft(x[:i]) for i in range(K)])
        u = torch.zeros(K, dtype=torch.float64)
        block += chance * expected_kept(verify_block(p, q, torch.tensor(x), u, torch.tensor(0.5)).accept_prob)
        token += chance * token_kept(verify(p, q, torch.tensor(x), u, torch.tensor(0.5)).accept_prob)
    assert block >= token - 1e-12


def test_greedy_one_hot_distributions_keep_the_same_prefix_as_token_by_token():
    p = torch.nn.functional.one_hot(torch.tensor([2, 0, 1, 1]), V).double()  # the target's greedy choices
    q = torch.nn.functional.one_hot(torch.tensor([2, 0, 2]), V).double()  # the draft agrees twice, then not
    drafts, u = torch.tensor([2, 0, 2]), torch.full((K,), 0.5, dtype=torch.float64)
    block, token = verify_block(p, q, drafts, u, torch.tensor(0.5)), verify(p, q, drafts, u, torch.tensor(0.5))
    assert int(block.n_accepted) == int(token.n_accepted) == 2
    assert int(block.next_token) == int(token.next_token) == 1  # the target's own third token
