"""The dynamic tree's growth (core/dyntree.py) on hand-built draft log-probabilities: which nodes are expanded, which
kept, and the breadth-first numbering the verifier reads."""

import math

import pytest
import torch

from specviz.core.dyntree import DynamicTree, grow_dynamic_tree, parse_dynamic
from specviz.core.settings import MAX_TREE_NODES, RunSettings
from specviz.core.verify import tree_depths
from specviz.errors import SettingsError

V = 8


def logp(*probs: float) -> torch.Tensor:
    """(V,) log-probabilities from the leading probabilities given (the rest share what is left)."""
    rest = (1.0 - sum(probs)) / (V - len(probs))
    return torch.tensor([*probs, *[rest] * (V - len(probs))]).log()


def table(rows: dict[tuple[int, ...], torch.Tensor]):
    """An expand callback reading each frontier node's row by its path of tokens from the root."""
    calls = []

    def expand(frontier, so_far):
        calls.append(list(frontier))
        out = []
        for c in frontier:
            path, node = [], c
            while node >= 0:
                path.insert(0, so_far.tokens[node])
                node = so_far.parents[node]
            out.append(rows.get(tuple(path), logp()))
        return torch.stack(out)

    return expand, calls


def test_expands_the_best_frontier_and_keeps_the_best_nodes():
    # root: token 0 (0.5), token 1 (0.3); after 0: 2 (0.9), 3 (0.05); after 1: 4 (0.6), 5 (0.3)
    expand, calls = table({(0,): logp(0.0, 0.0, 0.9, 0.05), (1,): logp(0.0, 0.0, 0.0, 0.0, 0.6, 0.3)})
    grown = grow_dynamic_tree(logp(0.5, 0.3), expand, DynamicTree(budget=4, depth=2, topk=2))
    # level 1 scored 0, 1; both expanded (the first frontier is all of level 1); level 2 scored 2, 3 under 0 and 4, 5
    assert calls == [[0, 1]]
    assert grown.tokens == (0, 1, 2, 3, 4, 5)
    assert grown.parents == (-1, -1, 0, 0, 1, 1)
    assert grown.expanded == (True, True, False, False, False, False)
    expected = [0.5, 0.3, 0.45, 0.025, 0.18, 0.09]  # cumulative probabilities
    assert [math.exp(s) for s in grown.scores] == pytest.approx(expected)
    # the 4 best: 0 (0.5), 2 (0.45), 1 (0.3), 4 (0.18); breadth-first: 0, 1, then 2 under 0, 4 under 1
    assert grown.kept == (0, 1, 2, 4)
    assert grown.node_parents == (-1, -1, 0, 1)
    assert grown.node_of == (0, 1, 2, -1, 3, -1)


def test_only_the_top_k_of_a_level_are_expanded():
    # depth 3, top-2: level 2 has 4 candidates; only its 2 best (5 after 0 at 0.4, 2 after 0 at 0.3) are expanded
    expand, calls = table({(0,): logp(0.0, 0.0, 0.3, 0.0, 0.0, 0.4), (1,): logp(0.1, 0.05)})
    grown = grow_dynamic_tree(logp(0.8, 0.1), expand, DynamicTree(budget=5, depth=3, topk=2))
    assert calls[0] == [0, 1]
    assert [grown.tokens[c] for c in calls[1]] == [5, 2]  # best first
    assert all(grown.parents[c] == 0 for c in calls[1])
    assert sum(grown.expanded) == 4
    assert len(grown.tokens) == DynamicTree(5, 3, 2).candidates == 2 + 4 + 4


