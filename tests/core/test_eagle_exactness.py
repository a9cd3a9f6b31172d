"""One EAGLE round is exact, by enumeration on a toy: drafts from a head that reads the target's feature for the first
draft and its own predicted feature after that, judged one-hot (greedy drafts) or with the head's q (sampled drafts).
The EAGLE-3 toy fuses three features of the context, feeds its own pre-norm state back and drafts from its own LM
head over a draft vocabulary that leaves a token out (q = 0 there: only the residual can emit it).

Each round's committed tokens, continued by the target alone to K + 1 tokens, must have exactly the target's
distribution over K + 1 tokens. The negative control pairs argmax drafts with the head's full softmax as q (the
mistake in Draft & Verify's sampling path), which must fail the same check.
"""

from __future__ import annotations

import pytest
import torch

from specviz.core.toy import (
    Context,
    MarkovModel,
    continued,
    judge_with,
    round_outcomes,
    target_distribution,
    total_variation,
)

VOCAB = 3
V3 = 4  # the EAGLE-3 toy's vocabulary: one more token than its draft vocabulary


class ToyEagle:
    """A linear 'head' over features: the target's feature of a context is log p(. | context); the head predicts the
    next feature g = A f + B[x] and drafts from softmax(g). Within a round the first draft reads the real feature of
    the round's context, later drafts the head's own prediction, so q depends on where the round began."""

    def __init__(self, p: MarkovModel, seed: int):
        g = torch.Generator().manual_seed(seed)
        self.p = p
        self.a = torch.randn(VOCAB, VOCAB, generator=g, dtype=torch.float64) * 0.7
        self.b = torch.randn(VOCAB, VOCAB, generator=g, dtype=torch.float64)

    def feature(self, context: Context) -> torch.Tensor:
        return self.p(context).log()  # (V,)

    def q_for_round(self, start: Context, one_hot: bool):
        """The round's q as a function of the drafted prefix (the context round_outcomes asks about)."""

        def q(context: Context) -> torch.Tensor:
            drafted = context[len(start) :]
            g = self.a @ self.feature(start[:-1]) + self.b[start[-1]]  # the first draft: the real feature f_{n-1}
            for x in drafted:
                g = self.a @ g + self.b[x]  # later drafts: the head's own predicted feature
            dist = g.softmax(-1)
            return torch.nn.functional.one_hot(dist.argmax(), VOCAB).double() if one_hot else dist

        return q


class ToyEagle3:
    """fc over three features of the context (log p, p, the last token one-hot), then s = A h + B[x] (fed back as h
    for the next draft, no fc), q from its own LM head on s / |s| over the draft vocabulary DRAFT_VOCAB, scattered to
    the target's ids (zero elsewhere)."""

    DRAFT_VOCAB = (0, 2, 3)  # token 1 is never drafted

    def __init__(self, p: MarkovModel, seed: int):
        g = torch.Generator().manual_seed(seed + 10)
        self.p = p
        self.fc = torch.randn(V3, 3 * V3, generator=g, dtype=torch.float64) * 0.5
        self.a = torch.randn(V3, V3, generator=g, dtype=torch.float64) * 0.7
        self.b = torch.randn(V3, V3, generator=g, dtype=torch.float64)
        self.lm_head = torch.randn(len(self.DRAFT_VOCAB), V3, generator=g, dtype=torch.float64) * 3

    def fused(self, context: Context) -> torch.Tensor:
        last = torch.nn.functional.one_hot(torch.tensor(context[-1]), V3).double()
        return self.fc @ torch.cat([self.p(context).log(), self.p(context), last])  # (V,)

    def q_for_round(self, start: Context, one_hot: bool):
        def q(context: Context) -> torch.Tensor:
            s = self.a @ self.fused(start[:-1]) + self.b[start[-1]]  # the first draft: fc of the real features
            for x in context[len(start) :]:
                s = self.a @ s + self.b[x]  # later drafts: the head's own pre-norm state, no fc
            small = (self.lm_head @ (s / s.norm())).softmax(-1)  # (N,) over the draft vocabulary
            if one_hot:
                small = torch.nn.functional.one_hot(small.argmax(), len(small)).double()
            dist = torch.zeros(V3, dtype=torch.float64)
            dist[list(self.DRAFT_VOCAB)] = small
            return dist

        return q


@pytest.mark.parametrize("one_hot", [True, False], ids=["one-hot drafts", "sampled drafts"])
@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("seed", [0, 1])
def test_one_eagle3_round_over_a_draft_vocabulary_has_the_targets_distribution(one_hot, k, seed):
    p = MarkovModel.random(V3, torch.Generator().manual_seed(seed), sharpness=1.5)
    context = (0, 2)
    head = ToyEagle3(p, seed)
    outcomes = round_outcomes(p, head.q_for_round(context, one_hot), context, k, judge_with())
    assert abs(sum(outcomes.values()) - 1) < 1e-12
    assert any(1 in tokens for tokens in outcomes)  # the token off the draft vocabulary still comes, from the residual
    spec = continued(p, context, outcomes, k + 1)
    assert total_variation(spec, target_distribution(p, context, k + 1)) < 1e-12


def argmax_judged_with_soft_q(head_q):
    """The lossy shortcut: the draft is the argmax (drawn with probability 1) but accepted with min(1, p/q_soft)."""

    def judge(p_i, q_i):
        soft = head_q[0]
        x = int(soft.argmax())
        kept = torch.zeros_like(p_i)
        kept[x] = min(1.0, float(p_i[x] / soft[x]))
        residual = (p_i - soft).clamp(min=0)
        return kept, 1.0 - float(kept.sum()), residual / residual.sum()

    return judge


@pytest.mark.parametrize("one_hot", [True, False], ids=["one-hot drafts", "sampled drafts"])
@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("seed", [0, 1])
def test_one_eagle_round_continued_by_the_target_has_the_targets_distribution(one_hot, k, seed):
    p = MarkovModel.random(VOCAB, torch.Generator().manual_seed(seed), sharpness=1.5)
    context = (0, 2)
    head = ToyEagle(p, seed)
    outcomes = round_outcomes(p, head.q_for_round(context, one_hot), context, k, judge_with())
    assert abs(sum(outcomes.values()) - 1) < 1e-12
    assert max(len(t) for t in outcomes) == k + 1  # some paths accept every draft and take the bonus
    spec = continued(p, context, outcomes, k + 1)
    assert total_variation(spec, target_distribution(p, context, k + 1)) < 1e-12


def test_argmax_drafts_judged_with_the_heads_softmax_are_not_exact():
    p = MarkovModel.random(VOCAB, torch.Generator().manual_seed(0), sharpness=1.5)
    context = (0, 2)
    head = ToyEagle(p, 0)
    soft = head.q_for_round(context, one_hot=False)
    judge = argmax_judged_with_soft_q([soft(context)])
    outcomes = round_outcomes(p, head.q_for_round(context, one_hot=True), context, 1, judge)
    spec = continued(p, context, outcomes, 2)
    assert total_variation(spec, target_distribution(p, context, 2)) > 1e-2
