"""One Medusa round is exact, by enumeration on a toy: K independent heads over the target's feature of the row that
produced the last committed token, head i drafting x_{n+1+i} from that feature alone (no head sees another's draft),
judged one-hot (argmax drafts, what vLLM does) or with head i's q (drafts sampled from it).

Each round's committed tokens, continued by the target alone to K + 1 tokens, must have exactly the target's
distribution over K + 1 tokens; argmax drafts judged with the heads' full softmax must not.
"""

from __future__ import annotations

import pytest
import torch
from test_eagle_exactness import argmax_judged_with_soft_q

from specviz.core.toy import Context, MarkovModel, continued, judge_with, round_outcomes, target_distribution
from specviz.core.toy import total_variation as tv

VOCAB = 3


class ToyMedusa:
    """Linear heads over features: the target's feature of a row is log p(. | the context up to it); head i drafts
    from softmax(W_i f + c_i). In a round at x_0..x_n every head reads the feature of row n - 1, so q depends on where
    the round began and on the head's index, never on the drafted tokens."""

    def __init__(self, p: MarkovModel, k: int, seed: int):
        g = torch.Generator().manual_seed(seed)
        self.p = p
        self.w = torch.randn(k, VOCAB, VOCAB, generator=g, dtype=torch.float64) * 0.8
        self.c = torch.randn(k, VOCAB, generator=g, dtype=torch.float64)

    def q_for_round(self, start: Context, one_hot: bool):
        feature = self.p(start[:-1]).log()  # (V,) the row that produced the round's last committed token

        def q(context: Context) -> torch.Tensor:
            i = len(context) - len(start)  # head i: the draft at offset i + 1 after the last committed token
            dist = (self.w[i] @ feature + self.c[i]).softmax(-1)
            return torch.nn.functional.one_hot(dist.argmax(), VOCAB).double() if one_hot else dist

        return q


@pytest.mark.parametrize("one_hot", [True, False], ids=["argmax drafts", "sampled drafts"])
@pytest.mark.parametrize("k", [1, 2, 4])
@pytest.mark.parametrize("seed", [0, 1])
def test_one_medusa_round_continued_by_the_target_has_the_targets_distribution(one_hot, k, seed):
    p = MarkovModel.random(VOCAB, torch.Generator().manual_seed(seed), sharpness=1.5)
    context = (0, 2)
    heads = ToyMedusa(p, k, seed)
    outcomes = round_outcomes(p, heads.q_for_round(context, one_hot), context, k, judge_with())
    assert abs(sum(outcomes.values()) - 1) < 1e-12
    assert max(len(t) for t in outcomes) == k + 1  # some paths accept every draft and take the bonus
    assert tv(continued(p, context, outcomes, k + 1), target_distribution(p, context, k + 1)) < 1e-12


def test_the_heads_drafts_do_not_depend_on_each_other():
    p = MarkovModel.random(VOCAB, torch.Generator().manual_seed(0), sharpness=1.5)
    q = ToyMedusa(p, 3, 0).q_for_round((0, 2), one_hot=False)
    torch.testing.assert_close(q((0, 2, 0)), q((0, 2, 1)))  # head 1 after either first draft
    assert not torch.allclose(q((0, 2)), q((0, 2, 0)))  # but another head than head 0


def test_argmax_drafts_judged_with_the_heads_softmax_are_not_exact():
    p = MarkovModel.random(VOCAB, torch.Generator().manual_seed(0), sharpness=1.5)
    context = (0, 2)
    heads = ToyMedusa(p, 1, 0)
    judge = argmax_judged_with_soft_q([heads.q_for_round(context, one_hot=False)(context)])
    outcomes = round_outcomes(p, heads.q_for_round(context, one_hot=True), context, 1, judge)
    assert tv(continued(p, context, outcomes, 2), target_distribution(p, context, 2)) > 1e-2
