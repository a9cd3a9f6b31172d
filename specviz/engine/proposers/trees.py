"""Growing a draft tree from any drafter's logits: a static top-b tree, or EAGLE-2's dynamic tree."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import torch

from specviz.core.dyntree import DynamicTree, GrownSoFar, grow_dynamic_tree
from specviz.core.sampling import one_hot
from specviz.core.verify import tree_parents
from specviz.engine.proposers.base import Proposal

if TYPE_CHECKING:
    pass


def grow_top_b_tree(shape: tuple[int, ...], root_logits: torch.Tensor, expand, vocab_size: int) -> Proposal:
    """A tree of this shape whose children at each node are the b highest-scoring tokens of that node's logits
    (core/verify.py TOP_B: deterministic, so each q row is one-hot and sibling elimination keeps the walk exact).

    root_logits (1, V); expand(depth, nodes, tokens, parent_rows) gives the (m, V) logits of the m nodes of that
    depth (a list of node ids, in order), tokens (N,) holding every node drafted so far and parent_rows (m,) each
    node's parent's row among the previous depth's nodes; it is not called for the leaves."""
    parents = tree_parents(shape)
    tokens = torch.empty(len(parents), dtype=torch.long, device=root_logits.device)  # (N,)
    logits, start = root_logits, 0  # (nodes of the previous depth, V)
    for depth, branching in enumerate(shape, start=1):
        count = logits.shape[0] * branching
        nodes = list(range(start, start + count))  # breadth-first: node j's parent is the previous depth's j // b
        tokens[start : start + count] = logits.topk(branching, dim=-1).indices.reshape(-1)  # (m,) top-b per parent
        if depth < len(shape):
            rows = torch.arange(count, device=root_logits.device) // branching  # (m,) each node's parent's row
            logits = expand(depth, nodes, tokens, rows)  # (m, V)
        start += count
    return Proposal(tokens, one_hot(tokens, vocab_size), parents)  # q (N, V) one-hot


def dynamic_proposal(root_logits: torch.Tensor, expand, dynamic: DynamicTree, depth: int, vocab_size: int) -> Proposal:
    """A dynamic tree cut to `depth` levels as a Proposal: root_logits (V,) and expand(frontier, so_far) -> (m, V)
    draft logits, ranked by their log-softmax (EAGLE-2 ranks by the raw draft's, whatever the temperature: the
    children are chosen, not sampled, so they are judged one-hot and the round is exact at any temperature)."""
    rows = {-1: root_logits.float().log_softmax(-1)}  # parent candidate -> (V,) log q after it

    def scored(frontier: list[int], so_far: GrownSoFar) -> torch.Tensor:
        logp = expand(frontier, so_far).float().log_softmax(-1)  # (m, V)
        rows.update(zip(frontier, logp))
        return logp

    grown = grow_dynamic_tree(rows[-1], scored, replace(dynamic, depth=min(depth, dynamic.depth)))
    tokens = torch.tensor([grown.tokens[c] for c in grown.kept], dtype=torch.long, device=root_logits.device)  # (n,)
    soft_q = torch.stack([rows[grown.parents[c]].exp() for c in grown.kept])  # (n, V) the draft's q at each parent
    return Proposal(tokens, one_hot(tokens, vocab_size), grown.node_parents, grown=grown, soft_q=soft_q)
