"""Drafting across tokenizers, the maths alone: the intersection by spelling, TLI's q′, SLEM's seam, the realignment,
and TLI's output distribution enumerated exactly on a toy pair of vocabularies."""

from __future__ import annotations

import pytest
import torch

from specviz.core.crossvocab import intersect, masked_top, realign, restrict, slem_tokens, tli_step
from specviz.core.lab.crossvocab import TOY_DRAFT_VOCAB, TOY_TARGET_VOCAB, cross_check
from specviz.core.sampling import SamplingSettings


def test_the_intersection_pairs_tokens_by_spelling_and_leaves_out_ambiguous_ones():
    draft = ["x", " the", "\ufffd", "a", "a", ""]  # "a" twice: ambiguous; U+FFFD and "" have no spelling
    target = [" the", "a", "y", "x"]
    cross = intersect(draft, target)
    assert cross.target_ids == (0, 3)  # " the" and "x", in target-id order
    assert cross.draft_ids == (1, 0)
    assert cross.share == 0.5
    assert cross.to_draft() == {0: 1, 3: 0}


def test_tli_q_is_the_draft_restricted_to_the_intersection_and_renormalised():
    cross = intersect(TOY_DRAFT_VOCAB, TOY_TARGET_VOCAB)  # c, a, b shared; x, y only the draft's
    d_idx, t_idx = torch.tensor(cross.draft_ids), torch.tensor(cross.target_ids)
    q = torch.tensor([0.1, 0.4, 0.2, 0.2, 0.1], dtype=torch.float64)  # over c x a y b
    step = tli_step(q.log(), d_idx, t_idx, 5, SamplingSettings(1.0))
    # c, a, b carry 0.1 + 0.2 + 0.1 = 0.4; x and y (0.6) are lost
    assert step.lost.item() == pytest.approx(0.6)
    assert step.q.tolist() == pytest.approx([0.5, 0.25, 0.25, 0.0, 0.0])  # a b c d e
    assert torch.allclose(step.q.double(), restrict(q, d_idx, t_idx, 5), atol=1e-7)
    assert masked_top(step.full, d_idx, 2)[0][0] == 1  # x, the most likely masked token
    greedy = tli_step(q.log(), d_idx, t_idx, 5, SamplingSettings(0.0))
    assert greedy.q.tolist() == [1.0, 0.0, 0.0, 0.0, 0.0]  # the argmax x is masked: a, the best shared token
    assert greedy.lost.item() == 1.0


@pytest.mark.parametrize("seed", range(4))
def test_tli_emits_exactly_the_target_distribution_by_enumeration(seed):
    check = cross_check(seed=seed, k=3, length=4)
    assert check.max_error < 1e-12
    assert sum(check.tli.values()) == pytest.approx(1.0, abs=1e-12)
    assert check.mean_lost > 0.05  # the draft did put mass on x and y, which TLI masked


def test_realignment_keeps_the_common_prefix_and_reads_the_rest():
    moved = realign([5, 6, 7, 8], [5, 6, 9, 10, 11])  # the draft's 7, 8 disagree with the committed text
    assert (moved.kept, moved.dropped, moved.fresh) == (2, 2, (9, 10, 11))
    assert realign([1, 2], [1, 2, 3]).dropped == 0  # no mismatch: it only reads the new token


def test_slem_keeps_the_tokens_after_the_window_or_reports_the_seam():
    assert slem_tokens([4, 5], [4, 5, 8, 9]) == [8, 9]
    assert slem_tokens([4, 5], [4, 7, 9]) is None  # the draft's text merged into the window's last token