def test_the_kept_set_is_a_connected_breadth_first_tree():
    gen = torch.Generator().manual_seed(0)

    def expand(frontier, so_far):
        return torch.randn(len(frontier), 50, generator=gen).log_softmax(-1)  # (m, V)

    grown = grow_dynamic_tree(torch.randn(50, generator=gen).log_softmax(-1), expand, DynamicTree(20, 6, 4))
    parents = grown.node_parents
    assert len(parents) == 20
    assert all(p < i for i, p in enumerate(parents))  # a parent before its children
    depths = tree_depths(parents)
    assert list(depths) == sorted(depths)  # level by level
    order = [p for p in parents]  # children of one parent consecutive, parents in order
    assert order == sorted(order)
    kept_scores = [grown.scores[c] for c in grown.kept]
    pruned = [s for c, s in enumerate(grown.scores) if c not in grown.kept]
    assert min(kept_scores) >= max(pruned)  # the budget best


def test_budget_equal_to_depth_with_top_1_is_the_greedy_chain():
    expand, _ = table({(0,): logp(0.0, 0.0, 0.7), (0, 2): logp(0.0, 0.0, 0.0, 0.9)})
    grown = grow_dynamic_tree(logp(0.6), expand, DynamicTree(budget=3, depth=3, topk=1))
    assert grown.node_parents == (-1, 0, 1)
    assert [grown.tokens[c] for c in grown.kept] == [0, 2, 3]


def test_ties_keep_the_parent_before_its_child():
    # p = 1 at the root's child: the child scores the same as... its own child with log 1 = 0 ties with it
    rows = {(0,): torch.tensor([0.0] + [-1e9] * (V - 1))}  # after 0, token 0 with probability 1
    expand, _ = table(rows)
    grown = grow_dynamic_tree(torch.tensor([0.0] + [-1e9] * (V - 1)), expand, DynamicTree(budget=1, depth=2, topk=1))
    assert grown.kept == (0,)


def test_text_form_and_validation():
    assert parse_dynamic("dynamic:16,5,4") == DynamicTree(16, 5, 4)
    assert parse_dynamic(" dynamic: 8, 3, 2") == DynamicTree(8, 3, 2)
    assert parse_dynamic("3,2,1") is None
    assert DynamicTree(16, 5, 4).text == "dynamic:16,5,4"
    with pytest.raises(SettingsError, match="BUDGET,DEPTH,TOPK"):
        parse_dynamic("dynamic:16,5")
    with pytest.raises(SettingsError, match="budget"):
        RunSettings(method="tree", dynamic=DynamicTree(MAX_TREE_NODES + 1, 5, 4))
    with pytest.raises(SettingsError, match="depth"):
        RunSettings(method="tree", dynamic=DynamicTree(16, 0, 4))
    with pytest.raises(SettingsError, match="top-k"):
        RunSettings(method="tree", dynamic=DynamicTree(16, 5, 0))
    with pytest.raises(SettingsError, match="static tree shape or a dynamic tree"):
        RunSettings(method="tree", tree=(2, 1), dynamic=DynamicTree(16, 5, 4))
    with pytest.raises(SettingsError, match="Medusa"):
        RunSettings(method="medusa", dynamic=DynamicTree(16, 5, 4))


def test_settings_round_trip_through_json():
    s = RunSettings(method="eagle", dynamic=DynamicTree(12, 4, 3))
    assert s.is_tree and s.draft_length == 4 and s.draft_slots == 12
    again = RunSettings.from_dict(s.to_dict())
    assert again == s
    assert "dynamic" not in RunSettings(method="tree", tree=(2, 1)).to_dict()


def test_a_damaged_scored_list_is_refused_with_where_and_what():
    import json
    from pathlib import Path

    from specviz.core.trace_json import trace_from_dict
    from specviz.errors import TraceFormatError

    doc = json.loads((Path(__file__).parents[1] / "fixtures/regression/tree_dynamic_greedy_1654.json").read_text())
    doc["rounds"][0]["scored"][0]["parent"] = 5
    with pytest.raises(TraceFormatError, match=r"rounds\[0\]\.scored\[0\]\.parent"):
        trace_from_dict(doc)
    doc["rounds"][0]["scored"][0]["parent"] = -1
    doc["rounds"][0]["scored"][0]["node"] = 99
    with pytest.raises(TraceFormatError, match=r"scored\[0\]\.node"):
        trace_from_dict(doc)
