"""Hand-built probabilities with the outcome each row must have (after transformers' sampling tests)."""

import pytest
import torch

from specviz.core.sampling import one_hot
from specviz.core.verify import acceptance_probability, overlap, residual, verify

V = 4


def dist(*probs):
    return torch.tensor(probs, dtype=torch.float64)


def run(p_rows, q_rows, drafts, u_accept, u_next):
    p = torch.stack([dist(*r) for r in p_rows])  # (K+1, V)
    q = torch.stack([dist(*r) for r in q_rows]) if q_rows else torch.zeros(0, V, dtype=torch.float64)  # (K, V)
    return verify(p, q, torch.tensor(drafts), torch.tensor(u_accept, dtype=torch.float64), torch.tensor(u_next))


def test_accepts_when_target_likes_the_token_more():
    # p(0) = .6 >= q(0) = .5: ratio 1, accepted whatever u; then all K=1 passed -> bonus from p_2 (token 3 certain)
    v = run([(0.6, 0.3, 0.1, 0.0), (0, 0, 0, 1)], [(0.5, 0.4, 0.1, 0.0)], [0], [0.999], 0.5)
    assert v.accept_prob.tolist() == [1.0]
    assert int(v.n_accepted) == 1
    assert int(v.next_token) == 3
    assert v.next_dist.tolist() == [0, 0, 0, 1]


def test_rejects_and_resamples_from_the_residual():
    # token 1: p = .3, q = .4 -> ratio .75; u = .9 > .75 rejects.
    # residual max(0, p - q) = (.1, 0, 0, .1) -> normalised (.5, 0, 0, .5); u_next = .4 picks token 0, .6 picks 3
    p_rows = [(0.5, 0.3, 0.1, 0.1), (0.25, 0.25, 0.25, 0.25)]
    q_rows = [(0.4, 0.4, 0.2, 0.0)]
    v = run(p_rows, q_rows, [1], [0.9], 0.4)
    assert v.accept_prob.item() == pytest.approx(0.75)
    assert int(v.n_accepted) == 0
    assert int(v.next_token) == 0
    assert v.next_dist.tolist() == pytest.approx([0.5, 0, 0, 0.5])
    assert int(run(p_rows, q_rows, [1], [0.9], 0.6).next_token) == 3
    # the same token with u = .74 <= .75 is accepted
    assert int(run(p_rows, q_rows, [1], [0.74], 0.6).n_accepted) == 1


def test_stops_at_the_first_rejection_even_if_later_drafts_would_pass():
    # K=3: pos 1 accepts (ratio 1), pos 2 rejects (ratio .2, u .5), pos 3 would pass but is never reached
    p_rows = [(1, 0, 0, 0), (0.1, 0.9, 0, 0), (0, 0, 1, 0), (0, 0, 0, 1)]
    q_rows = [(1, 0, 0, 0), (0.5, 0.5, 0, 0), (0, 0, 1, 0)]
    v = run(p_rows, q_rows, [0, 0, 2], [0.3, 0.5, 0.1], 0.5)
    assert v.passed.tolist() == [True, False, True]
    assert int(v.n_accepted) == 1
    assert int(v.next_token) == 1  # residual at pos 2 = (0, .4, 0, 0) -> token 1


def test_all_accepted_draws_the_bonus_from_p_k_plus_1():
    # K=2 identical p and q: ratios 1; bonus from p_3 = (0, .5, .5, 0): u .3 -> 1, u .8 -> 2
    same = (0.25, 0.25, 0.25, 0.25)
    v = run([same, same, (0, 0.5, 0.5, 0)], [same, same], [2, 3], [1.0, 1.0], 0.3)
    assert int(v.n_accepted) == 2
    assert int(v.next_token) == 1
    assert int(run([same, same, (0, 0.5, 0.5, 0)], [same, same], [2, 3], [1.0, 1.0], 0.8).next_token) == 2


def test_one_hot_draft_is_accepted_with_probability_p():
    # deterministic drafter proposes token 2 (q = one-hot): ratio = p(2) = .3
    p_rows = [(0.5, 0.2, 0.3, 0.0), (1, 0, 0, 0)]
    q = one_hot(torch.tensor([2]), V).double()
    accept = verify(
        torch.tensor(p_rows, dtype=torch.float64),
        q,
        torch.tensor([2]),
        torch.tensor([0.29], dtype=torch.float64),
        torch.tensor(0.5),
    )
    assert accept.accept_prob.item() == pytest.approx(0.3)
    assert int(accept.n_accepted) == 1
    # u = .31 rejects; the correction comes from p with token 2 zeroed: (.5, .2, 0, 0)/.7 -> u .8 gives token 1
    reject = verify(
        torch.tensor(p_rows, dtype=torch.float64),
        q,
        torch.tensor([2]),
        torch.tensor([0.31], dtype=torch.float64),
        torch.tensor(0.8),
    )
    assert int(reject.n_accepted) == 0
    assert int(reject.next_token) == 1
    assert reject.next_dist.tolist() == pytest.approx([5 / 7, 2 / 7, 0, 0])


def test_zero_drafts_is_plain_sampling_from_p1():
    v = run([(0.1, 0.2, 0.3, 0.4)], [], [], [], 0.35)
    assert int(v.n_accepted) == 0
    assert int(v.next_token) == 2  # cdf .1 .3 .6 1.0: .35 falls in token 2


def test_residual_guard_falls_back_to_p_when_nothing_is_owed():
    p = dist(0.2, 0.3, 0.5, 0.0)
    assert residual(p, p).tolist() == p.tolist()  # max(0, p - q) sums to 0: use p itself


def test_acceptance_probability_and_rate():
    assert acceptance_probability(dist(0.2, 0.8), dist(0.4, 0.4)).tolist() == [0.5, 1.0]
    assert overlap(dist(0.7, 0.3), dist(0.9, 0.1)).item() == pytest.approx(0.8)  # min(.7,.9) + min(.3,.1)
