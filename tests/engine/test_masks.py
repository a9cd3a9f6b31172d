"""engine/forward/masks.py: the causal and tree masks every forward draws on, their shapes and values."""

import torch

from specviz.engine.forward import masks

MIN = torch.finfo(torch.float32).min


def test_causal_allowed_sees_the_cache_and_the_new_rows_up_to_itself():
    allowed = masks.causal_allowed(2, 3, torch.device("cpu"))
    assert allowed.shape == (3, 5) and allowed.dtype == torch.bool
    assert allowed.tolist() == [
        [True, True, True, False, False],
        [True, True, True, True, False],
        [True, True, True, True, True],
    ]
    assert torch.equal(masks.causal_allowed(0, 4, torch.device("cpu")), torch.ones(4, 4, dtype=torch.bool).tril())


def test_the_additive_mask_is_zero_where_allowed_and_the_dtype_minimum_elsewhere():
    allowed = torch.tensor([[True, False], [False, True]])
    for dtype in (torch.float32, torch.bfloat16):
        mask = masks.additive_mask(allowed, dtype)
        assert mask.shape == (1, 1, 2, 2) and mask.dtype == dtype
        assert mask[0, 0].tolist() == [[0.0, float(torch.finfo(dtype).min)], [float(torch.finfo(dtype).min), 0.0]]


def test_the_causal_mask_blocks_every_later_row_and_only_those():
    mask = masks.causal_mask(3, 2, torch.float32, torch.device("cpu"))  # (1, 1, 2, 5)
    assert mask.shape == (1, 1, 2, 5)
    blocked = torch.ones(2, 5, dtype=torch.bool).triu(3 + 1)  # the cache's 3 rows and the new rows up to itself seen
    assert torch.equal(mask[0, 0] == MIN, blocked) and bool((mask[0, 0][~blocked] == 0).all())


def test_a_tree_node_sees_itself_and_its_ancestors_behind_the_cache():
    parents = (-1, 0, 0, 1)  # a root, two children, a grandchild under the first child
    sees = masks.ancestor_matrix(parents)
    assert sees.tolist() == [
        [True, False, False, False],
        [True, True, False, False],
        [True, False, True, False],
        [True, True, False, True],
    ]
    allowed = masks.after_cache(sees[2:], 5)  # the last two nodes, behind 5 cached rows
    assert allowed.shape == (2, 9) and bool(allowed[:, :5].all()) and torch.equal(allowed[:, 5:], sees[2:])
