"""Rows of target-written training data end at the continuation's first EOS, never at one inside the prefix."""

import numpy as np

from specviz.train.generate import _through_first_eos

EOS, PAD = 0, 1


def test_a_row_is_cut_after_the_continuations_first_eos_and_its_padding_dropped():
    row = np.array([5, 0, 6, 7, 8, 0, 1, 1])  # prefix [5, 0, 6] holds an EOS of its own
    assert _through_first_eos(row, 3, EOS).tolist() == [5, 0, 6, 7, 8, 0]


def test_a_row_without_eos_keeps_every_token_and_gains_one():
    row = np.array([5, 6, 7, 8])
    assert _through_first_eos(row, 2, EOS).tolist() == [5, 6, 7, 8, 0]
